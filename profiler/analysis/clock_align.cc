// Clock alignment of ranks (clock_align.h): collectives matched across ranks and each rank's
// offset and drift solved from their ends; the barrier and the recorded clocks as fallbacks.
#include "profiler/analysis/clock_align.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

#include "base/check.h"
#include "base/run_parts.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/analysis/stragglers.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

constexpr double kOutlierSigmas = 4;      // standard deviations of the fit beyond which a match is an outlier
constexpr double kOutlierFloorNs = 1000;  // never cut closer than 1 µs
constexpr double kDriftSignificance = 3;  // drift kept when it moves the clock by this many residuals
// A drift is fitted only from enough matches over a long enough span: a few matches within a
// step, late by scheduling noise, draw any slope (two one-step trainer ranks: 110,071 ppm).
constexpr int64_t kMinDriftMatches = 8;      // kept matches
constexpr double kMinDriftSpanNs = 50e6;     // 50 ms between the first and last kept match
// Real clocks drift by tens of ppm (a crystal's tolerance; NTP slews by at most 500 ppm). A drift
// beyond 1,000 ppm is kept only when the data demand it: the slope is more than kStrongDrift
// of its standard errors from zero.
constexpr double kPlausibleDriftPpm = 1000;
constexpr double kStrongDrift = 10;
constexpr int kMaxRounds = 200;
constexpr size_t kRanksPerPart = 32;  // a thread of its own for each this many ranks refitted a round
// The rounds stop when no rank's correction relative to the reference moves by this much. Fitted
// to medians, the last approach is slow (a median moves in small steps as the ends cross it: at
// 1,024 generated ranks the moves shrink by about 1% a round from a few ns), and a ns is a
// thousandth of what the ends scatter by.
constexpr double kSettledNs = 1;

// The argument `key` of a slice as text ("" when absent).
std::string ArgText(const Trace& trace, uint32_t slice, std::string_view key) {
  for (const trace::SliceArg& arg : trace.slice_args(slice)) {
    if (trace.str(arg.key) != key) continue;
    return arg.is_number ? std::to_string(arg.number) : std::string(trace.str(arg.value));
  }
  return "";
}

// "tower_0/AllReduce/x" -> "AllReduce/x": every tower of every rank reduces the same variable.
std::string_view WithoutTower(std::string_view name) {
  if (name.starts_with("tower")) {
    const size_t slash = name.find('/');
    if (slash != std::string_view::npos) return name.substr(slash + 1);
  }
  return name;
}

// What the collective is, or "" when the slice is not a collective's work (see the header).
std::string CollectiveName(const Trace& trace, uint32_t index, const Slice& s) {
  if (s.duplicate()) return "";
  const std::string_view name = trace.str(trace.slice_name(s));
  switch (s.kind) {
    case SliceKind::kCollective: return std::string(WithoutTower(name));
    case SliceKind::kKernel: {
      if (!IsCommunicationKernel(name)) return "";
      const std::string collective = ArgText(trace, index, "Collective name");
      return collective.empty() ? std::string(name) : "nccl:" + collective;
    }
    case SliceKind::kAnnotation:
      // gloo runs each collective on its own thread, under a span of the collective's name.
      if (!name.starts_with("gloo:")) return "";
      return std::string(name) + ArgText(trace, index, "Input Dims");
    case SliceKind::kOp: {
      // Our trainer's collective ops block until every rank took part; PyTorch's host ops only
      // enqueue theirs.
      if (trace.source_format() == trace::SourceFormat::kChromeJson) return "";
      if (!IsCollectiveOpType(trace.str(trace.slice_op_type(s)))) return "";
      return std::string(WithoutTower(name));
    }
    default: return "";
  }
}

std::string GroupOf(const Trace& trace, uint32_t index) {
  std::string group = ArgText(trace, index, "Process Group Name");
  if (group.empty()) group = ArgText(trace, index, "Process Group Ranks");
  return group;
}

// A rank's collectives: key -> its instances, in order. Our trainer's records are host spans
// around a call that returns once every rank is done: they end together unless the rank is late
// to record the end (descheduled), so the earliest end is the collective's. Other ends (a ring's
// last chunk arriving, kernels) scatter both ways: their mean is.
using Instance = CollectiveInstance;
using Instances = std::map<CollectiveKey, std::vector<Instance>>;

// Of the same instance in several lists (tracks, a rank's inputs), the one that ends last.
void MergeInstances(const std::vector<Instance>& instances, std::vector<Instance>& merged) {
  if (merged.size() < instances.size()) merged.resize(instances.size());
  for (size_t k = 0; k < instances.size(); ++k) {
    if (instances[k].end_ns > merged[k].end_ns) merged[k] = instances[k];
  }
}

