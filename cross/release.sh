#!/usr/bin/env bash
# Builds the prebuilt release archive ncclshim-<version>-linux-<arch>.tar.gz (docs/release.md).
#
#   cross/release.sh x86_64|aarch64 [OUTDIR]      (OUTDIR: build-release/ by default)
#
# Run from anywhere on Debian 12 (aarch64: gcc-aarch64-linux-gnu and libc6-dev-arm64-cross).
# The archive holds lib/ (stripped; debug info in lib/debug/.build-id/xx/yyyy.debug, where gdb
# finds it with `set debug-file-directory <tree>/lib/debug`), include/, bin/ncclshim-probe,
# pkg-config and CMake files that work wherever the archive is unpacked, man pages when the
# build installs any, and SHA256SUMS of every file. Beside the archive: <archive>.sha256.
# Reproducible: the same sources and SOURCE_DATE_EPOCH (default: the last commit's time) give
# the same bytes, whatever the checkout's and the build's directories. Every binary passes
# abi/check_glibc_policy.py (baseline glibc 2.17) before it is packed. Progress goes to
# stderr, the archive's path to stdout.
set -euo pipefail

arch=${1:-}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${2:-$src/build-release}" && cd "${2:-$src/build-release}" && pwd)
case "$arch" in
  x86_64) cross_args=() tool_prefix="" ;;
  aarch64) cross_args=(--cross-file "$src/cross/aarch64-linux-gnu.ini")
    tool_prefix=aarch64-linux-gnu- ;;
  *) echo "usage: cross/release.sh x86_64|aarch64 [OUTDIR]" >&2; exit 2 ;;
esac
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null) || {
    echo "release.sh: set SOURCE_DATE_EPOCH (no git history to take it from)" >&2; exit 2; }
fi
export SOURCE_DATE_EPOCH
export LC_ALL=C TZ=UTC
umask 022

version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" "$src/meson.build" | head -1)
name=ncclshim-$version-linux-$arch
work=$(mktemp -d "/tmp/ncclshim-release-$arch-XXXXXX")
trap 'rm -rf "$work"' EXIT
build=$work/build stage=$work/stage tree=$work/stage/$name

# Paths in debug info and in __FILE__ name the release, not this machine's directories
# (meson names sources relative to the build directory, the forced include absolutely).
mkdir -p "$build"
map="-ffile-prefix-map=$src=$name-src -ffile-prefix-map=$build=$name-src/build"
map+=" -ffile-prefix-map=$(realpath --relative-to="$build" "$src")=$name-src"
meson setup "$build" "$src" "${cross_args[@]}" --buildtype=debugoptimized --prefix=/ \
  --libdir=lib --includedir=include --bindir=bin -Dtests=disabled \
  "-Dc_args=$map" "-Dc_link_args=-Wl,--build-id=sha1" >"$work/setup.log" ||
  { cat "$work/setup.log"; exit 1; }
meson compile -C "$build" ncclshim ncclshim-nccl ncclshim-probe >"$work/compile.log" ||
  { cat "$work/compile.log"; exit 1; }
meson install -C "$build" --no-rebuild --destdir "$tree" --quiet

# pkg-config files relative to their own place: <tree>/lib/pkgconfig/../.. is the tree.
for pc in "$tree"/lib/pkgconfig/*.pc; do
  # shellcheck disable=SC2016 # ${pcfiledir} is pkg-config's, written as is
  sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|' "$pc"
done

# Policy first, on the binaries as linked; then strip, keeping the debug info by build-id.
READELF=${tool_prefix}readelf python3 "$src/abi/check_glibc_policy.py" --bind-now >&2 \
  "$tree/lib/libncclshim.so.$version"
READELF=${tool_prefix}readelf python3 "$src/abi/check_glibc_policy.py" >&2 \
  "$tree/lib/libncclshim-nccl.so.$version" "$tree/bin/ncclshim-probe"
for elf in "$tree/lib/libncclshim.so.$version" "$tree/lib/libncclshim-nccl.so.$version" \
  "$tree/bin/ncclshim-probe"; do
  id=$(${tool_prefix}readelf -n "$elf" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
  [ -n "$id" ] || { echo "release.sh: $elf has no build-id" >&2; exit 1; }
  debug=$tree/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  mkdir -p "$(dirname "$debug")"
  ${tool_prefix}objcopy --only-keep-debug "$elf" "$debug"
  chmod 644 "$debug"
  ${tool_prefix}strip --strip-unneeded "$elf"
done

# shellcheck disable=SC2094 # find leaves SHA256SUMS out
(cd "$tree" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort |
  xargs sha256sum >SHA256SUMS)
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --format=gnu \
  --mtime="@$SOURCE_DATE_EPOCH" --mode='u+rwX,go+rX,go-w' -cf - "$name" |
  gzip -9 -n >"$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$out/$name.tar.gz"
