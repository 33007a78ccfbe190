// Small-gradient packing of tf_cnn_benchmarks (agg_small_grads_max_bytes,
// agg_small_grads_max_group): many tiny gradients (biases, normalization parameters) cost one
// collective each; runs of them are concatenated into one buffer, reduced once, and split back.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stepscope::parallel {

struct PackingCandidate {
  int64_t num_elements = 0;
  bool is_float32 = true;  // only fp32 gradients are packed, as in the original
};

// Gradients first..last (inclusive, consecutive indices) concatenated into one buffer.
struct PackGroup {
  int first = 0;
  int last = 0;

  int size() const { return last - first + 1; }
  bool operator==(const PackGroup&) const = default;
};

// The groups to concatenate, in index order. A gradient is small when it is fp32 and
// 4 * num_elements <= max_bytes. Consecutive small indices form a run; a run is cut once its
// first and last index are max_group + 1 apart (the original's extract_ranges: it extends a run
// while last - first <= max_group), so a group holds at most max_group + 2 gradients. Runs of one
// gradient stay unpacked and are not listed. Packing is off (no groups) unless both limits are
// positive.
std::vector<PackGroup> PlanSmallGradientPacking(std::span<const PackingCandidate> gradients,
                                                int64_t max_bytes, int max_group);

}  // namespace stepscope::parallel