void AddCollectives(const Trace& trace, size_t input, const std::vector<StepWindow>& windows, Instances& out) {
  // Per track and key, in start order (slices are sorted by start).
  std::map<std::pair<uint32_t, CollectiveKey>, std::vector<Instance>> per_track;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const Slice& s = trace.slices()[i];
    std::string name = CollectiveName(trace, i, s);
    if (name.empty()) continue;
    int64_t step = -1;
    for (const StepWindow& w : windows) {
      if (!w.whole && s.start_ns >= w.begin_ns && s.start_ns < w.end_ns) step = w.step;
      if (w.whole) step = w.step;
    }
    CollectiveKey key{.earliest = s.kind == SliceKind::kCollective || s.kind == SliceKind::kOp,
                      .group = GroupOf(trace, i), .name = std::move(name), .step = step};
    per_track[{s.track, std::move(key)}].push_back(
        {trace.epoch_ns() + s.end_ns(), trace.epoch_ns() + s.start_ns, input, i});
  }
  for (auto& [track_key, instances] : per_track) MergeInstances(instances, out[track_key.second]);
}

// One matched collective: its members (rank index, end on that rank's own clock), and each
// member's instance.
struct Match {
  std::vector<std::pair<size_t, int64_t>> members;
  std::vector<Instance> instances;
  const CollectiveKey* key = nullptr;  // into the Instances it was matched from
  bool earliest = false;  // the earliest end is the collective's (else the mean of the ends)
};

std::vector<Match> MatchCollectives(const std::vector<Instances>& by_rank) {
  std::map<CollectiveKey, std::vector<size_t>> holders;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    for (const auto& [key, ends] : by_rank[r]) holders[key].push_back(r);
  }
  std::vector<Match> matches;
  for (const auto& [key, ranks] : holders) {
    if (ranks.size() < 2) continue;
    std::map<size_t, int> count_votes;
    for (size_t r : ranks) ++count_votes[by_rank[r].at(key).size()];
    size_t count = 0;
    int votes = 0;
    for (const auto& [c, v] : count_votes) {
      if (v > votes) count = c, votes = v;
    }
    if (votes < 2) continue;
    for (size_t k = 0; k < count; ++k) {
      Match match;
      match.earliest = key.earliest;
      match.key = &by_rank[ranks.front()].find(key)->first;
      for (size_t r : ranks) {
        const std::vector<Instance>& instances = by_rank[r].at(key);
        if (instances.size() != count) continue;
        match.members.emplace_back(r, instances[k].end_ns);
        match.instances.push_back(instances[k]);
      }
      matches.push_back(std::move(match));
    }
  }
  return matches;
}

// A rank's fit of d = offset + drift x over its matches (x: its own time since its anchor, d: the
// collective's end as the solve takes it, minus its own), outliers left out.
struct Fit {
  double offset = 0, drift = 0;
  double rms = 0;
  int64_t kept = 0, outliers = 0;
  bool drift_fitted = false;  // the drift was fitted (else held at 0)
};

// Least squares over the kept matches (the offset alone, or with the drift).
void Solve(const std::vector<double>& x, const std::vector<double>& d, const std::vector<bool>& keep, bool drift,
           Fit& out) {
  double mx = 0, md = 0;
  int64_t m = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (keep[i]) mx += x[i], md += d[i], ++m;
  }
  out.kept = m;
  out.outliers = static_cast<int64_t>(d.size()) - m;
  if (m == 0) return;
  mx /= static_cast<double>(m), md /= static_cast<double>(m);
  // Centred sums: x reaches 1e10 ns and more, whose squares would swamp the differences.
  double sxx = 0, sxd = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (keep[i]) sxx += (x[i] - mx) * (x[i] - mx), sxd += (x[i] - mx) * (d[i] - md);
  }
  out.drift = drift && m >= 3 && sxx > 0 ? sxd / sxx : 0;
  out.offset = md - out.drift * mx;
  double ss = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (keep[i]) ss += std::pow(d[i] - out.offset - out.drift * x[i], 2);
  }
  out.rms = std::sqrt(ss / static_cast<double>(m));
}

