#!/usr/bin/env bash
# The Rust crate's CI step, offline: builds and tests bindings/rust (build.rs compiles
# libncclshim from the crate's csrc/; the meson build tree gives the fake NCCLs and drivers the
# tests load), with rustfmt --check before and clippy after where they are installed; runs the
# drop-order test under valgrind where it is installed; then packages the crate (cargo
# package), unpacks it in an empty directory and builds and tests it there with nothing but
# cargo and the C compiler. Prints cargo's own result lines and, last, "N passed, N failed".
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

# The fakes the tests load.
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
# Buffers, guards, streams and events dropped in several orders: no leak, no use after free.
if command -v valgrind >/dev/null; then
  typed=$(cargo test --offline --test typed --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)
  if [ -x "$typed" ] && valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
    "$typed" drop_orders --test-threads=1 >"$log.valgrind" 2>&1; then
    echo "rust: valgrind: drop_orders clean"
  else
    cat "$log.valgrind"
    echo "rust: valgrind found errors in drop_orders (or the test binary was not found)"
    status=1
  fi
  rm -f "$log.valgrind"
else
  echo "rust: valgrind is not installed: drop orders not checked for leaks"
fi

# The packaged crate, alone: built and tested in an empty directory, offline.
package=$(mktemp -d /tmp/ncclshim-rust-package-XXXXXX)
if cargo package --offline --allow-dirty --no-verify >"$package/package.log" 2>&1; then
  name=ncclshim-$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
  tar xzf "$CARGO_TARGET_DIR/package/$name.crate" -C "$package" &&
    (cd "$package/$name" && env -u NCCLSHIM_LIB_DIR -u NCCLSHIM_INCLUDE_DIR CARGO_TARGET_DIR="$package/target" \
      cargo test --offline -- --test-threads=1) 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "rust: the packaged crate failed to build or test"; status=1; }
else
  cat "$package/package.log"
  echo "rust: cargo package failed"
  status=1
fi
rm -rf "$package"

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
