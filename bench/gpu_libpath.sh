#!/bin/sh
# gpu_libpath.sh: prints a LD_LIBRARY_PATH value that reaches CUDA's libraries on a GPU
# machine: the toolkit's lib64 and the lib folders of the NVIDIA Python wheels (cuBLAS,
# NCCL, the CUDA runtime) where PyTorch brought them. For bench/gpu_pack.sh's packs.
p=/usr/local/cuda/lib64
for d in $(python3 -c 'import glob, site, os
for s in site.getsitepackages():
    for d in glob.glob(os.path.join(s, "nvidia", "*", "lib")): print(d)' 2> /dev/null); do
  p=$p:$d
done
echo "$p"