// Whether the data support the drift `drifting` fitted over the kept matches: enough of them
// over a long enough span, moving the clock over it by more than the residual, and plausible for
// a clock unless the slope stands far out of its own standard error.
bool DriftSupported(const std::vector<double>& x, const std::vector<bool>& keep, const Fit& drifting) {
  double lo = INFINITY, hi = -INFINITY, mean = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (keep[i]) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), mean += x[i];
  }
  const double span = hi - lo;
  if (drifting.kept < kMinDriftMatches || span < kMinDriftSpanNs) return false;
  const double rms = std::max(drifting.rms, 1.0);
  if (std::abs(drifting.drift) * span <= kDriftSignificance * rms) return false;
  if (std::abs(drifting.drift) * 1e6 <= kPlausibleDriftPpm) return true;
  // The slope's standard error: rms / sqrt(sum of (x - mean)^2).
  mean /= static_cast<double>(drifting.kept);
  double sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (keep[i]) sxx += (x[i] - mean) * (x[i] - mean);
  }
  return std::abs(drifting.drift) * std::sqrt(sxx) > kStrongDrift * rms;
}

// A rank late to record a collective's end (descheduled, still copying out) moves that match
// by up to milliseconds, one way: up to half the matches can be off. So the fit starts from the
// densest half (the shortest window holding half the differences, least trimmed squares), then
// keeps the matches within kOutlierSigmas of the fit, refitting until the kept set settles.
// `keep_drift`: fit the drift whenever the matches allow a slope at all (a drift the rules
// supported before, see SolveCollectives).
Fit RobustFit(const std::vector<double>& x, const std::vector<double>& d, bool try_drift, bool keep_drift = false) {
  Fit fit;
  const size_t n = d.size();
  if (n == 0) return fit;
  // A drift would spread the differences along a line, and the densest half would be a short
  // piece of it: the differences are first detrended by Siegel's repeated-median slope (robust
  // to half the matches off).
  std::vector<double> level = d;
  if (try_drift && n >= 3) {
    const size_t step = std::max<size_t>(1, n / 1000);  // at most ~1000 x 1000 pairs
    std::vector<double> medians, slopes;
    for (size_t i = 0; i < n; i += step) {
      slopes.clear();
      for (size_t j = 0; j < n; j += step) {
        if (x[j] != x[i]) slopes.push_back((d[j] - d[i]) / (x[j] - x[i]));
      }
      if (!slopes.empty()) medians.push_back(Median(slopes));
    }
    const double slope = Median(medians);
    for (size_t i = 0; i < n; ++i) level[i] = d[i] - slope * x[i];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return level[a] < level[b]; });
  const size_t half = n / 2 + 1;
  size_t best = 0;
  for (size_t i = 0; i + half <= n; ++i) {
    if (level[order[i + half - 1]] - level[order[i]] < level[order[best + half - 1]] - level[order[best]]) best = i;
  }
  std::vector<bool> keep(n, false);
  for (size_t i = best; i < best + half; ++i) keep[order[i]] = true;
  for (int round = 0; round < 50; ++round) {
    Solve(x, d, keep, false, fit);
    if (try_drift) {
      Fit drifting;
      Solve(x, d, keep, true, drifting);
      if (keep_drift || DriftSupported(x, keep, drifting)) fit = drifting, fit.drift_fitted = true;
    }
    // Centre and spread of the kept residuals by median and MAD, so that the few late ones the
    // densest half still holds do not widen the cut.
    std::vector<double> residual(n), kept;
    for (size_t i = 0; i < n; ++i) {
      residual[i] = d[i] - fit.offset - fit.drift * x[i];
      if (keep[i]) kept.push_back(residual[i]);
    }
    const double centre = Median(kept);
    for (double& r : kept) r = std::abs(r - centre);
    const double limit = std::max(kOutlierSigmas * 1.4826 * Median(kept), kOutlierFloorNs);
    std::vector<bool> next(n);
    for (size_t i = 0; i < n; ++i) next[i] = std::abs(residual[i] - centre) <= limit;
    if (next == keep) break;
    keep = std::move(next);
  }
  return fit;
}

// Ranks of the inputs: by StepInfo.rank (the input's index when unknown), lowest first.
void GroupRanks(std::span<const ClockDigest> inputs, AlignmentReport& report) {
  std::map<int32_t, std::vector<size_t>> ranks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int32_t rank = inputs[i].rank >= 0 ? inputs[i].rank : static_cast<int32_t>(i);
    ranks[rank].push_back(i);
  }
  report.rank_of_input.assign(inputs.size(), 0);
  for (auto& [rank, members] : ranks) {
    RankClock clock;
    clock.rank = rank;
    clock.host = inputs[members.front()].host;
    for (size_t i : members) report.rank_of_input[i] = report.ranks.size();
    clock.inputs = std::move(members);
    report.ranks.push_back(std::move(clock));
  }
}

