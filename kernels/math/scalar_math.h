// The scalar formulas shared by the CPU reference and the CUDA kernels are STEPSCOPE_HD
// (base/hd.h); here are the few math functions those formulas need, overloaded per element type so that a later fp16/bf16 port
// adds overloads here instead of touching every formula.
#pragma once

#include <math.h>  // expf/tanhf/... are declared for both host and device under nvcc

#include "base/hd.h"

namespace stepscope::kernels::math {

STEPSCOPE_HD inline float Exp(float x) { return expf(x); }
STEPSCOPE_HD inline double Exp(double x) { return exp(x); }
STEPSCOPE_HD inline float Log(float x) { return logf(x); }
STEPSCOPE_HD inline double Log(double x) { return log(x); }
STEPSCOPE_HD inline float Tanh(float x) { return tanhf(x); }
STEPSCOPE_HD inline double Tanh(double x) { return tanh(x); }
STEPSCOPE_HD inline float Sqrt(float x) { return sqrtf(x); }
STEPSCOPE_HD inline double Sqrt(double x) { return sqrt(x); }
STEPSCOPE_HD inline float Floor(float x) { return floorf(x); }
STEPSCOPE_HD inline double Floor(double x) { return floor(x); }

template <typename T>
STEPSCOPE_HD inline T Max(T a, T b) { return a > b ? a : b; }
template <typename T>
STEPSCOPE_HD inline T Min(T a, T b) { return a < b ? a : b; }

}  // namespace stepscope::kernels::math
