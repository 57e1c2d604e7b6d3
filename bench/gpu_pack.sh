#!/usr/bin/env bash
# gpu_pack.sh [DIR]: builds gsched with CUDA on this machine (nvcc compiles without a GPU) and
# packs what bench/gpu_check.sh runs into DIR (default .gpu, which git ignores), for a GPU
# machine that has CUDA but not the build's Debian packages (the lent test machine): the
# programs, the test binaries and the non-CUDA shared libraries they load. CUDA's own
# libraries (cuBLASLt, NCCL, cuDNN's engines) are too big to carry and come from the GPU
# machine; cuDNN's small front library goes to DIR/lib-fallback, which gpu_check.sh puts last
# on the library path, so the machine's own cuDNN wins and its absence is a refusal at run
# time, not a program that does not start. There:
#
#     LD_LIBRARY_PATH=DIR/lib:$(bench/gpu_libpath.sh) bench/gpu_check.sh DIR/build
#
# Built for sm_90 (H100/H200) only, without MPI (one rank), to stay small.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/.gpu}
ARCH=${GPU_PACK_ARCH:-90}
B=$ROOT/build-gpupack

cmake -S "$ROOT" -B "$B" -DGSCHED_CUDA=ON -DGSCHED_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$B" -j"$(nproc)" --target gsched gsched-train kern_attention_gpu nvml_probe \
  test_gpu_kernels test_gpu_gemm test_cudnn_graph test_adamw test_trn_model test_trn_comm_gpu \
  > /dev/null

rm -rf "$DIR"
mkdir -p "$DIR/build/bin" "$DIR/build/tests" "$DIR/lib" "$DIR/lib-fallback" "$DIR/fixtures"
cp "$B/bin/gsched" "$B/bin/gsched-train" "$B/bin/kern_attention_gpu" "$B/bin/nvml_probe" \
  "$DIR/build/bin/"
for t in test_gpu_kernels test_gpu_gemm test_cudnn_graph test_adamw test_trn_model \
  test_trn_comm_gpu; do
  [ -x "$B/tests/$t" ] && cp "$B/tests/$t" "$DIR/build/tests/"
done
cp "$ROOT"/tests/reference/fixtures/* "$DIR/fixtures/"
# Every shared library but glibc's own, the compiler runtime (any newer system has newer
# ones, which must not be shadowed) and CUDA's big ones, which the GPU machine has.
ldd "$DIR"/build/bin/* "$DIR"/build/tests/* | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libnccl|libcuda|libcudnn)\.so' |
  while read -r lib; do cp -L "$lib" "$DIR/lib/"; done
ldd "$DIR"/build/bin/gsched-train | awk '/libcudnn\.so/ {print $3}' |
  while read -r lib; do cp -L "$lib" "$DIR/lib-fallback/"; done
strip --strip-debug "$DIR"/build/bin/* "$DIR"/build/tests/* "$DIR"/lib/* 2> /dev/null || true
du -sh "$DIR"
