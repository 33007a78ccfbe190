// Gradients for the parallel tests: per-participant float buffers filled with deterministic
// values, the double-precision reference of their reduction, and a check that every participant
// holds exactly the same bytes within tolerance of that reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "trainer/parallel/all_reducer.h"

namespace stepscope::parallel::testing {

// Keeps every collective event it is told of (from any thread).
class RecordingObserver : public CollectiveObserver {
 public:
  void OnCollective(const CollectiveEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(event);
  }
  std::mutex mutex;
  std::vector<CollectiveEvent> events;
};

class GradientSet {
 public:
  GradientSet(const std::vector<int64_t>& sizes, int participants, uint32_t seed)
      : participants_(participants) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (size_t t = 0; t < sizes.size(); ++t) {
      storage_.emplace_back(participants);
      reference_.emplace_back(sizes[t], 0.0);
      abs_sum_.emplace_back(sizes[t], 0.0);
      for (int p = 0; p < participants; ++p) {
        auto& buffer = storage_[t][p];
        buffer.resize(sizes[t]);
        // Values of varied magnitude so rounding differs with the summation order.
        const float scale = static_cast<float>(1 << (t % 7));
        for (auto& x : buffer) x = value(rng) * scale;
        for (int64_t i = 0; i < sizes[t]; ++i) {
          reference_[t][i] += buffer[i];
          abs_sum_[t][i] += std::fabs(buffer[i]);
        }
      }
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      GradientReplicas g;
      g.name = "tower/grad_" + std::to_string(t);
      g.num_elements = sizes[t];
      for (int p = 0; p < participants; ++p) g.replicas.push_back(storage_[t][p].data());
      gradients_.push_back(std::move(g));
    }
  }

  std::vector<GradientReplicas>& gradients() { return gradients_; }
  std::vector<float>& buffer(size_t tensor, int participant) { return storage_[tensor][participant]; }
  size_t size() const { return storage_.size(); }

  // Every participant identical bit for bit, and within the fp32 rounding bound of the reference
  // (times `scale`, 1/N for a mean).
  ::testing::AssertionResult Reduced(double scale = 1.0) const {
    const double eps = std::numeric_limits<float>::epsilon();
    for (size_t t = 0; t < storage_.size(); ++t) {
      const auto& first = storage_[t][0];
      for (int p = 1; p < participants_; ++p) {
        if (!first.empty() &&
            std::memcmp(first.data(), storage_[t][p].data(), first.size() * sizeof(float)) != 0) {
          return ::testing::AssertionFailure()
                 << "tensor " << t << ": participant " << p << " differs from participant 0";
        }
      }
      for (size_t i = 0; i < first.size(); ++i) {
        const double expected = reference_[t][i] * scale;
        const double bound = (participants_ + 1) * eps * abs_sum_[t][i] * scale + 1e-30;
        if (!(std::fabs(first[i] - expected) <= bound)) {
          return ::testing::AssertionFailure()
                 << "tensor " << t << " element " << i << ": got " << first[i] << ", expected "
                 << expected << " (bound " << bound << ")";
        }
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  int participants_;
  std::vector<std::vector<std::vector<float>>> storage_;  // [tensor][participant][element]
  std::vector<std::vector<double>> reference_;
  std::vector<std::vector<double>> abs_sum_;
  std::vector<GradientReplicas> gradients_;
};

// Odd sizes and many small tensors, like a real model's variables.
inline std::vector<int64_t> MixedSizes() {
  std::vector<int64_t> sizes = {1, 3, 7, 64, 1000, 4097, 65537, 10, 0, 5, 2, 33};
  for (int i = 0; i < 40; ++i) sizes.push_back(1 + (i * 37) % 129);
  sizes.push_back(131071);
  return sizes;
}

}  // namespace stepscope::parallel::testing
