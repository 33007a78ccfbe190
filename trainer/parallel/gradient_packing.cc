// Packing plan: which consecutive small gradients are reduced together (see gradient_packing.h).
#include "trainer/parallel/gradient_packing.h"

namespace stepscope::parallel {

std::vector<PackGroup> PlanSmallGradientPacking(std::span<const PackingCandidate> gradients,
                                                int64_t max_bytes, int max_group) {
  std::vector<PackGroup> groups;
  if (max_bytes <= 0 || max_group <= 0) return groups;
  std::vector<int> small;
  for (size_t i = 0; i < gradients.size(); ++i) {
    const PackingCandidate& g = gradients[i];
    // Compare elements rather than 4 * elements so huge counts cannot overflow.
    if (g.is_float32 && g.num_elements <= max_bytes / 4) small.push_back(static_cast<int>(i));
  }
  if (small.empty()) return groups;
  int first = small[0];
  int last = first;
  auto end_run = [&] {
    if (last > first) groups.push_back({first, last});
  };
  for (size_t k = 1; k < small.size(); ++k) {
    int index = small[k];
    if (index == last + 1 && last - first <= max_group) {
      last = index;
    } else {
      end_run();
      first = last = index;
    }
  }
  end_run();
  return groups;
}

}  // namespace stepscope::parallel
