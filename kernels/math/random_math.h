// SplitMix64, the models' random stream (trainer/models/rng.h), as a counter: the k-th value
// (k = 0, 1, ...) after state s is Mix(s + (k + 1)·γ), so each element of a random tensor is
// computed on its own, on a GPU thread as on the CPU, and both devices draw the same numbers.
#pragma once

#include <cstdint>

#include "kernels/hd.h"

namespace stepscope::kernels::math {

inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;

STEPSCOPE_HD inline uint64_t SplitMixMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from the top 24 bits of the k-th value after `state` (exact in float).
STEPSCOPE_HD inline float SplitMixUniform24(uint64_t state, uint64_t k) {
  return static_cast<float>(SplitMixMix(state + (k + 1) * kSplitMixGamma) >> 40) *
         (1.0f / 16777216.0f);
}

}  // namespace stepscope::kernels::math
