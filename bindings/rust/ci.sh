#!/usr/bin/env bash
# The Rust crate's CI step: builds and tests bindings/rust against a meson build tree of
# ncclshim (its libncclshim and its fake NCCLs and drivers), offline, with rustfmt --check
# before and clippy after where they are installed. Prints cargo's own result lines and, last, "N passed, N failed".
#   bindings/rust/ci.sh BUILD_DIR
# Exit status: 0 all passed; 1 a build, test or clippy failure; 77 no cargo (skipped).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: bindings/rust/ci.sh BUILD_DIR" >&2; exit 2; }
build=$(realpath "$1") || exit 2
cd "$(dirname "$0")" || exit 2
if ! command -v cargo >/dev/null; then
  echo "rust: cargo is not installed: skipped"
  exit 77
fi
export NCCLSHIM_BUILD_DIR=$build CARGO_NET_OFFLINE=true CARGO_TARGET_DIR=$build/rust-target
log=$(mktemp /tmp/ncclshim-rust-XXXXXX.log)
status=0

# The library and the fakes the tests load.
meson compile -C "$build" >/dev/null || { echo "rust: meson compile -C $build failed"; exit 1; }

if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --check || { echo "rust: rustfmt would change the files above (run cargo fmt)"; status=1; }
else
  echo "rust: rustfmt is not installed: not run"
fi
cargo build --offline --all-targets || status=1
# One test at a time inside each binary too: the fakes' switches are process-wide (the tests
# also take a lock, so a plain `cargo test` is safe; this keeps the output in order).
cargo test --offline -- --test-threads=1 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --offline --all-targets -- -D warnings || { echo "rust: clippy found problems"; status=1; }
else
  echo "rust: clippy is not installed: not run"
fi

passed=$(awk '/^test result:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^passed;/) s += $i} END {print s + 0}' "$log")
failed=$(awk '/^test result:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^failed;/) s += $i} END {print s + 0}' "$log")
[ "$failed" -eq 0 ] || status=1
rm -f "$log"
echo "$passed passed, $failed failed"
exit $status
