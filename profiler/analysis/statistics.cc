// Small-sample statistics for run comparisons (statistics.h): robust location, tests.
#include "profiler/analysis/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

namespace stepscope::analysis {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

namespace {

// The two order statistics around the position, in linear time: a selection, then the least of
// what lies above it (kernel durations number in the tens of millions). Reorders `values`.
template <typename T>
double InterpolatedQuantile(std::span<T> values, double fraction) {
  if (values.empty()) return 0;
  const double position = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(position);
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(below);
  std::nth_element(values.begin(), at, values.end());
  if (below + 1 >= values.size()) return static_cast<double>(*at);
  const double weight = position - static_cast<double>(below);
  return static_cast<double>(*at) * (1 - weight) + static_cast<double>(*std::min_element(at + 1, values.end())) * weight;
}

}  // namespace

double Quantile(std::vector<double> values, double fraction) {
  return InterpolatedQuantile(std::span<double>(values), fraction);
}


double MedianAbsoluteDeviation(const std::vector<double>& values) {
  const double median = Median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - median));
  return Median(std::move(deviations));
}

std::vector<double> RobustZScores(const std::vector<double>& values) {
  std::vector<double> z(values.size(), 0.0);
  if (values.empty()) return z;
  const double median = Median(values);
  const double mad = MedianAbsoluteDeviation(values);
  double scale = 0;
  if (mad > 0) {
    scale = mad / 0.6745;
  } else {
    double mean_ad = 0;
    for (double v : values) mean_ad += std::fabs(v - median);
    mean_ad /= static_cast<double>(values.size());
    scale = 1.253314 * mean_ad;
  }
  if (scale <= 0) return z;
  for (size_t i = 0; i < values.size(); ++i) z[i] = (values[i] - median) / scale;
  return z;
}

Spread Describe(const std::vector<double>& values) {
  Spread s;
  s.n = values.size();
  if (values.empty()) return s;
  s.median = Median(values);
  s.mad = MedianAbsoluteDeviation(values);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(squares / static_cast<double>(s.n - 1)) : 0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  s.p50 = Quantile(values, 0.5);
  s.p95 = Quantile(values, 0.95);
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  s.p95_over_p50 = s.p50 != 0 ? s.p95 / s.p50 : 0;
  return s;
}

namespace {

// P(U = u) for u = 0..n1 n2 under the null without ties. The largest of the n1 + n2 values
// belongs to the first sample with probability n1 / (n1 + n2) and then beats all n2 values:
// P_{i,j}(u) = i/(i+j) P_{i-1,j}(u - j) + j/(i+j) P_{i,j-1}(u). Probabilities, not counts, so
// nothing overflows; all terms are positive, so nothing cancels.
std::vector<double> ExactDistribution(size_t n1, size_t n2) {
  // row[j] holds P_{i,j} for the current i.
  std::vector<std::vector<double>> previous(n2 + 1), current(n2 + 1);
  for (size_t j = 0; j <= n2; ++j) previous[j] = {1.0};  // i = 0: U is 0
  for (size_t i = 1; i <= n1; ++i) {
    current[0] = {1.0};  // j = 0: U is 0
    for (size_t j = 1; j <= n2; ++j) {
      std::vector<double>& p = current[j];
      p.assign(i * j + 1, 0.0);
      const double take_a = static_cast<double>(i) / static_cast<double>(i + j);
      const std::vector<double>& from_a = previous[j];      // sizes (i - 1, j)
      const std::vector<double>& from_b = current[j - 1];   // sizes (i, j - 1)
      for (size_t u = 0; u < from_a.size(); ++u) p[u + j] += take_a * from_a[u];
      for (size_t u = 0; u < from_b.size(); ++u) p[u] += (1 - take_a) * from_b[u];
    }
    std::swap(previous, current);
  }
  return previous[n2];
}

}  // namespace

double MannWhitneyExactP(size_t n1, size_t n2, double u) {
  if (n1 == 0 || n2 == 0) return 1;
  const std::vector<double> p = ExactDistribution(n1, n2);
  const double max_u = static_cast<double>(n1 * n2);
  u = std::clamp(u, 0.0, max_u);
  // Without ties U is an integer; a half from ties would not reach here.
  const size_t at = static_cast<size_t>(std::floor(u + 1e-9));
  double below = 0, above = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (k <= at) below += p[k];
    if (k >= at) above += p[k];
  }
  return std::min(1.0, 2 * std::min(below, above));
}

double MannWhitneyMinP(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  // 1 / C(n1 + n2, n1) computed as a product of ratios.
  double inverse = 1;
  for (size_t k = 1; k <= std::min(n1, n2); ++k) {
    inverse *= static_cast<double>(k) / static_cast<double>(std::max(n1, n2) + k);
  }
  return std::min(1.0, 2 * inverse);
}

MannWhitney MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney result;
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return result;
  // Ranks of the pooled sample (ties get their average rank).
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n1 + n2);
  for (double v : a) pooled.push_back({v, 0});
  for (double v : b) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // 1-based average
    const double t = static_cast<double>(j - i);
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += rank;
    }
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2), n = d1 + d2;
  result.u = rank_sum_a - d1 * (d1 + 1) / 2;
  if (!ties && n1 <= kExactMaxSize && n2 <= kExactMaxSize) {
    result.exact = true;
    result.p = MannWhitneyExactP(n1, n2, result.u);
    return result;
  }
  const double mean = d1 * d2 / 2;
  const double variance = d1 * d2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) {
    result.p = 1;  // every value tied
    return result;
  }
  const double z = std::max(0.0, std::fabs(result.u - mean) - 0.5) / std::sqrt(variance);
  result.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

