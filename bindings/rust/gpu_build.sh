#!/usr/bin/env bash
# Builds the crate's GPU programs on a CPU machine for a GPU host without Rust: the examples
# engine_job, engine_cost and allreduce, release, with libncclshim compiled from the crate's
# sources and linked statically (they need only libc and, at run time, the NCCL and CUDA
# driver they find). Copies them into bindings/rust/gpu-bin/ (ignored by git), the folder to
# carry; prints its contents.
#   bindings/rust/gpu_build.sh
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_NET_OFFLINE=true
target=${CARGO_TARGET_DIR:-target}
env -u NCCLSHIM_LIB_DIR cargo build --offline --release --example engine_job --example engine_cost --example allreduce
mkdir -p gpu-bin
for program in engine_job engine_cost allreduce; do
  cp "$target/release/examples/$program" gpu-bin/
done
ls -l gpu-bin
