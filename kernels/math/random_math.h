// SplitMix64 (base/random.h), the models' random stream (trainer/models/rng.h), as a counter: the k-th value
// (k = 0, 1, ...) after state s is Mix(s + (k + 1)·γ), so each element of a random tensor is
// computed on its own, on a GPU thread as on the CPU, and both devices draw the same numbers.
#pragma once

#include <cstdint>

#include "base/random.h"

namespace stepscope::kernels::math {

// Uniform in [0, 1) from the top 24 bits of the k-th value after `state` (exact in float).
STEPSCOPE_HD inline float SplitMixUniform24(uint64_t state, uint64_t k) {
  return static_cast<float>(SplitMixOutput(state + (k + 1) * kSplitMixGamma) >> 40) *
         (1.0f / 16777216.0f);
}

}  // namespace stepscope::kernels::math
