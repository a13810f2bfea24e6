#!/usr/bin/env bash
# The example under a real launcher, which starts both ranks and sets its own variables
# (torchrun: RANK/WORLD_SIZE/LOCAL_RANK; Open MPI: OMPI_COMM_WORLD_*; MPICH: PMI_*):
#   launchers.sh EXAMPLE torchrun|mpirun
# The ranks meet at NCCL_COMM_ID=127.0.0.1:<free port>. Exit 0 when both ranks passed and
# said which launcher started them, 77 (skipped) without the launcher or 2 GPUs, 1 otherwise.
# TORCHRUN_PYTHON: the Python with PyTorch (default /opt/torch/.venv/bin/python3).
set -uo pipefail
example=$1 launcher=$2
export NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 2 ] || { echo "skip: $gpus GPU(s) visible, 2 needed"; exit 77; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)))
export NCCL_COMM_ID=127.0.0.1:$port
args=(--count 262144 --iters 5 --timeout-ms 30000)
case $launcher in
torchrun)
  py=${TORCHRUN_PYTHON:-/opt/torch/.venv/bin/python3}
  "$py" -c 'import torch.distributed.run' 2>/dev/null || { echo "skip: no torch.distributed.run in $py"; exit 77; }
  cmd=("$py" -m torch.distributed.run --standalone --nproc-per-node 2 --no-python "$example" "${args[@]}")
  said="started by torchrun or RANK/WORLD_SIZE"
  ;;
mpirun)
  command -v mpirun >/dev/null || { echo "skip: no mpirun on PATH"; exit 77; }
  if mpirun --version 2>&1 | grep -qiE 'open mpi|open-mpi|openrte'; then
    # Open MPI refuses root unless told; -x forwards the variables the ranks need.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    forward=()
    for v in $(compgen -e | grep -E '^(NCCL_|NCCLSHIM_|LD_LIBRARY_PATH$)'); do forward+=(-x "$v"); done
    root=()
    [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    cmd=(mpirun "${root[@]}" -np 2 "${forward[@]}" "$example" "${args[@]}")
    said="started by mpirun (Open MPI)"
  else
    cmd=(mpirun -np 2 "$example" "${args[@]}")
    said="started by mpirun (MPICH, Hydra)"
  fi
  ;;
*)
  echo "usage: $0 EXAMPLE torchrun|mpirun" >&2
  exit 1
  ;;
esac
echo "+ NCCL_COMM_ID=$NCCL_COMM_ID ${cmd[*]}"
log=$(mktemp)
timeout 150 "${cmd[@]}" >"$log" 2>&1
rc=$?
cat "$log"
ok=1
for rank in "rank 0/2 (GPU 0)" "rank 1/2 (GPU 1)" "$said"; do
  grep -qF "$rank" "$log" || { echo "FAIL: the output lacks \"$rank\""; ok=0; }
done
rm -f "$log"
[ $rc -eq 0 ] || { echo "FAIL: $launcher exited with $rc"; ok=0; }
[ $ok = 1 ] && echo "PASS: the example under $launcher" && exit 0
exit 1
