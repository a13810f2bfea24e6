#!/usr/bin/env bash
# Builds the Python wheel ncclshim-<version>-cp38-abi3-manylinux_2_17_<arch>.manylinux2014_<arch>.whl
# (docs/doctor.md, "The Python package"):
#
#   cross/wheel.sh x86_64|aarch64 OUTDIR
#
# The binaries are the release archive's (cross/release.sh: stripped, glibc 2.17 baseline,
# reproducible from SOURCE_DATE_EPOCH, default the last commit's time); the glibc policy
# check runs again on the two that go into the wheel, libncclshim and ncclshim-probe, and on
# the extension module build_wheel.py compiles (${tool_prefix}gcc, python3's headers: the
# stable ABI's declarations are the same on both 64-bit targets). The wheel is written by
# bindings/python/build_wheel.py with python3's standard library alone: sorted entries,
# every timestamp SOURCE_DATE_EPOCH, fixed modes. Same sources and epoch, same bytes.
# Progress goes to stderr, the wheel's path to stdout.
set -euo pipefail

arch=${1:-}
outarg=${2:-}
case "$arch" in
  x86_64) tool_prefix="" ;;
  aarch64) tool_prefix=aarch64-linux-gnu- ;;
  *) echo "usage: cross/wheel.sh x86_64|aarch64 OUTDIR" >&2; exit 2 ;;
esac
[ -n "$outarg" ] || { echo "usage: cross/wheel.sh x86_64|aarch64 OUTDIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "$outarg" && cd "$outarg" && pwd)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null) || {
    echo "wheel.sh: set SOURCE_DATE_EPOCH (no git history to take it from)" >&2; exit 2; }
fi
export SOURCE_DATE_EPOCH LC_ALL=C TZ=UTC
umask 022

version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" "$src/meson.build" | head -1)
work=$(mktemp -d "/tmp/ncclshim-wheel-$arch-XXXXXX")
trap 'rm -rf "$work"' EXIT

archive=$("$src/cross/release.sh" "$arch" "$work/release")
tar -C "$work" -xzf "$archive"
tree=$work/ncclshim-$version-linux-$arch
lib=$tree/lib/libncclshim.so.$version probe=$tree/bin/ncclshim-probe
READELF=${tool_prefix}readelf python3 "$src/abi/check_glibc_policy.py" --bind-now "$lib" >&2
READELF=${tool_prefix}readelf python3 "$src/abi/check_glibc_policy.py" "$probe" >&2
wheel=$(READELF=${tool_prefix}readelf python3 "$src/bindings/python/build_wheel.py" \
  --arch "$arch" --cc "${tool_prefix}gcc" --library "$lib" --probe "$probe" \
  --version "$version" "$out")
python3 -c 'import sys, zipfile
sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("ncclshim/_fast.abi3.so"))' \
  "$wheel" >"$work/_fast.abi3.so"
READELF=${tool_prefix}readelf python3 "$src/abi/check_glibc_policy.py" --bind-now \
  "$work/_fast.abi3.so" >&2
echo "$wheel"
