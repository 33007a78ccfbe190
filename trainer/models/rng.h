// The models' deterministic random source for initial weights: the same stream for a seed on
// every platform we build on (the standard distributions' algorithms are left to the library).
#pragma once

#include <cmath>
#include <cstdint>

#include "base/random.h"

namespace stepscope::models {

// SplitMix64, with Box-Muller normals.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() { return SplitMixOutput(state_ += kSplitMixGamma); }
  // The stream as a counter (kernels::RandomUniform draws `n` values from state() on a device,
  // the same as n UniformFloat(0, 1) here): the state, and a jump past n values.
  uint64_t state() const { return state_; }
  void Skip(uint64_t n) { state_ += n * kSplitMixGamma; }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Uniform in [lo, hi) from 24 random bits, in float (how the LSTM initialises its weights).
  float UniformFloat(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f);
  }
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = Uniform();
    while (u1 <= 0.0) u1 = Uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * 3.14159265358979323846 * Uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }
  // Keras' truncated normal: redrawn beyond two standard deviations.
  double TruncatedNormal() {
    for (;;) {
      const double z = Normal();
      if (std::abs(z) <= 2.0) return z;
    }
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace stepscope::models
