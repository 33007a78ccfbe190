// Checking an analytic gradient against central differences of a float loss, shared by the
// models' gradient tests.
//
// The central difference D(h) = (L(w+h) - L(w-h)) / 2h errs by truncation, c·h² + O(h⁴), and by
// the loss's float rounding: an absolute error δ per evaluation gives at most δ/h. With D(h/2)
// too, Richardson's R = (4·D(h/2) - D(h)) / 3 cancels the h² term; what is left of the
// truncation is bounded by |D(h) - D(h/2)| (= 3/4·c·h², far above O(h⁴); a ReLU or max-pool kink
// inside ±h shows up there as well) and R's rounding by (4·2δ/h + δ/h) / 3 = 3δ/h, δ being
// `loss_ulps` units in the last place of the loss. So
//   |analytic - R| <= |D(h) - D(h/2)| + 3·loss_ulps·ulp(L)/h + 1e-3·|R|
// the last term for the float rounding of the analytic gradient itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace stepscope::testing {

struct FiniteDifference {
  double extrapolated = 0;  // Richardson's R
  double tolerance = 0;     // for the analytic value, as above
};

// Central differences at steps h and h/2 of `loss_at` in the float `w`, with the steps the float
// weights really take (w ± h rounds).
template <typename LossAt>
FiniteDifference CentralDifference(float* w, float h, double loss_ulps, LossAt&& loss_at) {
  const float saved = *w;
  auto difference = [&](float step) {
    *w = saved + step;
    const double up = static_cast<double>(*w);
    const double plus = loss_at();
    *w = saved - step;
    const double down = static_cast<double>(*w);
    const double minus = loss_at();
    *w = saved;
    return std::pair{(plus - minus) / (up - down), std::max(std::abs(plus), std::abs(minus))};
  };
  const auto [coarse, loss] = difference(h);
  const auto [fine, unused] = difference(h / 2);
  FiniteDifference d;
  d.extrapolated = (4.0 * fine - coarse) / 3.0;
  const double ulp = std::nextafter(static_cast<float>(loss), INFINITY) - static_cast<float>(loss);
  d.tolerance = std::abs(coarse - fine) + 3.0 * loss_ulps * ulp / static_cast<double>(h) +
                1e-3 * std::abs(d.extrapolated);
  return d;
}

// The index of the largest entry of `gradient` and `sampled` other distinct indices (all when
// fewer) drawn with `seed`: a gradient written to the wrong index, or transposed, leaves the
// largest entry right and moves the others.
template <typename T>
std::vector<size_t> EntriesToCheck(const std::vector<T>& gradient, size_t sampled, uint32_t seed) {
  size_t largest = 0;
  for (size_t i = 1; i < gradient.size(); ++i) {
    if (std::abs(gradient[i]) > std::abs(gradient[largest])) largest = i;
  }
  std::vector<size_t> entries(gradient.size());
  std::iota(entries.begin(), entries.end(), size_t{0});
  std::mt19937 random(seed);
  std::shuffle(entries.begin(), entries.end(), random);
  entries.erase(std::remove(entries.begin(), entries.end(), largest), entries.end());
  entries.resize(std::min(entries.size(), sampled));
  entries.insert(entries.begin(), largest);
  return entries;
}

}  // namespace stepscope::testing
