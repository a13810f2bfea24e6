#!/usr/bin/env bash
# The doctor on the GPU host against what the dynamic loader really maps,
# from the repository root:
#   bash tests/gpu/probe/doctor.sh WHEEL
# WHEEL is the x86-64 wheel built on the build machine and carried here (tests/gpu/run.sh passes
# build-wheel/*.whl); nothing of ncclshim is built here. Steps:
#   install  pip install --no-index the wheel into the torch venv (uninstalled at the end)
#   loaded   ncclshim.loaded() names nothing before `import torch`, the wheel's 2.28.9 after
#   cases    for each environment below, `python -m ncclshim --doctor --json` and the probe
#            (`python -m ncclshim --json`) run under it, beside two plain programs compiled
#            here with gcc: plain-linked (DT_NEEDED libnccl.so.2, what the loader maps at
#            start-up, read from its /proc/self/maps) and plain-dlopen (dlopen of the SONAME).
#            Verdict ok when the doctor's "plain_process" is the file plain-linked maps, and
#            the doctor's "ncclshim" is the file the probe's search took.
#              venv           the torch venv's python, VIRTUAL_ENV unset
#              venv-active    the same, activated (VIRTUAL_ENV, PATH)
#              conda          a conda-style prefix made here: lib/libnccl.so.2 and
#                             lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2, both
#                             copies of the pip wheel's file; CONDA_PREFIX set
#              conda-ldpath   the same with LD_LIBRARY_PATH=<prefix>/lib
#              relative-path  LD_LIBRARY_PATH=lib (relative), run from the prefix
#              preload        LD_PRELOAD=<the pip wheel's NCCL>
#   torch    after `import torch` in the venv, the file torch mapped equals the doctor's
#            python_envs[venv].loads
#   explain  `--explain 'undefined symbol: ncclCommSuspend'`: explained (exit 0)
# Writes ${OUT:-/tmp/out}/doctor/summary.csv (case,verdict,doctor_plain,loader_maps,
# dlopen_maps,doctor_ncclshim,probe_takes,plain_source: how the doctor knows, "loader" when
# it asked the dynamic loader) and summary.txt; logs beside them. Under 90 s.
# Exit status 1 if a check failed.
wheel=$(realpath "${1:?usage: bash tests/gpu/probe/doctor.sh WHEEL}")
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" doctor
venv=$(dirname "$(dirname "$python")")
sys_nccl=$(realpath "$sys_nccl")
pip_nccl=$(realpath "$pip_nccl")
work=$(mktemp -d /tmp/ncclshim-doctor-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
summary=()
note() { summary+=("$(printf '%-14s %s' "$1" "$2")"); echo "=== $1: $2"; }
csv=$out/summary.csv
echo "case,verdict,doctor_plain,loader_maps,dlopen_maps,doctor_ncclshim,probe_takes,plain_source" >"$csv"
unset VIRTUAL_ENV CONDA_PREFIX LD_LIBRARY_PATH LD_PRELOAD

if timeout 40 "$python" -m pip install --no-index --no-deps --force-reinstall \
  --disable-pip-version-check "$wheel" >"$out/install.log" 2>&1; then
  note install "ok ($(basename "$wheel"))"
else
  tail -20 "$out/install.log"; note install FAILED; echo "install,FAIL: pip install,,,,,," >>"$csv"
  exit 1
fi

# Two plain programs: one linked to the SONAME (link-time stand-in: a libnccl.so link to the
# system's file), one that dlopens it. Each prints the libnccl file it maps.
cat >"$work/maps.c" <<'C'
#include <stdio.h>
#include <string.h>
void print_nccl_mapping(void) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096];
  while (maps && fgets(line, sizeof(line), maps)) {
    char *path = strchr(line, '/');
    if (path && strstr(path, "libnccl") && !strstr(path, "libnccl-")) {
      fputs(path, stdout);
      break;
    }
  }
  if (maps) fclose(maps);
}
C
cat >"$work/plain-linked.c" <<'C'
void print_nccl_mapping(void);
int ncclGetVersion(int *version);
int main(void) { int v = 0; ncclGetVersion(&v); print_nccl_mapping(); return 0; }
C
cat >"$work/plain-dlopen.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
void print_nccl_mapping(void);
int main(void) {
  if (!dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) { printf("(fails: %s)\n", dlerror()); return 0; }
  print_nccl_mapping();
  return 0;
}
C
mkdir -p "$work/link"
ln -s "$sys_nccl" "$work/link/libnccl.so"
if ! { gcc -O1 -o "$work/plain-linked" "$work/plain-linked.c" "$work/maps.c" -L"$work/link" -lnccl &&
  gcc -O1 -o "$work/plain-dlopen" "$work/plain-dlopen.c" "$work/maps.c" -ldl; } >"$out/gcc.log" 2>&1; then
  cat "$out/gcc.log"; note programs "FAILED to compile"; exit 1
fi
readelf -d "$work/plain-linked" | grep NEEDED >"$out/plain-linked.needed"

