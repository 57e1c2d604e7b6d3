# GSCHED_CUDA: AUTO builds the CUDA/NCCL parts when nvcc is found, ON requires it, OFF skips it.
# The CPU path is always built; CUDA code lives only in kernels/ and the trainer's NCCL
# communicator (trainer/comm_nccl.c, built and linked to NCCL exactly when GSCHED_HAVE_NCCL),
# so everything else stays plain C. cuDNN (9.x, for its fused attention: kernels/
# attention_cudnn.cu) is linked exactly when GSCHED_HAVE_CUDNN: libcudnn and cudnn.h found
# beside CUDA.
set(GSCHED_HAVE_CUDA OFF)
set(GSCHED_HAVE_NCCL OFF)
set(GSCHED_HAVE_CUDNN OFF)
if(NOT GSCHED_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(GSCHED_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
    if(GSCHED_NVCC)
      set(CMAKE_CUDA_COMPILER ${GSCHED_NVCC})
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_80 (A100), sm_90 (H100/H200) as real code plus PTX for newer parts.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    # C++ for tests/kernels/test_tc_emu.cpp, which runs the .cu kernels' code on the CPU.
    enable_language(CXX)
    find_package(CUDAToolkit REQUIRED)
    set(GSCHED_HAVE_CUDA ON)
    find_library(GSCHED_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(GSCHED_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(GSCHED_NCCL_LIB AND GSCHED_NCCL_INCLUDE)
      set(GSCHED_HAVE_NCCL ON)
    endif()
    find_library(GSCHED_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(GSCHED_CUDNN_INCLUDE cudnn_graph.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(GSCHED_CUDNN_LIB AND GSCHED_CUDNN_INCLUDE)
      set(GSCHED_HAVE_CUDNN ON)
    endif()
  elseif(GSCHED_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GSCHED_CUDA=ON but nvcc was not found (set CUDA_HOME or CMAKE_CUDA_COMPILER)")
  endif()
endif()