// Each rank's collectives: its inputs' merged (a rank's inputs in input order).
std::vector<Instances> RankInstances(std::span<const ClockDigest> inputs, const AlignmentReport& report) {
  std::vector<Instances> by_rank(report.ranks.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Instances& rank = by_rank[report.rank_of_input[i]];
    for (const auto& [key, instances] : inputs[i].collectives) MergeInstances(instances, rank[key]);
  }
  return by_rank;
}

// Ranks connected to the reference (rank index 0) through matches.
std::vector<bool> Connected(size_t ranks, const std::vector<Match>& matches) {
  std::vector<size_t> parent(ranks);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto find = [&](size_t r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  for (const Match& m : matches) {
    for (const auto& [r, end] : m.members) parent[find(r)] = find(m.members.front().first);
  }
  std::vector<bool> out(ranks);
  for (size_t r = 0; r < ranks; ++r) out[r] = find(r) == find(0);
  return out;
}

// Per match, the corrected ends of its members whose rank is fitted ("ready"), kept up to date
// as fits change: in the first pass a rank's target in a match (the ready others' mean or
// earliest) then costs O(1), where summing the others afresh for each member cost O(group
// size^2) per match. In the rounds after it, each match's consensus end (the members' median, or
// their earliest) is taken once per round from all its members: O(members) per match, a median by
// selection (std::nth_element, linear on average). Ends are kept relative to the match's first
// member's end: absolute ns since 1970 (1.7e18) are spaced 256 ns apart as doubles, relative ones
// (a few seconds at most, the clocks' offsets) to within 1e-6 ns.
class MatchEnds {
 public:
  MatchEnds(const std::vector<Match>& matches, const std::vector<Fit>& fits, const std::vector<int64_t>& anchor)
      : matches_(matches), fits_(fits), anchor_(anchor), first_(matches.size() + 1, 0), state_(matches.size()) {
    for (size_t m = 0; m < matches.size(); ++m) first_[m + 1] = first_[m] + matches[m].members.size();
    value_.assign(first_.back(), 0);
    ready_.assign(fits.size(), false);
  }
  MatchEnds(const MatchEnds&) = delete;
  MatchEnds& operator=(const MatchEnds&) = delete;

  bool ready(size_t rank) const { return ready_[rank]; }

  // Rank `rank` fitted (first time) or refitted: its ends in its matches (`mine`: match, slot).
  void Update(size_t rank, const std::vector<std::pair<size_t, size_t>>& mine) {
    const bool was_ready = ready_[rank];
    ready_[rank] = true;
    for (const auto& [m, k] : mine) {
      const double value = Corrected(m, k);
      State& state = state_[m];
      double& slot = value_[first_[m] + k];
      if (!was_ready) {
        ++state.count;
        state.sum += value;
        slot = value;
        if (matches_[m].earliest) Offer(m, k);
        continue;
      }
      const double before = slot;
      state.sum += value - before;
      slot = value;
      if (!matches_[m].earliest) continue;
      // A holder of the two earliest whose end moved later may have been passed: look again.
      const auto slot_k = static_cast<int32_t>(k);
      if ((slot_k == state.least || slot_k == state.second) && value > before) {
        Rescan(m);
      } else if (slot_k == state.second && state.least >= 0 && value < Value(m, state.least)) {
        std::swap(state.least, state.second);
      } else if (slot_k != state.least && slot_k != state.second) {
        Offer(m, k);
      }
    }
  }

  // Every match's sums afresh from the current fits: the running sums' rounding does not build
  // up over rounds.
  void Refresh() {
    for (size_t m = 0; m < matches_.size(); ++m) {
      State& state = state_[m];
      state = State{};
      for (size_t k = 0; k < matches_[m].members.size(); ++k) {
        if (!ready_[matches_[m].members[k].first]) continue;
        const double value = Corrected(m, k);
        value_[first_[m] + k] = value;
        ++state.count;
        state.sum += value;
      }
      if (matches_[m].earliest) Rescan(m);
    }
  }

  // The target of member k of match m: the other ready members' mean corrected end (earliest for
  // an `earliest` match), relative to the match's origin; false when no other member is ready.
  bool Others(size_t m, size_t k, double& target) const {
    const State& state = state_[m];
    const bool self = ready_[matches_[m].members[k].first];
    const int32_t others = state.count - (self ? 1 : 0);
    if (others <= 0) return false;
    if (matches_[m].earliest) {
      target = Value(m, static_cast<int32_t>(k) == state.least ? state.second : state.least);
    } else {
      target = (state.sum - (self ? value_[first_[m] + k] : 0)) / others;
    }
    return true;
  }

  // Every match's consensus end from all its members' corrected ends (call after Refresh, every
  // rank ready): what the members agree the collective ended at. Their median where ends scatter
  // both ways (a few late ends, up to half less one, do not move it; their mean would carry their
  // lateness to every member); their earliest for an `earliest` match (the collective's end: a
  // member is only ever late to record it). The member's own end counts too: every rank is then
  // fitted to the same end of the collective, so that fitting all of them at once moves them
  // toward one another (without it, two ranks fitted to each other would swap places each round).
  void Consensus() {
    consensus_.assign(matches_.size(), 0);
    std::vector<double> values;
    for (size_t m = 0; m < matches_.size(); ++m) {
      STEPSCOPE_CHECK(state_[m].count == static_cast<int32_t>(matches_[m].members.size()));  // every rank fitted
      if (matches_[m].earliest) {
        consensus_[m] = Value(m, state_[m].least);
        continue;
      }
      values.assign(value_.begin() + static_cast<std::ptrdiff_t>(first_[m]),
                    value_.begin() + static_cast<std::ptrdiff_t>(first_[m + 1]));
      consensus_[m] = Median(std::move(values));
    }
  }
  double consensus(size_t m) const { return consensus_[m]; }

  // Each match's members in the order of their corrected ends (every rank ready), for
  // OthersForResidual: one sort per match, O(members log members).
  void SortMembers() {
    order_.resize(value_.size());
    place_.resize(value_.size());
    for (size_t m = 0; m < matches_.size(); ++m) {
      const auto begin = order_.begin() + static_cast<std::ptrdiff_t>(first_[m]);
      const auto end = order_.begin() + static_cast<std::ptrdiff_t>(first_[m + 1]);
      std::iota(begin, end, size_t{0});
      std::sort(begin, end, [&](size_t a, size_t b) {
        return Value(m, static_cast<int32_t>(a)) < Value(m, static_cast<int32_t>(b));
      });
      for (size_t i = 0; i < matches_[m].members.size(); ++i) place_[first_[m] + order_[first_[m] + i]] = i;
    }
  }

  // The others' end that member k of match m is measured against for its residual (after
  // SortMembers): the others' median (the mean of the middle two for an even count), their
  // earliest for an `earliest` match; false when the match has no other member.
  bool OthersForResidual(size_t m, size_t k, double& target) const {
    const size_t n = matches_[m].members.size();
    if (n < 2) return false;
    if (matches_[m].earliest) return Others(m, k, target);
    // The j-th smallest of the others: the j-th of the sorted members, past k's own place.
    const size_t own = place_[first_[m] + k];
    auto other = [&](size_t j) { return Value(m, static_cast<int32_t>(order_[first_[m] + (j < own ? j : j + 1)])); };
    const size_t others = n - 1, mid = others / 2;
    target = others % 2 == 1 ? other(mid) : (other(mid - 1) + other(mid)) / 2;
    return true;
  }

  // Member k's own end, relative to the match's origin.
  double Own(size_t m, size_t k) const {
    return static_cast<double>(matches_[m].members[k].second - matches_[m].members.front().second);
  }

 private:
  struct State {
    double sum = 0;        // of the ready members' corrected ends
    int32_t count = 0;     // ready members
    int32_t least = -1, second = -1;  // earliest matches: the slots of the two earliest ends
  };

  double Corrected(size_t m, size_t k) const {
    const auto [rank, end] = matches_[m].members[k];
    return Own(m, k) + fits_[rank].offset + fits_[rank].drift * static_cast<double>(end - anchor_[rank]);
  }
  double Value(size_t m, int32_t slot) const { return value_[first_[m] + static_cast<size_t>(slot)]; }

  // Slot k (ready, value current) competes for the two earliest.
  void Offer(size_t m, size_t k) {
    State& state = state_[m];
    const auto slot = static_cast<int32_t>(k);
    const double value = Value(m, slot);
    if (state.least < 0 || value < Value(m, state.least)) {
      state.second = state.least;
      state.least = slot;
    } else if (state.second < 0 || value < Value(m, state.second)) {
      state.second = slot;
    }
  }
  void Rescan(size_t m) {
    State& state = state_[m];
    state.least = state.second = -1;
    for (size_t k = 0; k < matches_[m].members.size(); ++k) {
      if (ready_[matches_[m].members[k].first]) Offer(m, k);
    }
  }

  const std::vector<Match>& matches_;
  const std::vector<Fit>& fits_;
  const std::vector<int64_t>& anchor_;
  std::vector<size_t> first_;  // match m's members are value_[first_[m], first_[m + 1])
  std::vector<double> value_;  // each ready member's corrected end, relative to its match's origin
  std::vector<State> state_;
  std::vector<bool> ready_;
  std::vector<double> consensus_;  // per match, after Consensus()
  // After SortMembers, per match (from first_[m]): its members' slots by corrected end, and each
  // slot's place in that order.
  std::vector<size_t> order_, place_;
};

// Every rank's correction re-expressed on the reference's corrected clock, so that the reference's
// is zero: with C_r(t) = t + offset_r + drift_r (t - anchor_r) each rank's corrected time, the
// new one is C_0^-1(C_r(t)), still linear (all ranks' relative placement unchanged).
void HoldReference(const std::vector<int64_t>& anchor, std::vector<Fit>& fits) {
  const double offset = fits[0].offset, drift = fits[0].drift;
  for (size_t r = 1; r < fits.size(); ++r) {
    const auto since = static_cast<double>(anchor[r] - anchor[0]);
    fits[r].offset = (fits[r].offset - offset - drift * since) / (1 + drift);
    fits[r].drift = (fits[r].drift - drift) / (1 + drift);
  }
  fits[0].offset = fits[0].drift = 0;
}

// Solves every rank's correction (see the header); false with a note when some rank has no
// match joining it to the reference.
bool SolveCollectives(std::span<const ClockDigest> inputs, AlignmentReport& report) {
  const size_t n = report.ranks.size();
  const std::vector<Instances> by_rank = RankInstances(inputs, report);
  const std::vector<Match> matches = MatchCollectives(by_rank);
  if (matches.empty()) {
    report.notes.push_back("collectives: no collective is found on two ranks or more");
    return false;
  }
  const std::vector<bool> connected = Connected(n, matches);
  std::string missing;
  for (size_t r = 0; r < n; ++r) {
    if (!connected[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(report.ranks[r].rank);
  }
  if (!missing.empty()) {
    report.notes.push_back("collectives: no collective of rank(s) " + missing + " matches one of rank " +
                           std::to_string(report.ranks[0].rank) + "'s group");
    return false;
  }
  // Per rank, its matches (index into `matches`, its member slot), and its anchor.
  std::vector<std::vector<std::pair<size_t, size_t>>> mine(n);
  std::vector<int64_t> anchor(n, INT64_MAX);
  for (size_t m = 0; m < matches.size(); ++m) {
    for (size_t k = 0; k < matches[m].members.size(); ++k) {
      const auto [r, end] = matches[m].members[k];
      mine[r].emplace_back(m, k);
      anchor[r] = std::min(anchor[r], end);
    }
  }
  std::vector<Fit> fits(n);
  // Only ranks already fitted count (all of them once the first pass is done).
  MatchEnds ends(matches, fits, anchor);
  ends.Update(0, mine[0]);
  // Each rank's differences to the others' corrected ends in its matches.
  auto differences = [&](size_t r, std::vector<double>& x, std::vector<double>& d) {
    x.clear(), d.clear();
    for (const auto& [m, k] : mine[r]) {
      double others = 0;
      if (!ends.Others(m, k, others)) continue;
      x.push_back(static_cast<double>(matches[m].members[k].second - anchor[r]));
      d.push_back(others - ends.Own(m, k));
    }
  };
  std::vector<double> x, d;
  // First pass outward from the reference, each rank fitted against those fitted before it, so no
  // rank starts from the others' raw clocks (seconds apart).
  std::vector<size_t> queue = {0};
  for (size_t head = 0; head < queue.size(); ++head) {
    for (const auto& [m, k] : mine[queue[head]]) {
      for (const auto& [r, end] : matches[m].members) {
        if (ends.ready(r)) continue;
        differences(r, x, d);
        fits[r] = RobustFit(x, d, true);
        ends.Update(r, mine[r]);
        queue.push_back(r);
      }
    }
  }
  // Then every rank, the reference too, refitted at once to each match's consensus end, and the
  // reference's correction taken out of all of them: a shift common to every rank (the consensus
  // is the collective's end plus the members' typical lateness) moves the reference with the
  // others and cancels, where holding the reference still let the others follow one another
  // round after round. The rounds stop when no rank's correction relative to the reference moves
  // by kSettledNs.
  std::vector<double> span(n, 0);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& [m, k] : mine[r]) span[r] = std::max(span[r], static_cast<double>(matches[m].members[k].second - anchor[r]));
  }
  // A drift once supported stays fitted in the rounds after: one near the rules' bound (moving the
  // clock by about 3 residuals) would otherwise come and go as the consensus it is fitted to moves
  // by a little with it, and the rounds would never settle.
  // (The first pass's choices are not kept: they were made against the ranks fitted before.)
  // Each round's refits and the residuals are independent per rank (they read the consensus, each
  // writes its own rank's entries): split over the cores, rank r in part r % parts, with the same
  // results on any number of them.
  const uint32_t parts = n >= kRanksPerPart ? std::min<uint32_t>(PartsPerCore(8), static_cast<uint32_t>(n / kRanksPerPart)) : 1;
  auto for_each_rank = [&](const auto& fit_rank) {
    RunParts(parts, [&](uint32_t part) {
      std::vector<double> part_x, part_d;
      for (size_t r = part; r < n; r += parts) fit_rank(r, part_x, part_d);
    });
  };
  std::vector<char> drifting(n, 0);  // not vector<bool>: parts write neighbouring ranks at once
  std::vector<Fit> refitted(n);
  for (int round = 0; round < kMaxRounds; ++round) {
    report.solve_rounds = round + 1;
    ends.Refresh();
    ends.Consensus();
    for_each_rank([&](size_t r, std::vector<double>& rx, std::vector<double>& rd) {
      rx.clear(), rd.clear();
      for (const auto& [m, k] : mine[r]) {
        rx.push_back(static_cast<double>(matches[m].members[k].second - anchor[r]));
        rd.push_back(ends.consensus(m) - ends.Own(m, k));
      }
      refitted[r] = RobustFit(rx, rd, true, drifting[r] != 0);
      drifting[r] = drifting[r] != 0 || refitted[r].drift_fitted;
    });
    HoldReference(anchor, refitted);
    double moved = 0;
    for (size_t r = 1; r < n; ++r) {
      moved = std::max({moved, std::abs(refitted[r].offset - fits[r].offset),
                        std::abs((refitted[r].drift - fits[r].drift) * span[r])});
    }
    fits = refitted;
    if (moved < kSettledNs) break;
  }
  ends.Refresh();
  ends.SortMembers();
  for_each_rank([&](size_t r, std::vector<double>& rx, std::vector<double>& rd) {
    // Each rank's residual, the reference's too, against the others once corrected.
    rx.clear(), rd.clear();
    for (const auto& [m, k] : mine[r]) {
      double others = 0;
      if (!ends.OthersForResidual(m, k, others)) continue;
      const double at = static_cast<double>(matches[m].members[k].second - anchor[r]);
      rx.push_back(at);
      rd.push_back(others - ends.Own(m, k) - fits[r].offset - fits[r].drift * at);
    }
    const Fit rest = RobustFit(rx, rd, false);
    RankClock& clock = report.ranks[r];
    clock.offset_ns = std::llround(fits[r].offset);
    clock.drift_ppm = fits[r].drift * 1e6;
    clock.anchor_ns = anchor[r];
    clock.matched_collectives = static_cast<int64_t>(mine[r].size());
    clock.outliers = rest.outliers;
    // The distance to the others after correction, the mean left over included.
    clock.residual_ns = std::llround(std::sqrt(rest.rms * rest.rms + rest.offset * rest.offset));
  });
  for (size_t i = 0; i < inputs.size(); ++i) {
    report.input_alignment[i] = report.rank_of_input[i] == 0 ? "reference" : "collectives";
  }
  return true;
}

bool OneHost(std::span<const ClockDigest> inputs) {
  for (const ClockDigest& input : inputs) {
    if (input.host.empty() || input.host != inputs.front().host) return false;
  }
  return true;
}

// The barrier (merge.h AlignClocks). A trace of another host without a sync point keeps its own
// clock ("unaligned", as the clock method would leave it), with a note.
void ApplyBarrier(std::span<const ClockDigest> inputs, AlignmentReport& report) {
  std::vector<ClockStamp> stamps;
  for (const ClockDigest& input : inputs) stamps.push_back({input.rank, input.step, input.host, input.clock_sync_ns});
  const std::vector<ClockAlignment> barrier = AlignClocks(std::span<const ClockStamp>(stamps));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (barrier[i].alignment == "unaligned") {
      report.notes.push_back("barrier: " + inputs[i].source +
                             " is from another host and records no clock sync point: its clock is not aligned");
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    report.input_alignment[i] = barrier[i].alignment;
    RankClock& clock = report.ranks[report.rank_of_input[i]];
    if (clock.inputs.front() == i) clock.offset_ns = barrier[i].offset_ns;
  }
}

void ApplyClock(AlignmentReport& report) {
  for (size_t i = 0; i < report.rank_of_input.size(); ++i) {
    report.input_alignment[i] = report.rank_of_input[i] == 0 ? "reference" : "clock";
  }
}

}  // namespace

