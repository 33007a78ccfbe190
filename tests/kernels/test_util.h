// Helpers for the kernel tests: seeded random tensors, views over vectors, element-wise
// comparison with stated tolerances, and a central finite-difference gradient checker.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels::testing {

template <typename T>
std::vector<T> RandomVector(int64_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// Random values whose magnitude is at least `min_abs` (away from kinks such as Relu's 0).
template <typename T>
std::vector<T> RandomAwayFromZero(int64_t n, uint32_t seed, double min_abs) {
  std::vector<T> v = RandomVector<T>(n, seed);
  for (T& x : v) x = static_cast<T>(x < 0 ? x - min_abs : x + min_abs);
  return v;
}

// A permutation of n well-separated values (no ties, spacing `step`), for max-pooling.
template <typename T>
std::vector<T> DistinctValues(int64_t n, uint32_t seed, double step = 0.01) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>((i - n / 2) * step);
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

template <typename T>
TensorView<T> View(std::vector<T>& v, Shape shape) {
  EXPECT_EQ(static_cast<int64_t>(v.size()), shape.num_elements());
  return TensorView<T>(v.data(), shape);
}
template <typename T>
TensorView<const T> CView(const std::vector<T>& v, Shape shape) {
  EXPECT_EQ(static_cast<int64_t>(v.size()), shape.num_elements());
  return TensorView<const T>(v.data(), shape);
}

template <typename T>
double Dot(const std::vector<T>& a, const std::vector<T>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

template <typename To, typename From>
std::vector<To> Cast(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// Every |actual − expected| ≤ atol + rtol·|expected|; reports the first few failures.
template <typename A, typename B>
void ExpectAllNear(const std::vector<A>& actual, const std::vector<B>& expected, double atol,
                   double rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      ++failures;
      if (reported++ < 5) {
        ADD_FAILURE() << what << "[" << i << "]: got " << a << ", expected " << e
                      << " (atol " << atol << ", rtol " << rtol << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << actual.size() << " differ";
}

// Compares `analytic` with central differences of `loss` over every element of `x` (which is
// perturbed in place and restored). Relative error is |fd − an| / max(1, |fd|, |an|).
// Fails if the analytic gradient is identically zero, so the check cannot pass vacuously.
inline void ExpectGradientMatches(std::vector<double>& x, const std::vector<double>& analytic,
                                  const std::function<double()>& loss, const std::string& what,
                                  double h = 1e-6, double tol = 1e-6) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double max_abs = 0;
  for (double g : analytic) max_abs = std::max(max_abs, std::abs(g));
  if (!x.empty()) {
    EXPECT_GT(max_abs, 0.0) << what << ": analytic gradient is all zero";
  }
  int reported = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = loss();
    x[i] = saved - h;
    const double minus = loss();
    x[i] = saved;
    const double fd = (plus - minus) / (2 * h);
    const double err =
        std::abs(fd - analytic[i]) / std::max({1.0, std::abs(fd), std::abs(analytic[i])});
    if (!(err <= tol)) {
      ++failures;
      if (reported++ < 5) {
        ADD_FAILURE() << what << "[" << i << "]: finite difference " << fd << ", analytic "
                      << analytic[i] << " (relative error " << err << " > " << tol << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << x.size() << " gradients differ";
}

#define ASSERT_OK(expr)                                              \
  do {                                                               \
    const ::stepscope::Status _st = (expr);                          \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.message();         \
  } while (0)

}  // namespace stepscope::kernels::testing
