#!/usr/bin/env bash
# The doctor on the GPU host, inside the torch venv (issue 24), from the repository root:
#   bash bench/gpu/doctor.sh WHEEL
# WHEEL is the x86-64 wheel built by `cross/wheel.sh x86_64 OUTDIR` on the build machine and
# carried here (nothing is built on the GPU host). Steps:
#   install  pip install --no-index the wheel into the torch venv (uninstalled again at the end)
#   loaded   after `import torch` (and one all-reduce-free CUDA touch), ncclshim.loaded() names
#            the wheel's NCCL (2.28.9, under site-packages/nvidia/nccl/lib); before the import,
#            nothing
#   doctor   `python -m ncclshim --doctor --json` with VIRTUAL_ENV unset (a venv used without
#            activating it): the system NCCL (2.28.3) is what a plain process loads, the venv
#            loads its wheel, and a "will fight" warning names both
#   explain  `python -m ncclshim --explain 'undefined symbol: ncclCommSuspend'`: both lack it
# Logs in ${OUT:-/tmp/out}/doctor/; a summary at the end. Under 2 minutes (each step has a
# timeout). Exit status 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export NCCL_NVLS_ENABLE=0
wheel=${1:?usage: bash bench/gpu/doctor.sh WHEEL}
wheel=$(realpath "$wheel")
out=${OUT:-/tmp/out}/doctor
mkdir -p "$out"
python=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
sys_nccl=$(realpath "${SYS_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}")
pip_nccl=$(realpath "${PIP_NCCL:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}")
failed=0
summary=()
note() { summary+=("$(printf '%-10s %s' "$1" "$2")"); echo "=== $1: $2"; }
unset VIRTUAL_ENV CONDA_PREFIX

if timeout 60 "$python" -m pip install --no-index --no-deps --force-reinstall \
  --disable-pip-version-check "$wheel" >"$out/install.log" 2>&1; then
  note install "ok ($(basename "$wheel"))"
else
  tail -20 "$out/install.log"; note install FAILED; exit 1
fi

# loaded: the mapped NCCL, before and after import torch.
timeout 60 env SYS_NCCL="$sys_nccl" PIP_NCCL="$pip_nccl" "$python" - >"$out/loaded.log" 2>&1 <<'PY'
import os, sys, ncclshim
before = ncclshim.loaded()
print("before import torch:", before)
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())
after = ncclshim.loaded()
print("after import torch:", after)
ok = not before and [(x.path, x.version) for x in after] == [(os.environ["PIP_NCCL"], "2.28.9")]
print("loaded check:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
rc=$?
if [ $rc -eq 0 ]; then note loaded "ok: the wheel's 2.28.9 mapped after import torch"; else
  cat "$out/loaded.log"; note loaded FAILED; failed=1; fi

# doctor: the system NCCL as a second NCCL a plain process would load.
timeout 60 "$python" -m ncclshim --doctor >"$out/doctor.txt" 2>&1
timeout 60 "$python" -m ncclshim --doctor --json >"$out/doctor.json" 2>"$out/doctor.err"
echo "exit status $?" >>"$out/doctor.err"
timeout 30 env SYS_NCCL="$sys_nccl" PIP_NCCL="$pip_nccl" "$python" - "$out/doctor.json" \
  >"$out/doctor-check.log" 2>&1 <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))["doctor"]
sys_nccl, pip_nccl = os.environ["SYS_NCCL"], os.environ["PIP_NCCL"]
copies = {c["path"]: c for c in d["copies"]}
venv = os.path.realpath(sys.prefix)
envs = {e["prefix"]: e for e in d["python_envs"]}
checks = [
    ("system copy 2.28.3", copies.get(sys_nccl, {}).get("version") == "2.28.3"),
    ("wheel copy 2.28.9", copies.get(pip_nccl, {}).get("version") == "2.28.9"),
    ("plain process loads the system's", d["plain_process"] == sys_nccl),
    ("the venv loads its wheel", envs.get(venv, {}).get("loads") == pip_nccl),
    ("a will-fight warning names both", any(
        f["severity"] == "warning" and "will fight" in f["finding"] and sys_nccl in f["finding"]
        and pip_nccl in f["finding"] for f in d["findings"])),
]
for name, ok in checks:
    print("%-36s %s" % (name, "PASS" if ok else "FAIL"))
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
rc=$?
if [ $rc -eq 0 ]; then note doctor "ok: system 2.28.3 reported as the plain process's NCCL"; else
  cat "$out/doctor-check.log" "$out/doctor.txt"; note doctor FAILED; failed=1; fi

timeout 60 "$python" -m ncclshim --explain 'undefined symbol: ncclCommSuspend' \
  >"$out/explain.txt" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "lacks" "$out/explain.txt"; then note explain ok; else
  cat "$out/explain.txt"; note explain "FAILED (exit $rc)"; failed=1; fi

timeout 60 "$python" -m pip uninstall -y --disable-pip-version-check ncclshim \
  >>"$out/install.log" 2>&1
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit $failed
