#!/usr/bin/env bash
# Checks a release archive from cross/release.sh where it is unpacked (docs/release.md):
#
#   cross/release-check.sh ARCHIVE [TEST_BUILD]
#
# Unpacks ARCHIVE in a temporary folder, then: SHA256SUMS; the glibc policy of the shipped
# binaries; the consumers of tests/packaging built against the unpacked tree through
# pkg-config and through CMake's find_package (cross-compiled for aarch64), each run on a fake
# NCCL built here (the API consumer and the drop-in program); the unpacked probe, text and
# JSON. aarch64 programs run under qemu-user. With TEST_BUILD (an x86-64 meson build directory
# of these sources, tests built), its nccl, cuda, comm and probe suites run with the unpacked
# library first on LD_LIBRARY_PATH. Prints one line per step; exit status 1 if any failed.
set -uo pipefail

archive=$(realpath "${1:?usage: cross/release-check.sh ARCHIVE [TEST_BUILD]}")
test_build=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
case "$(basename "$archive")" in
  *-linux-x86_64.tar.gz) arch=x86_64 cc=${CC:-cc} run=() tool_prefix="" ;;
  *-linux-aarch64.tar.gz) arch=aarch64 cc=aarch64-linux-gnu-gcc run=(qemu-aarch64)
    tool_prefix=aarch64-linux-gnu- ;;
  *) echo "release-check.sh: $archive is not ncclshim-<version>-linux-<arch>.tar.gz" >&2; exit 2 ;;
esac
work=$(mktemp -d "/tmp/ncclshim-release-check-XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log
failed=0

# step NAME COMMAND...: runs it with its output in the log; prints ok and the output's last
# line, or FAIL and all of it.
step() {
  local name=$1
  shift
  if "$@" >"$log" 2>&1; then echo "ok   $arch $name: $(tail -1 "$log")"; else
    echo "FAIL $arch $name"
    sed 's/^/     /' "$log"
    failed=1
  fi
}

tar -C "$work" -xzf "$archive" || exit 1
tree=$(echo "$work"/ncclshim-*)
version=$(basename "$tree" | sed 's/^ncclshim-\(.*\)-linux-.*/\1/')
export NCCLSHIM_NCCL_LIBRARY=$work/fake/libnccl.so.2
mkdir -p "$work/fake"

step "SHA256SUMS" sh -c "cd '$tree' && sha256sum --check --quiet SHA256SUMS"
step "glibc policy" env READELF="${tool_prefix}readelf" python3 "$src/abi/check_glibc_policy.py" \
  "$tree/lib/libncclshim.so.$version" "$tree/lib/libncclshim-nccl.so.$version" \
  "$tree/bin/ncclshim-probe"
step "fake NCCL 2.28.9" "$cc" -shared -fPIC -I "$src/include" -DFAKE_VERSION_CODE=22809 \
  -DFAKE_VERSION_MODE=0 -Wl,-soname,libnccl.so.2 -o "$NCCLSHIM_NCCL_LIBRARY" \
  "$src/tests/fakes/fake_nccl.c"

# consumers DIR: runs DIR's consumer and dropin_consumer; the consumer must report the
# unpacked library.
consumers() {
  local out
  out=$("${run[@]}" "$1/consumer" 22809) || return 1
  echo "$out"
  case "$out" in "ncclshim $version at $tree/lib/"*) ;; *) echo "not the unpacked library"; return 1 ;; esac
  "${run[@]}" "$1/dropin_consumer" 22809
}

pkg_config_consumers() {
  local dir=$work/pkg-config flags
  export PKG_CONFIG_LIBDIR=$tree/lib/pkgconfig PKG_CONFIG_PATH=""
  mkdir -p "$dir"
  flags=$(pkg-config --cflags --libs ncclshim) || return 1
  echo "pkg-config ncclshim: $flags"
  local word
  for word in $flags; do
    case "$word" in
      -I*) [ "$(realpath "${word#-I}")" = "$tree/include" ] || { echo "not the tree: $word"; return 1; } ;;
      -L*) [ "$(realpath "${word#-L}")" = "$tree/lib" ] || { echo "not the tree: $word"; return 1; } ;;
    esac
  done
  # shellcheck disable=SC2086,SC2046 # pkg-config's flags are words
  "$cc" -std=c11 -Wall -Wextra -Werror -o "$dir/consumer" \
    "$src/tests/packaging/meson-consumer/consumer.c" $flags -ldl "-Wl,-rpath,$tree/lib" &&
    "$cc" -std=c11 -Wall -Wextra -Werror -o "$dir/dropin_consumer" \
      "$src/tests/packaging/meson-consumer/dropin_consumer.c" \
      $(pkg-config --cflags --libs ncclshim-nccl) "-Wl,-rpath,$tree/lib" &&
    consumers "$dir"
}

cmake_consumers() {
  local dir=$work/cmake cross=()
  [ "$arch" = aarch64 ] && cross=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64)
  cmake -S "$src/tests/packaging/cmake-consumer" -B "$dir" -DCMAKE_C_COMPILER="$cc" \
    "${cross[@]}" -DCMAKE_PREFIX_PATH="$tree" -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF &&
    grep -qx "ncclshim_DIR:PATH=$tree/lib/cmake/ncclshim" "$dir/CMakeCache.txt" &&
    cmake --build "$dir" && consumers "$dir"
}

probe() {
  local out
  "${run[@]}" "$tree/bin/ncclshim-probe" --no-devices -v &&
    out=$("${run[@]}" "$tree/bin/ncclshim-probe" --json --no-devices) && python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
assert doc["nccl"]["version"] == "2.28.9", doc["nccl"]
assert doc["ncclshim"]["version"] == sys.argv[2], doc["ncclshim"]
print("probe JSON: ncclshim %s, NCCL %s" % (sys.argv[2], doc["nccl"]["version"]))' "$out" "$version"
}

step "pkg-config consumers" pkg_config_consumers
if command -v cmake >/dev/null; then step "CMake consumers" cmake_consumers; else
  echo "skip $arch CMake consumers: cmake is not installed"; fi
step "probe (text, JSON)" probe
# The test programs with the unpacked library: LD_LIBRARY_PATH comes before their RUNPATH into
# the build tree, and LIBNCCLSHIM is the path for those that dlopen it themselves
# (tests/dropin/last_error_cycles.c); ld.so's own log (LD_DEBUG_OUTPUT, one file a process)
# shows which one loaded.
test_suites() {
  local ld=$work/ld-debug/ld
  mkdir -p "$work/ld-debug"
  meson test -C "$test_build" --no-rebuild --suite nccl --suite cuda --suite comm \
    --suite probe --print-errorlogs \
    --wrapper "env LD_LIBRARY_PATH=$tree/lib LIBNCCLSHIM=$tree/lib/libncclshim.so.0 \
LD_DEBUG=libs LD_DEBUG_OUTPUT=$ld" | tail -8 ||
    return 1
  local unpacked other
  unpacked=$(grep -l "calling init: $tree/lib/libncclshim.so.0" "$ld".* | wc -l)
  other=$(grep -h "calling init: .*/libncclshim.so.0" "$ld".* | grep -vc "$tree/lib/")
  echo "processes that loaded the unpacked libncclshim: $unpacked; another one: $other"
  [ "$unpacked" -gt 0 ] && [ "$other" -eq 0 ]
}
if [ -n "$test_build" ] && [ "$arch" = x86_64 ]; then
  step "test suites on the unpacked library" test_suites
fi
exit $failed
