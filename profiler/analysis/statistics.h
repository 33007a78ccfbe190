// Small-sample statistics for comparing runs step by step: robust location and spread (median,
// MAD, robust z-scores), the Mann-Whitney U test (exact distribution for small samples without
// ties, normal approximation with tie correction otherwise), Welch's t-test, Benjamini-Hochberg adjusted
// p-values, and a seeded percentile bootstrap of the change of the median between two samples.
// Everything is deterministic: the bootstrap draws from its own SplitMix64 generator, so the same
// inputs and seed give the same interval on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/random.h"

namespace stepscope::analysis {

// Median of the values (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> values);
// Linear-interpolated quantile (0..1) of the values; 0 for none.
double Quantile(std::vector<double> values, double fraction);
// Median absolute deviation from the median (not scaled); 0 for none.
double MedianAbsoluteDeviation(const std::vector<double>& values);

// Iglewicz and Hoaglin's modified z-score 0.6745 (x - median) / MAD. When the MAD is 0 (more than
// half the values equal), the mean absolute deviation stands in: (x - median) / (1.253314 MeanAD);
// when that is 0 too, every value equals the median and z is 0.
std::vector<double> RobustZScores(const std::vector<double>& values);
constexpr double kOutlierZ = 3.5;  // |z| above this marks an outlier (Iglewicz and Hoaglin)

struct Spread {
  size_t n = 0;
  double median = 0, mad = 0, mean = 0, stddev = 0;  // stddev: sample (n - 1)
  double min = 0, max = 0, p50 = 0, p95 = 0;
  double cv = 0;            // stddev / mean (0 when the mean is 0)
  double p95_over_p50 = 0;  // 0 when p50 is 0
};
Spread Describe(const std::vector<double>& values);

struct MannWhitney {
  double u = 0;             // U of the first sample: pairs (a > b) + half the ties
  double p = 1;             // two-sided
  bool exact = false;       // exact null distribution (no ties, small samples) or normal approx
};
// Two-sided Mann-Whitney U test of a against b. Exact when there are no ties and neither sample
// has more than kExactMaxSize values; otherwise the normal approximation with continuity and tie
// correction (as SciPy's mannwhitneyu). An empty sample gives p = 1.
MannWhitney MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);
constexpr size_t kExactMaxSize = 50;
// The exact two-sided p-value of U = u for samples of sizes n1 and n2 without ties:
// 2 min(P(U <= u), P(U >= u)), at most 1.
double MannWhitneyExactP(size_t n1, size_t n2, double u);
// The smallest two-sided p-value samples of these sizes can reach (2 / C(n1 + n2, n1)).
double MannWhitneyMinP(size_t n1, size_t n2);

// Welch's unequal-variance t-test of a against b: t = (mean b - mean a) / sqrt(var a / n_a +
// var b / n_b) with the Welch-Satterthwaite degrees of freedom, p two-sided from Student's t.
// Needs two values a side (p = 1 otherwise). When neither side varies, p is 0 if the means differ
// (the difference is certain) and 1 if they are equal.
struct WelchT {
  double t = 0, df = 0;
  double p = 1;  // two-sided
};
WelchT WelchTTest(const std::vector<double>& a, const std::vector<double>& b);
// P(|T| >= |t|) for Student's t with df > 0 degrees of freedom (df need not be whole).
double StudentTTwoSidedP(double t, double df);
// The regularised incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1.
double RegularizedIncompleteBeta(double x, double a, double b);

// Benjamini-Hochberg adjusted p-values (q-values), in the order given: q_(i) = min over j >= i of
// p_(j) m / j on the ascending ranks, at most 1.
std::vector<double> BenjaminiHochberg(const std::vector<double>& p);

struct BootstrapInterval {
  double estimate = 0;        // median(b) - median(a) on the samples themselves
  double low = 0, high = 0;   // percentile interval of the resampled changes
};
struct BootstrapOptions {
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 1;
};
// Percentile bootstrap of median(b) - median(a): each side is resampled with replacement on its
// own (steps are independent draws of each run).
BootstrapInterval BootstrapMedianDelta(const std::vector<double>& a, const std::vector<double>& b,
                                       const BootstrapOptions& options = {});
// The same when the values come in groups (the steps of one run, i.e. one process, share its
// conditions and are not independent draws): each resample draws as many groups as the side has,
// with replacement, then the values of each drawn group with replacement, so the spread between
// runs widens the interval. `group_a[i]` is the group of a[i]; with one group per side this is
// the plain bootstrap above (with its own random stream).
BootstrapInterval BootstrapMedianDeltaGrouped(const std::vector<double>& a, const std::vector<size_t>& group_a,
                                              const std::vector<double>& b, const std::vector<size_t>& group_b,
                                              const BootstrapOptions& options = {});

// The median of each group's values, in the order groups first appear (`groups[i]` is the group
// of values[i]).
std::vector<double> GroupMedians(const std::vector<double>& values, const std::vector<size_t>& groups);

// SplitMix64: a small, fast, portable generator (std::uniform_int_distribution is not the same
// on every standard library).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return SplitMixOutput(state_ += kSplitMixGamma); }
  // Uniform in [0, n), n > 0 (the modulo bias is below n / 2^64, nothing for step counts).
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

}  // namespace stepscope::analysis
