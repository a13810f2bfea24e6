# shellcheck shell=bash
# Sourced by the parts that build a CUDA program against ncclshim (graphs.sh, recordcost.sh):
#   build_cuda_bench SOURCE BINARY LOG
# builds (or reuses) build-gpu/, then compiles SOURCE with nvcc for sm_90 against its
# libncclshim.so (rpath set) into BINARY; on failure prints the log's tail and returns 1.
build_cuda_bench() {
  local source=$1 binary=$2 log=$3
  { [ -f build-gpu/build.ninja ] || meson setup build-gpu; } >"$log" 2>&1
  if ! ninja -C build-gpu >>"$log" 2>&1 ||
    ! /usr/local/cuda/bin/nvcc -arch=sm_90 -O2 -Iinclude "$source" -Lbuild-gpu/src -lncclshim \
      -Xlinker -rpath,"$PWD/build-gpu/src" -o "$binary" >>"$log" 2>&1; then
    tail -30 "$log"
    return 1
  fi
}
