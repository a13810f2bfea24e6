#!/bin/sh
# exe_wrapper of the 'asan' and 'tsan' test setups (tests/hardening/meson.build):
#   sanitizer_wrap.sh PLAIN_AUDIT COMMAND [ARGS...]
# The tests start helper programs under `ld.so --audit libhide-system.so`. In a sanitizer
# build that audit module is instrumented too, and ld.so loads it, with its own copy of the
# sanitizer runtime, into a namespace of its own before the program: ASan then stops ("ASan
# runtime does not come first", or shadow memory already mapped). This swaps in the same
# module built without sanitizer flags, in HIDE_AUDIT and in the arguments (the probe test
# gets it as one), and runs the test.
plain=$1
shift
if [ -n "${HIDE_AUDIT:-}" ]; then
  HIDE_AUDIT=$plain
  export HIDE_AUDIT
fi
for arg; do
  shift
  case $arg in
  */libhide-system.so) arg=$plain ;;
  esac
  set -- "$@" "$arg"
done
exec "$@"
