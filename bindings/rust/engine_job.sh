#!/usr/bin/env bash
# The engine's job on one GPU (examples/engine_job.rs, then examples/engine_cost.rs for the
# crate / raw-table ratio per call), built elsewhere by bindings/rust/gpu_build.sh. Writes
# CSV (case,verdict,detail) and prints it. One rank; each program bounded to 5 minutes.
#   bindings/rust/engine_job.sh BIN_DIR CSV
# Exit status: 0 every case ok or skipped, 1 a case failed, 2 wrong usage.
set -u
if [ $# -ne 2 ] || [ ! -x "$1/engine_job" ] || [ ! -x "$1/engine_cost" ]; then
  echo "usage: bindings/rust/engine_job.sh BIN_DIR CSV (BIN_DIR from gpu_build.sh)" >&2
  exit 2
fi
bin=$1 csv=$2
mkdir -p "$(dirname "$csv")"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
status=0
timeout -k 5 300 "$bin/engine_job" --csv "$csv" || status=1
timeout -k 5 300 "$bin/engine_cost" --csv "$csv" || status=1
echo "== $csv"
cat "$csv"
exit $status
