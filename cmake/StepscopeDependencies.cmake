# Third-party dependencies, all from the system (scripts/install-deps.sh installs them on
# Debian). Nothing is downloaded at configure or build time.
include_guard(GLOBAL)

find_package(ZLIB REQUIRED)
find_package(Protobuf REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
# OpenBLAS for every CPU GEMM of the kernels (libopenblas-dev).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
# simdjson for the streaming Chrome/Kineto JSON import (libsimdjson-dev).
find_package(simdjson REQUIRED)
# zstd for the compressed node store of step stats traces (libzstd-dev).
find_package(zstd REQUIRED)
# OpenMPI for multi-process training (libopenmpi-dev); optional so a headless build still works.
find_package(MPI COMPONENTS CXX QUIET)
# NCCL for the `nccl` all-reduce of GPU towers (cmake/FindNCCL.cmake: NCCL::nccl); GPU builds
# only, optional: without it the nccl algorithm is unavailable.
if(STEPSCOPE_WITH_CUDA)
  find_package(NCCL QUIET)
  if(NCCL_FOUND)
    message(STATUS "stepscope: NCCL ${NCCL_VERSION} found (${NCCL_LIBRARY})")
  else()
    message(STATUS "stepscope: NCCL not found; the nccl all-reduce algorithm is unavailable")
  endif()
endif()

if(STEPSCOPE_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()

if(STEPSCOPE_VIEWER)
  find_package(Qt6 COMPONENTS Widgets Concurrent Test QUIET)
  if(NOT Qt6_FOUND)
    message(STATUS "stepscope: Qt6 Widgets not found; the viewer is off "
                   "(install qt6-base-dev or configure with -DSTEPSCOPE_VIEWER=OFF)")
    set(STEPSCOPE_VIEWER OFF CACHE BOOL "" FORCE)
    set(STEPSCOPE_VIEWER_OFF_REASON "no Qt6 Widgets: qt6-base-dev" CACHE INTERNAL "")
  else()
    unset(STEPSCOPE_VIEWER_OFF_REASON CACHE)
  endif()
endif()
