// A small deterministic random source (the trainer's built-in data, generated traces). The
// standard distributions are implementation-defined, so the same seed could give other data with
// another standard library; these formulas give the same bits everywhere.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/hd.h"

namespace stepscope {

// SplitMix64 (Steele, Lea and Flood): a state that advances by kSplitMixGamma and an output
// function of the state. Device code uses it too (dropout's numbers: kernels/math/random_math.h).
inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;
STEPSCOPE_HD inline uint64_t SplitMixOutput(uint64_t state) {
  state = (state ^ (state >> 30)) * 0xBF58476D1CE4E5B9ull;
  state = (state ^ (state >> 27)) * 0x94D049BB133111EBull;
  return state ^ (state >> 31);
}

// Mixes a seed (or a seed and an index) into a well-spread 64-bit value: SplitMix64's next output.
inline uint64_t MixSeed(uint64_t value) { return SplitMixOutput(value + kSplitMixGamma); }
inline uint64_t MixSeed(uint64_t seed, uint64_t stream) { return MixSeed(MixSeed(seed) ^ stream); }

// xoshiro256** (Blackman and Vigna).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) {
      seed = MixSeed(seed);
      word = seed;
    }
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n); n > 0. The modulo bias is below 2^-32 for the sizes used here.
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Uniform in [lo, hi] for a range below 2^32, by multiply-shift rather than a division (the
  // trace generator draws 10^9 of them); the bias is below (hi - lo + 1) / 2^32.
  int64_t Between(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(((Next() >> 32) * range) >> 32);
  }
  bool Bernoulli(double p) { return Uniform() < p; }
  // Standard normal (Box-Muller; one of the pair is dropped for simplicity).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace stepscope