# A conda-style prefix: conda's own lib and a pip wheel inside it, copies of the pip file.
conda=$work/conda
pyver=$("$python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
mkdir -p "$conda/lib/$pyver/site-packages/nvidia/nccl/lib" "$conda/bin" "$conda/conda-meta"
cp "$pip_nccl" "$conda/lib/libnccl.so.2"
cp "$pip_nccl" "$conda/lib/$pyver/site-packages/nvidia/nccl/lib/libnccl.so.2"
ln -s "$(realpath "$python")" "$conda/bin/$pyver"

# One case: run_case NAME DIR VAR=VALUE...: the doctor, the probe and both programs under the
# same environment, from DIR.
run_case() {
  local name=$1 dir=$2
  shift 2
  local log=$out/case-$name
  (cd "$dir" && timeout 20 env "$@" "$python" -m ncclshim --doctor --json) >"$log.doctor.json" 2>"$log.doctor.err"
  (cd "$dir" && timeout 20 env "$@" "$python" -m ncclshim --json) >"$log.probe.json" 2>"$log.probe.err"
  (cd "$dir" && timeout 10 env "$@" "$work/plain-linked") >"$log.linked" 2>&1
  (cd "$dir" && timeout 10 env "$@" "$work/plain-dlopen") >"$log.dlopen" 2>&1
  local row
  row=$(timeout 10 "$python" - "$name" "$log" <<'PY'
import json, os, sys
name, log = sys.argv[1:3]
def first_line(path):
    try:
        with open(path) as f:
            line = f.readline().strip()
    except OSError:
        return ""
    return os.path.realpath(line) if line.startswith("/") else line
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
doctor, probe = load(log + ".doctor.json"), load(log + ".probe.json")
d = (doctor or {}).get("doctor", {})
plain = d.get("plain_process") or ""
ours = d.get("ncclshim") or ""
takes = ((probe or {}).get("nccl") or {}).get("path") or ""
linked, dl = first_line(log + ".linked"), first_line(log + ".dlopen")
why = []
if doctor is None:
    why.append("the doctor gave no JSON")
if os.path.realpath(plain) != linked if plain else linked.startswith("/"):
    why.append("the doctor says a plain process loads %r, the loader maps %r" % (plain, linked))
if dl.startswith("/") and linked.startswith("/") and dl != linked:
    why.append("a dlopen maps %r, a linked program %r" % (dl, linked))
if ours and takes and os.path.realpath(ours) != os.path.realpath(takes):
    why.append("the doctor says ncclshim takes %r, the probe took %r" % (ours, takes))
verdict = "ok" if not why else "FAIL: " + "; ".join(why)
source = d.get("plain_process_source") or ""
print(",".join([name, '"%s"' % verdict.replace('"', "'"), plain, linked, dl, ours, takes,
                '"%s"' % source]))
PY
)
  echo "$row" >>"$csv"
  case $row in "$name,\"ok\""*) note "$name" "ok (the loader maps $(head -c 200 "$log.linked"))" ;;
    *) note "$name" "FAILED: $row"; failed=1 ;; esac
}

run_case venv "$work" PATH=/usr/bin:/bin
run_case venv-active "$work" VIRTUAL_ENV="$venv" PATH="$venv/bin:/usr/bin:/bin"
run_case conda "$work" CONDA_PREFIX="$conda" PATH="$conda/bin:/usr/bin:/bin"
run_case conda-ldpath "$work" CONDA_PREFIX="$conda" PATH="$conda/bin:/usr/bin:/bin" \
  LD_LIBRARY_PATH="$conda/lib"
run_case relative-path "$conda" LD_LIBRARY_PATH=lib PATH=/usr/bin:/bin
run_case preload "$work" LD_PRELOAD="$pip_nccl" PATH=/usr/bin:/bin

# loaded and torch: what the venv's interpreter maps after import torch, against ncclshim's
# loaded() and the doctor's python_envs entry for the venv.
timeout 40 env PIP_NCCL="$pip_nccl" DOCTOR_JSON="$out/case-venv.doctor.json" "$python" - \
  >"$out/torch.log" 2>&1 <<'PY'
import json, os, sys
import ncclshim
before = ncclshim.loaded()
import torch
print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())
after = ncclshim.loaded()
with open("/proc/self/maps") as f:
    mapped = sorted({os.path.realpath(l.split(None, 5)[5].strip()) for l in f
                     if "/libnccl.so" in l})
print("before:", before, "after:", after, "maps:", mapped)
try:
    d = json.load(open(os.environ["DOCTOR_JSON"]))["doctor"]
except (OSError, ValueError, KeyError):
    d = {}
venv = os.path.realpath(sys.prefix)
envs = {os.path.realpath(e["prefix"]): e for e in d.get("python_envs", [])}
loads = envs.get(venv, {}).get("loads")
checks = {
    "loaded: nothing before import torch": not before,
    "loaded: the wheel's file after": [x.path for x in after] == mapped == [os.environ["PIP_NCCL"]],
    "torch maps what the doctor says the venv loads": loads is not None and mapped == [os.path.realpath(loads)],
}
for k, v in checks.items():
    print("%-50s %s" % (k, "PASS" if v else "FAIL"))
print("ROW", "ok" if all(checks.values()) else "FAIL: " + "; ".join(k for k, v in checks.items() if not v),
      loads, mapped[0] if mapped else "")
sys.exit(0 if all(checks.values()) else 1)
PY
rc=$?
row=$(grep '^ROW ' "$out/torch.log" | cut -d' ' -f2-)
verdict=${row% * *}
if [ $rc -eq 0 ]; then note torch "ok: torch maps the venv's wheel, as the doctor says"; else
  cat "$out/torch.log"; note torch FAILED; failed=1; verdict=${verdict:-FAIL: see torch.log}; fi
echo "torch,\"$verdict\",,,,,," >>"$csv"

timeout 20 "$python" -m ncclshim --explain 'undefined symbol: ncclCommSuspend' \
  >"$out/explain.txt" 2>&1
rc=$?
if [ $rc -eq 0 ]; then note explain ok; echo "explain,ok,,,,,," >>"$csv"; else
  cat "$out/explain.txt"; note explain "FAILED (exit $rc)"; failed=1
  echo "explain,FAIL: exit $rc,,,,,," >>"$csv"; fi

timeout 30 "$python" -m pip uninstall -y --disable-pip-version-check ncclshim \
  >>"$out/install.log" 2>&1
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit $failed