std::string_view AlignMethodName(AlignMethod method) {
  switch (method) {
    case AlignMethod::kAuto: return "auto";
    case AlignMethod::kCollectives: return "collectives";
    case AlignMethod::kBarrier: return "barrier";
    case AlignMethod::kClock: return "clock";
  }
  return "auto";
}

std::optional<AlignMethod> ParseAlignMethod(std::string_view name) {
  for (AlignMethod m : {AlignMethod::kAuto, AlignMethod::kCollectives, AlignMethod::kBarrier, AlignMethod::kClock}) {
    if (AlignMethodName(m) == name) return m;
  }
  return std::nullopt;
}

int64_t RankClock::CorrectionAt(int64_t absolute_ns) const {
  if (drift_ppm == 0) return offset_ns;
  return offset_ns + std::llround(drift_ppm * 1e-6 * static_cast<double>(absolute_ns - anchor_ns));
}

bool CollectiveKey::operator<(const CollectiveKey& other) const {
  const bool later = !earliest, other_later = !other.earliest;
  return std::tie(later, group, name, step) < std::tie(other_later, other.group, other.name, other.step);
}

ClockDigest DigestClock(const Trace& trace, size_t input) {
  ClockDigest digest;
  digest.source = trace.source_path();
  digest.rank = trace.step_info().rank;
  digest.step = trace.step_info().step;
  digest.host = trace.step_info().host;
  digest.clock_sync_ns = trace.step_info().clock_sync_ns;
  const trace::Trace* one = &trace;
  const auto windows = NumberedStepWindows(std::span<const Trace>(one, 1), std::nullopt, StepWindowing::kEveryStep);
  AddCollectives(trace, input, windows.front(), digest.collectives);
  return digest;
}