namespace {

// The continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes 6.4),
// converging fast for x < (a + 1) / (a + b + 2).
double IncompleteBetaFraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    for (const double coefficient : {m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                                     -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + coefficient * d;
      if (std::fabs(d) < kTiny) d = kTiny;
      c = 1 + coefficient / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      d = 1 / d;
      h *= d * c;
    }
    if (std::fabs(d * c - 1) < kEpsilon) break;
  }
  return h;
}

}  // namespace

double RegularizedIncompleteBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * IncompleteBetaFraction(x, a, b) / a;
  return 1 - front * IncompleteBetaFraction(1 - x, b, a) / b;  // the symmetry I_x(a,b) = 1 - I_1-x(b,a)
}

double StudentTTwoSidedP(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return 1;
  if (std::isinf(t)) return 0;
  return std::min(1.0, RegularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5));
}

WelchT WelchTTest(const std::vector<double>& a, const std::vector<double>& b) {
  WelchT result;
  if (a.size() < 2 || b.size() < 2) return result;
  const Spread sa = Describe(a), sb = Describe(b);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double wa = sa.stddev * sa.stddev / na, wb = sb.stddev * sb.stddev / nb;  // variances of the means
  const double difference = sb.mean - sa.mean;
  if (wa + wb == 0) {
    result.p = difference == 0 ? 1 : 0;
    result.t = difference == 0 ? 0 : std::copysign(HUGE_VAL, difference);
    return result;
  }
  result.t = difference / std::sqrt(wa + wb);
  result.df = (wa + wb) * (wa + wb) / (wa * wa / (na - 1) + wb * wb / (nb - 1));
  result.p = StudentTTwoSidedP(result.t, result.df);
  return result;
}

std::vector<double> BenjaminiHochberg(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<double> q(m, 1.0);
  if (m == 0) return q;
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  double running = 1.0;
  for (size_t k = m; k-- > 0;) {
    const double adjusted = p[order[k]] * static_cast<double>(m) / static_cast<double>(k + 1);
    running = std::min(running, adjusted);
    q[order[k]] = std::min(1.0, running);
  }
  return q;
}

BootstrapInterval BootstrapMedianDelta(const std::vector<double>& a, const std::vector<double>& b,
                                       const BootstrapOptions& options) {
  BootstrapInterval interval;
  interval.estimate = Median(b) - Median(a);
  interval.low = interval.high = interval.estimate;
  if (a.empty() || b.empty() || options.resamples <= 0) return interval;
  SplitMix64 rng(options.seed);
  std::vector<double> deltas;
  deltas.reserve(static_cast<size_t>(options.resamples));
  std::vector<double> scratch_a(a.size()), scratch_b(b.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (double& v : scratch_a) v = a[rng.Below(a.size())];
    for (double& v : scratch_b) v = b[rng.Below(b.size())];
    deltas.push_back(Median(scratch_b) - Median(scratch_a));
  }
  const double tail = (1 - options.confidence) / 2;
  interval.low = Quantile(deltas, tail);
  interval.high = Quantile(deltas, 1 - tail);
  return interval;
}

namespace {

// Values by group, in the order groups first appear.
std::vector<std::vector<double>> ByGroup(const std::vector<double>& values, const std::vector<size_t>& groups) {
  std::vector<std::vector<double>> out;
  std::vector<std::pair<size_t, size_t>> index;  // group id -> slot
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t id = i < groups.size() ? groups[i] : 0;
    size_t slot = out.size();
    for (const auto& [g, s] : index) {
      if (g == id) slot = s;
    }
    if (slot == out.size()) {
      index.push_back({id, slot});
      out.emplace_back();
    }
    out[slot].push_back(values[i]);
  }
  return out;
}

void ResampleGroups(const std::vector<std::vector<double>>& groups, SplitMix64& rng, std::vector<double>& out) {
  out.clear();
  for (size_t k = 0; k < groups.size(); ++k) {
    const std::vector<double>& g = groups[rng.Below(groups.size())];
    for (size_t i = 0; i < g.size(); ++i) out.push_back(g[rng.Below(g.size())]);
  }
}

}  // namespace

std::vector<double> GroupMedians(const std::vector<double>& values, const std::vector<size_t>& groups) {
  std::vector<double> medians;
  for (std::vector<double>& group : ByGroup(values, groups)) medians.push_back(Median(std::move(group)));
  return medians;
}

BootstrapInterval BootstrapMedianDeltaGrouped(const std::vector<double>& a, const std::vector<size_t>& group_a,
                                              const std::vector<double>& b, const std::vector<size_t>& group_b,
                                              const BootstrapOptions& options) {
  BootstrapInterval interval;
  interval.estimate = Median(b) - Median(a);
  interval.low = interval.high = interval.estimate;
  if (a.empty() || b.empty() || options.resamples <= 0) return interval;
  const std::vector<std::vector<double>> groups_a = ByGroup(a, group_a), groups_b = ByGroup(b, group_b);
  SplitMix64 rng(options.seed);
  std::vector<double> deltas, scratch_a, scratch_b;
  deltas.reserve(static_cast<size_t>(options.resamples));
  for (int r = 0; r < options.resamples; ++r) {
    ResampleGroups(groups_a, rng, scratch_a);
    ResampleGroups(groups_b, rng, scratch_b);
    deltas.push_back(Median(scratch_b) - Median(scratch_a));
  }
  const double tail = (1 - options.confidence) / 2;
  interval.low = Quantile(deltas, tail);
  interval.high = Quantile(deltas, 1 - tail);
  return interval;
}

}  // namespace stepscope::analysis
