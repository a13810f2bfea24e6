#!/usr/bin/env bash
# ncclshim's Python communicator on the GPU host, a part of tests/gpu/run.sh
# (PARTS=python), from the repository root:
#   bash tests/gpu/python/python.sh
# Runs tests/gpu/python/python_gpu.py in the torch venv (TORCH_PYTHON, /opt/torch/.venv/bin/python)
# with the package of the wheel carried in build-wheel/, installed offline by the venv's pip
# into a folder of its own (pip install --no-index --target: pip checks the wheel's tags
# against this interpreter; the venv is left as it is; unpacked where the venv has no pip)
# when that wheel has the communicator
# layer, or else the source tree's package over build-gpu/ (its libncclshim, its generated
# _functions.py and its extension module). ncclshim loads the NCCL torch has mapped (the
# venv's pip NCCL).
# Writes ${OUT:-/tmp/out}/python/: summary.csv (case,verdict,detail), percall.csv, lean.csv,
# graph.csv, call-path-variants.csv (bench/gpu/callpath/variants.py), run.log. Exit 0 when
# every case is ok.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" python
work=$(mktemp -d /tmp/ncclshim-python-XXXXXX)
trap 'rm -rf "$work"' EXIT

wheels=(build-wheel/*.whl)
wheel=${wheels[0]}
# A wheel made before the communicator layer has no generated module: the source tree then.
if [ -f "$wheel" ] && "$python" -c 'import sys, zipfile
sys.exit("ncclshim/_functions.py" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$wheel"; then
  if "$python" -m pip --version >/dev/null 2>&1; then
    "$python" -m pip install --no-index --no-deps --disable-pip-version-check -q \
      --target "$work/pkg" "$wheel" || exit 1
    how="pip install --no-index --target"
  else  # a venv made without pip: the wheel unpacked as pip would lay it out
    "$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
      "$wheel" "$work/pkg" || exit 1
    chmod -R u+x "$work/pkg/ncclshim/bin" "$work/pkg/ncclshim/_fast.abi3.so"
    how="unpacked: this venv has no pip"
  fi
  export PYTHONPATH=$work/pkg:$PWD/tests/gpu/python
  echo "package: $(basename "$wheel") ($how)"
else
  [ -f "$build/bindings/python/_functions.py" ] || ninja -C "$build" >/dev/null || exit 1
  export PYTHONPATH=$PWD/bindings/python:$PWD/tests/gpu/python
  export NCCLSHIM_PYTHON_LIBRARY=$PWD/$build/src/libncclshim.so.0
  export NCCLSHIM_PYTHON_PROBE=$PWD/$build/src/probe/ncclshim-probe
  export NCCLSHIM_PYTHON_FUNCTIONS=$PWD/$build/bindings/python/_functions.py
  if [ -f "$build/bindings/python/_fast.abi3.so" ]; then
    export NCCLSHIM_PYTHON_FAST=$PWD/$build/bindings/python/_fast.abi3.so
  fi
  echo "package: source tree over $build/"
fi
unset NCCLSHIM_NCCL_LIBRARY
timeout "${PY_TIMEOUT_S:-110}" "$python" tests/gpu/python/python_gpu.py "$out" 2>&1 | tee "$out/run.log"
rc=${PIPESTATUS[0]}
"$python" -X importtime -c 'import ncclshim' 2>"$out/importtime.txt" >/dev/null
# Diagnostics (not a verdict): the Python call path's pieces against a no-op C function.
if gcc -O2 -shared -fPIC -o "$work/libnoop7.so" bench/gpu/callpath/noop7.c; then
  timeout 60 "$python" bench/gpu/callpath/variants.py "$work/libnoop7.so" 60 \
    >"$out/call-path-variants.csv" || echo "call-path variants: exit $?"
fi
grep -E 'ncclshim|ctypes$' "$out/importtime.txt" | tail -8
echo "python: exit $rc; $(grep -c ',ok,' "$out/summary.csv" 2>/dev/null || echo 0) ok," \
  "$(grep -c ',FAIL' "$out/summary.csv" 2>/dev/null || echo 0) failed"
exit "$rc"