AlignmentReport AlignRanks(std::span<const Trace> traces, AlignMethod method) {
  std::vector<ClockDigest> inputs;
  inputs.reserve(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) inputs.push_back(DigestClock(traces[i], i));
  return AlignDigests(inputs, method);
}

AlignmentReport AlignDigests(std::span<const ClockDigest> inputs, AlignMethod method) {
  AlignmentReport report;
  GroupRanks(inputs, report);
  report.input_alignment.assign(inputs.size(), "reference");
  if (report.ranks.size() < 2) {  // one clock: nothing to align
    report.method = AlignMethod::kClock;
    return report;
  }
  if (method == AlignMethod::kAuto && OneHost(inputs)) {
    report.notes.push_back("clock: every rank records host " + inputs.front().host +
                           ", whose clock they share");
    method = AlignMethod::kClock;
  }
  // The order of fallback: collectives, barrier, clock.
  if (method == AlignMethod::kAuto || method == AlignMethod::kCollectives) {
    report.method = AlignMethod::kCollectives;
    if (SolveCollectives(inputs, report)) return report;
    method = AlignMethod::kBarrier;
  }
  if (method == AlignMethod::kBarrier) {
    report.method = AlignMethod::kBarrier;
    ApplyBarrier(inputs, report);
    return report;
  }
  report.method = AlignMethod::kClock;
  ApplyClock(report);
  return report;
}

std::vector<MatchedCollective> MatchDigestCollectives(std::span<const ClockDigest> inputs,
                                                      const AlignmentReport& report) {
  const std::vector<Instances> by_rank = RankInstances(inputs, report);
  std::vector<MatchedCollective> out;
  for (const Match& match : MatchCollectives(by_rank)) {
    MatchedCollective collective;
    collective.name = match.key->name;
    collective.step = match.key->step;
    for (size_t k = 0; k < match.members.size(); ++k) {
      const Instance& instance = match.instances[k];
      collective.members.push_back({match.members[k].first, instance.input, instance.slice, instance.start_ns,
                                    instance.end_ns});
    }
    out.push_back(std::move(collective));
  }
  return out;
}

std::vector<MatchedCollective> MatchRankCollectives(std::span<const Trace> traces, const AlignmentReport& report) {
  std::vector<ClockDigest> inputs;
  for (size_t i = 0; i < traces.size(); ++i) inputs.push_back(DigestClock(traces[i], i));
  return MatchDigestCollectives(inputs, report);
}

}  // namespace stepscope::analysis
