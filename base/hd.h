// STEPSCOPE_HD marks functions that host code and CUDA kernels share (`__host__ __device__`
// under nvcc, nothing for the host compiler): the kernels' scalar formulas (kernels/math/) and the
// few base pieces device code needs (base/random.h's SplitMix64).
#pragma once

#if defined(__CUDACC__)
#define STEPSCOPE_HD __host__ __device__
#else
#define STEPSCOPE_HD
#endif
