// A CPU's sgemm peak (sgemm_peak.h): the fastest of a few timed square products on OpenBLAS, run
// by as many callers at once as the trainer has CPU devices.
#include "kernels/sgemm_peak.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "base/check.h"

namespace stepscope::kernels {
namespace {

constexpr double kBudgetSeconds = 0.5;  // of timed rounds, beyond the first two

}  // namespace

SgemmPeak MeasureSgemmPeak(int64_t n, int repeats, int callers) {
  STEPSCOPE_CHECK(n > 0 && n <= 8192 && repeats > 0 && callers > 0);
  const auto size = static_cast<size_t>(n * n);
  // Values that stay finite and away from denormals however often C is overwritten; A and B are
  // shared (read only), each caller writes its own C.
  std::vector<float> a(size), b(size);
  std::vector<std::vector<float>> c(static_cast<size_t>(callers), std::vector<float>(size, 0.0f));
  for (size_t i = 0; i < size; ++i) {
    a[i] = 0.5f + static_cast<float>(i % 7) * 0.125f;
    b[i] = 1.0f - static_cast<float>(i % 5) * 0.0625f;
  }
  const auto dim = static_cast<blasint>(n);
  auto product = [&](size_t caller) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f, a.data(), dim, b.data(), dim, 0.0f,
                c[caller].data(), dim);
  };
  // One round: every caller's product at once, timed until the last ends.
  auto round = [&] {
    std::vector<std::thread> others;
    for (size_t caller = 1; caller < c.size(); ++caller) others.emplace_back(product, caller);
    product(0);
    for (std::thread& other : others) other.join();
  };
  round();  // warm-up: OpenBLAS starts its threads and faults in its buffers on the first call
  double best_s = 0, total_s = 0;
  int timed = 0;
  // A slow machine (one thread, no vector units) stops early: two rounds after half a second.
  while (timed < repeats && (timed < 2 || total_s < kBudgetSeconds)) {
    const auto start = std::chrono::steady_clock::now();
    round();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++timed;
    total_s += s;
    if (s > 0 && (best_s == 0 || s < best_s)) best_s = s;
  }
  SgemmPeak peak;
  peak.n = n;
  peak.repeats = timed;
  peak.callers = callers;
  peak.threads = openblas_get_num_threads();
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(callers);
  peak.flops_per_s = best_s > 0 ? flops / best_s : 0;
  return peak;
}

}  // namespace stepscope::kernels
