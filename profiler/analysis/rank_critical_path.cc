// The critical path of a step across ranks (rank_critical_path.h): each rank's single-rank path,
// cut at the collectives where it waited for a later rank and continued on that rank. The walk
// reads the ranks only through their digests (RankPathDigest), so that it runs the same over
// traces at hand, over traces read one at a time, and over digests gathered from MPI processes.
#include "profiler/analysis/rank_critical_path.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_set>

#include "base/check.h"

namespace stepscope::analysis {

using trace::Trace;

namespace {

// ---- a rank's answers ------------------------------------------------------------------------

// One of the input's collectives in a step, on its own time.
struct StepCollective {
  uint32_t slice = 0;
  int64_t start_ns = 0, end_ns = 0;
  bool annotation = false;  // not a node of the graph (gloo's spans): a wait of the path covers it
};

// `path` as FindEachBefore's kTimesOnly gives it: the elements kept are named from `trace`.
RankPathSummary Summarise(const Trace& trace, const CriticalPath& path, std::span<const int64_t> gap_starts) {
  RankPathSummary s;
  s.empty = path.elements.empty();
  s.begin_ns = path.begin_ns;
  s.end_ns = path.end_ns;
  s.length_ns = path.length_ns;
  std::copy(std::begin(path.bound_ns), std::end(path.bound_ns), s.bound_ns);
  s.bound_by = path.bound_by;
  s.slices = static_cast<int64_t>(path.elements.size());
  std::map<uint32_t, GapLongestOp> longest;  // by gap
  for (uint32_t k = 0; k < path.elements.size(); ++k) {
    const PathElement& e = path.elements[k];
    const auto gap = static_cast<uint32_t>(std::upper_bound(gap_starts.begin(), gap_starts.end(), e.start_ns) -
                                           gap_starts.begin());
    auto [it, first] = longest.try_emplace(gap);
    if (first || e.held_ns > it->second.held_ns) it->second = {.gap = gap, .element = k, .held_ns = e.held_ns};
  }
  for (auto& [gap, op] : longest) {
    const trace::Slice& slice = trace.slices()[path.elements[op.element].slice];
    op.op_name = std::string(trace.str(trace.slice_name(slice)));
    const std::string_view op_type = trace.str(trace.slice_op_type(slice));
    op.op = op_type.empty() ? op.op_name : std::string(op_type);
    s.longest.push_back(std::move(op));
  }
  return s;
}

// The collectives of `collectives` that `path` passes through: their slice is on the path, or, for
// work that is not a node of the graph (gloo's spans), the path waited through their end.
std::vector<uint32_t> Passes(const CriticalPath& path, std::span<const StepCollective> collectives) {
  std::unordered_set<uint32_t> on_path;
  // The path's waits [start - wait, start], by their end: along the path they do not overlap.
  std::vector<std::pair<int64_t, int64_t>> waits;
  for (const PathElement& e : path.elements) {
    on_path.insert(e.slice);
    if (e.wait_ns > 0) waits.emplace_back(e.start_ns, e.start_ns - e.wait_ns);
  }
  std::sort(waits.begin(), waits.end());
  std::vector<uint32_t> passes;
  for (const StepCollective& c : collectives) {
    bool passed = on_path.contains(c.slice);
    if (!passed && c.annotation) {
      const auto wait = std::lower_bound(waits.begin(), waits.end(), std::pair<int64_t, int64_t>{c.end_ns, INT64_MIN});
      passed = wait != waits.end() && wait->second <= c.end_ns;
    }
    if (passed) passes.push_back(c.slice);
  }
  std::sort(passes.begin(), passes.end());
  passes.erase(std::unique(passes.begin(), passes.end()), passes.end());
  return passes;
}

// The op that held `path` longest among its elements starting in [from, to) (the trace's time;
// `from` INT64_MIN or a gap start, `to` a gap start), and its slice's name; empty when none.
std::pair<std::string, std::string> LongestOp(const RankPathSummary& path, std::span<const int64_t> gap_starts,
                                              int64_t from, int64_t to) {
  // Elements in [gap_starts[a], gap_starts[b]) are those of gaps a + 1 .. b.
  const auto gap_of = [&](int64_t at) {
    return static_cast<uint32_t>(std::lower_bound(gap_starts.begin(), gap_starts.end(), at) - gap_starts.begin());
  };
  const uint32_t first = from == INT64_MIN ? 0 : gap_of(from) + 1, last = gap_of(to);
  const GapLongestOp* longest = nullptr;
  for (const GapLongestOp& op : path.longest) {
    if (op.gap < first || op.gap > last) continue;
    // The first of equals in path order, as one pass over the elements finds it.
    if (longest == nullptr || op.held_ns > longest->held_ns ||
        (op.held_ns == longest->held_ns && op.element < longest->element)) {
      longest = &op;
    }
  }
  if (longest == nullptr) return {};
  return {longest->op, longest->op_name};
}

// ---- matching from digests ---------------------------------------------------------------------

using Instances = std::map<CollectiveKey, std::vector<CollectiveInstance>>;

// MatchRankCollectives (clock_align.h) from the inputs' clock digests: each rank's instances (its
// inputs' merged, the one that ends last of the same instance), matched per key where two ranks
// or more agree on how many there are, in key order then instance order.
std::vector<MatchedCollective> MatchDigestCollectives(std::span<const ClockDigest> inputs,
                                                      const AlignmentReport& report) {
  std::vector<Instances> by_rank(report.ranks.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Instances& rank = by_rank[report.rank_of_input[i]];
    for (const auto& [key, instances] : inputs[i].collectives) {
      std::vector<CollectiveInstance>& merged = rank[key];
      if (merged.size() < instances.size()) merged.resize(instances.size());
      for (size_t k = 0; k < instances.size(); ++k) {
        if (instances[k].end_ns > merged[k].end_ns) merged[k] = instances[k];
      }
    }
  }
  std::map<CollectiveKey, std::vector<size_t>> holders;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    for (const auto& [key, ends] : by_rank[r]) holders[key].push_back(r);
  }
  std::vector<MatchedCollective> out;
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
      MatchedCollective collective;
      collective.name = key.name;
      collective.step = key.step;
      for (size_t r : ranks) {
        const std::vector<CollectiveInstance>& instances = by_rank[r].at(key);
        if (instances.size() != count) continue;
        const CollectiveInstance& instance = instances[k];
        collective.members.push_back({r, instance.input, instance.slice, instance.start_ns, instance.end_ns});
      }
      out.push_back(std::move(collective));
    }
  }
  return out;
}

// ---- the walk ----------------------------------------------------------------------------------

// Puts the inputs on the aligned clock and walks one step's ranks, asking each its digest.
class StepWalker {
 public:
  StepWalker(std::span<const RankPathDigest> paths, const AlignmentReport& alignment)
      : paths_(paths), alignment_(alignment) {}

  // An input's time (ns since its epoch) on the aligned clock (absolute ns).
  int64_t Aligned(size_t input, int64_t local) const {
    const int64_t absolute = paths_[input].epoch_ns + local;
    return absolute + alignment_.CorrectionAt(input, absolute);
  }

  int32_t RankOf(size_t input) const { return alignment_.ranks[alignment_.rank_of_input[input]].rank; }

  // The path across ranks of one step: its windows by input, its matched collectives.
  CrossRankPath Walk(int64_t step, const std::map<size_t, const RankStepDigest*>& windows,
                     const std::vector<const MatchedCollective*>& collectives) const;

 private:
  using Windows = std::map<size_t, const RankStepDigest*>;
  struct Join {
    const MatchedCollective* collective = nullptr;
    const CollectiveMember* own = nullptr;
    const CollectiveMember* last = nullptr;  // the last to arrive
  };
  int64_t Local(const CollectiveMember& m, int64_t absolute) const { return absolute - paths_[m.input].epoch_ns; }
  int64_t Arrival(const CollectiveMember& m) const { return Aligned(m.input, Local(m, m.start_ns)); }

  // The latest collective that the path to `by` (on `input`) passes through and that another
  // rank reached later; collective null when none.
  Join LatestJoin(size_t input, const RankPathAnswer& answer, int64_t by,
                  const std::vector<const MatchedCollective*>& collectives, const Windows& windows) const;

  // The collectives that `segment`'s rank reached last, arriving by `limit` (aligned), in time order.
  void AddHolds(const RankSegment& segment, const RankStepDigest& window, const RankPathSummary& path, int64_t limit,
                const std::vector<const MatchedCollective*>& collectives, const Windows& windows,
                std::vector<RankHold>& holds) const;

  std::span<const RankPathDigest> paths_;
  const AlignmentReport& alignment_;
};

const RankPathAnswer& AnswerFor(const RankStepDigest& window, int64_t by) {
  const auto it = std::lower_bound(window.answers.begin(), window.answers.end(), by,
                                   [](const RankPathAnswer& a, int64_t at) { return a.by_ns < at; });
  // The digest answers every instant the walk can ask (DigestRankPaths).
  STEPSCOPE_CHECK(it != window.answers.end() && it->by_ns == by);
  return *it;
}

const RankPathSummary& FromEnd(const RankPathAnswer& answer, int64_t from) {
  const auto it = std::lower_bound(answer.from_end.begin(), answer.from_end.end(), from,
                                   [](const auto& a, int64_t at) { return a.first < at; });
  STEPSCOPE_CHECK(it != answer.from_end.end() && it->first == from);
  return it->second;
}

StepWalker::Join StepWalker::LatestJoin(size_t input, const RankPathAnswer& answer, int64_t by,
                                        const std::vector<const MatchedCollective*>& collectives,
                                        const Windows& windows) const {
  Join best;
  int64_t best_end = INT64_MIN;
  for (const MatchedCollective* c : collectives) {
    const CollectiveMember* own = nullptr;
    const CollectiveMember* last = nullptr;
    for (const CollectiveMember& m : c->members) {
      if (m.input == input) own = &m;
      if (windows.contains(m.input) && (last == nullptr || Arrival(m) > Arrival(*last))) last = &m;
    }
    if (own == nullptr || last == nullptr || last->input == input) continue;
    const int64_t own_end = Local(*own, own->end_ns);
    if (own_end > by || own_end <= best_end) continue;
    if (Arrival(*last) <= Arrival(*own)) continue;
    if (!std::binary_search(answer.passes.begin(), answer.passes.end(), own->slice)) continue;
    best = {c, own, last};
    best_end = own_end;
  }
  return best;
}

void StepWalker::AddHolds(const RankSegment& segment, const RankStepDigest& window, const RankPathSummary& path,
                          int64_t limit, const std::vector<const MatchedCollective*>& collectives,
                          const Windows& windows, std::vector<RankHold>& holds) const {
  std::vector<std::pair<const MatchedCollective*, const CollectiveMember*>> late;
  for (const MatchedCollective* c : collectives) {
    const CollectiveMember* own = nullptr;
    int64_t others = INT64_MIN;  // the last arrival of the other ranks
    for (const CollectiveMember& m : c->members) {
      if (m.input == segment.input) {
        own = &m;
      } else if (windows.contains(m.input)) {
        others = std::max(others, Arrival(m));
      }
    }
    if (own == nullptr || others == INT64_MIN) continue;
    const int64_t arrival = Arrival(*own);
    if (arrival > others && arrival >= segment.begin_ns && arrival <= limit) late.emplace_back(c, own);
  }
  std::sort(late.begin(), late.end(), [](const auto& a, const auto& b) { return a.second->start_ns < b.second->start_ns; });
  int64_t from = INT64_MIN;  // the previous hold's arrival on the trace's time
  for (const auto& [c, own] : late) {
    RankHold hold;
    hold.rank = RankOf(segment.input);
    hold.collective = c->name;
    hold.arrival_ns = Arrival(*own);
    int64_t others = INT64_MIN;
    for (const CollectiveMember& m : c->members) {
      if (&m != own && windows.contains(m.input)) others = std::max(others, Arrival(m));
    }
    hold.late_ns = hold.arrival_ns - others;
    const int64_t own_start = Local(*own, own->start_ns);
    std::tie(hold.op, hold.op_name) = LongestOp(path, window.gap_starts, from, own_start);
    from = own_start;
    holds.push_back(std::move(hold));
  }
}

CrossRankPath StepWalker::Walk(int64_t step, const Windows& windows,
                               const std::vector<const MatchedCollective*>& collectives) const {
  CrossRankPath out;
  out.step = step;
  // The rank whose work ends last.
  size_t input = windows.begin()->first;
  int64_t end = INT64_MIN, by = 0;  // aligned; `by` on the input's own time
  for (const auto& [i, w] : windows) {
    if (!w->has_work) continue;
    if (Aligned(i, w->whole_end_ns) > end) end = Aligned(i, w->whole_end_ns), input = i, by = w->whole_end_ns;
  }
  if (end == INT64_MIN) return out;
  std::vector<RankSegment> segments;  // latest first
  std::vector<const RankPathSummary*> summaries;  // each segment's
  std::vector<RankWait> waits;
  for (size_t guard = 0; guard <= collectives.size(); ++guard) {
    const RankStepDigest& w = *windows.at(input);
    const RankPathAnswer& answer = AnswerFor(w, by);
    const RankPathSummary* path = &answer.path;
    const Join join = LatestJoin(input, answer, by, collectives, windows);
    const int64_t arrival = join.collective ? Arrival(*join.last) : 0;
    int64_t from = w.begin_ns;
    // The walk goes back in time only.
    if (join.collective != nullptr && arrival < Aligned(input, by)) {
      const int64_t own_end = Local(*join.own, join.own->end_ns);
      path = &FromEnd(answer, own_end);
      from = std::max(w.begin_ns, own_end);
      RankWait wait;
      wait.rank = RankOf(input);
      wait.waited_for = RankOf(join.last->input);
      wait.collective = join.collective->name;
      wait.arrival_ns = arrival;
      wait.wait_ns = arrival - Arrival(*join.own);
      wait.transfer_ns = std::max<int64_t>(0, Aligned(input, own_end) - arrival);
      waits.push_back(std::move(wait));
    }
    RankSegment segment;
    segment.rank = RankOf(input);
    segment.input = input;
    segment.begin_ns = path->empty ? Aligned(input, by) : Aligned(input, path->begin_ns);
    segment.end_ns = path->empty ? Aligned(input, by) : Aligned(input, path->end_ns);
    segment.length_ns = path->length_ns;
    segment.bound_by = path->bound_by;
    segment.slices = path->slices;
    segment.from_ns = from;
    segment.until_ns = w.end_ns;
    segment.by_ns = by;
    segments.push_back(std::move(segment));
    summaries.push_back(path);
    if (join.collective == nullptr || !(arrival < Aligned(input, by))) break;
    input = join.last->input;
    by = Local(*join.last, join.last->start_ns);
  }
  if (segments.size() > waits.size() + 1) segments.resize(waits.size() + 1), summaries.resize(waits.size() + 1);
  std::reverse(segments.begin(), segments.end());
  std::reverse(summaries.begin(), summaries.end());
  std::reverse(waits.begin(), waits.end());
  out.begin_ns = segments.front().begin_ns;
  out.end_ns = end;
  out.length_ns = end - out.begin_ns;
  int64_t accounted = 0;
  for (const RankPathSummary* s : summaries) {
    for (int b = 0; b < kPathBounds; ++b) out.bound_ns[b] += s->bound_ns[b];
    accounted += s->length_ns;
  }
  for (const RankWait& w : waits) out.transfer_ns += w.transfer_ns;
  out.gap_ns = out.length_ns - accounted - out.transfer_ns;
  for (size_t k = 0; k < segments.size(); ++k) {
    AddHolds(segments[k], *windows.at(segments[k].input), *summaries[k],
             k < waits.size() ? waits[k].arrival_ns : segments[k].end_ns, collectives, windows, out.holds);
  }
  for (size_t k = 0; k < out.holds.size(); ++k) {
    if (out.held_by < 0 || out.holds[k].late_ns > out.holds[static_cast<size_t>(out.held_by)].late_ns) {
      out.held_by = static_cast<int32_t>(k);
    }
  }
  for (int b = 1; b < kPathBounds; ++b) {
    if (out.bound_ns[b] > out.bound_ns[static_cast<int>(out.bound_by)]) out.bound_by = static_cast<PathBound>(b);
  }
  out.segments = std::move(segments);
  out.waits = std::move(waits);
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> NumberRecordedSteps(std::span<const std::vector<int64_t>> recorded) {
  std::vector<std::vector<int64_t>> numbers(recorded.size());
  int64_t order = 0;  // the place of the next step among all the inputs' steps
  for (size_t i = 0; i < recorded.size(); ++i) {
    for (int64_t step : recorded[i]) numbers[i].push_back(step >= 0 ? step : order), ++order;
  }
  return numbers;
}

RankPathDigest DigestRankPaths(const Trace& trace, const ClockDigest& clock) {
  RankPathDigest digest;
  digest.epoch_ns = trace.epoch_ns();
  digest.span_begin_ns = trace.span_begin_ns();
  const CriticalPathFinder finder(trace);
  constexpr auto kTimesOnly = CriticalPathFinder::PathDetail::kTimesOnly;
  const Trace* one = &trace;
  const auto windows = NumberedStepWindows({one, 1}, std::nullopt, StepWindowing::kEveryStep);
  for (const StepWindow& w : windows.front()) {
    RankStepDigest step;
    step.step = w.step;
    step.begin_ns = w.begin_ns;
    step.end_ns = w.end_ns;
    std::vector<StepCollective> collectives;
    for (const auto& [key, instances] : clock.collectives) {
      if (key.step != w.step) continue;
      for (const CollectiveInstance& i : instances) {
        collectives.push_back({i.slice, i.start_ns - trace.epoch_ns(), i.end_ns - trace.epoch_ns(),
                               trace::IsAnnotationOrSync(trace.slices()[i.slice].kind)});
        step.gap_starts.push_back(i.start_ns - trace.epoch_ns());
      }
    }
    std::sort(step.gap_starts.begin(), step.gap_starts.end());
    step.gap_starts.erase(std::unique(step.gap_starts.begin(), step.gap_starts.end()), step.gap_starts.end());
    // The instants the walk can ask: the end of the step's work (where it starts) and the rank's
    // arrivals at its collectives (where it comes from a rank that waited for this one). Each
    // graph is built once: the window's for every instant, then one from each collective end.
    std::vector<int64_t> instants = step.gap_starts;
    instants.push_back(INT64_MAX);  // the window's path (ComputeCriticalPath's), for its end
    finder.FindEachBefore(w.begin_ns, w.end_ns, instants, [&](int64_t by, const CriticalPath& path) {
      if (by != INT64_MAX) {
        step.answers.push_back({.by_ns = by, .path = Summarise(trace, path, step.gap_starts),
                                .passes = Passes(path, collectives), .from_end = {}});
        return;
      }
      step.has_work = !path.elements.empty();
      step.whole_end_ns = path.end_ns;
      // The walk starts at the end of the step's work: the path to that instant is this one.
      if (step.has_work && !std::binary_search(step.gap_starts.begin(), step.gap_starts.end(), path.end_ns)) {
        step.answers.push_back({.by_ns = path.end_ns, .path = Summarise(trace, path, step.gap_starts),
                                .passes = Passes(path, collectives), .from_end = {}});
      }
    }, kTimesOnly);
    std::sort(step.answers.begin(), step.answers.end(),
              [](const RankPathAnswer& a, const RankPathAnswer& b) { return a.by_ns < b.by_ns; });
    // Where the walk can leave for a later rank: a collective the path to `by` passes that ended by
    // `by`; the path is then found again from that end. Per end, the instants that need it.
    std::map<int64_t, std::vector<size_t>> from_ends;  // collective end -> answers
    for (size_t a = 0; a < step.answers.size(); ++a) {
      const RankPathAnswer& answer = step.answers[a];
      for (const StepCollective& c : collectives) {
        if (c.end_ns <= answer.by_ns && std::binary_search(answer.passes.begin(), answer.passes.end(), c.slice)) {
          std::vector<size_t>& needing = from_ends[c.end_ns];
          if (needing.empty() || needing.back() != a) needing.push_back(a);
        }
      }
    }
    for (const auto& [from, needing] : from_ends) {
      std::vector<int64_t> bys;
      for (size_t a : needing) bys.push_back(step.answers[a].by_ns);
      size_t next = 0;
      finder.FindEachBefore(std::max(w.begin_ns, from), w.end_ns, bys, [&](int64_t, const CriticalPath& path) {
        step.answers[needing[next++]].from_end.emplace_back(from, Summarise(trace, path, step.gap_starts));
      }, kTimesOnly);
    }
    digest.steps.push_back(std::move(step));
  }
  return digest;
}

CrossRankPaths CombineCrossRankPaths(std::span<const ClockDigest> clocks, std::span<const RankPathDigest> paths,
                                     AlignMethod method, const StepRange& range) {
  CrossRankPaths out;
  out.alignment = AlignDigests(clocks, method);
  if (out.alignment.ranks.size() < 2) return out;  // one rank: nothing to join
  const std::vector<MatchedCollective> matched = MatchDigestCollectives(clocks, out.alignment);
  // Per recorded step, each input's window (a rank's trace holds a step once), numbered and
  // selected as NumberedStepWindows does.
  std::vector<std::vector<int64_t>> recorded(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    for (const RankStepDigest& s : paths[i].steps) recorded[i].push_back(s.step);
  }
  const std::vector<std::vector<int64_t>> numbers = NumberRecordedSteps(recorded);
  std::map<int64_t, std::map<size_t, const RankStepDigest*>> steps;
  for (size_t i = 0; i < paths.size(); ++i) {
    for (size_t k = 0; k < paths[i].steps.size(); ++k) {
      if (range && (numbers[i][k] < range->first || numbers[i][k] > range->second)) continue;
      steps[paths[i].steps[k].step].emplace(i, &paths[i].steps[k]);
    }
  }
  const StepWalker walker(paths, out.alignment);
  out.origin_ns = INT64_MAX;
  for (size_t i = 0; i < paths.size(); ++i) out.origin_ns = std::min(out.origin_ns, walker.Aligned(i, paths[i].span_begin_ns));
  for (const auto& [step, inputs] : steps) {
    std::vector<const MatchedCollective*> collectives;
    for (const MatchedCollective& c : matched) {
      if (c.step == step) collectives.push_back(&c);
    }
    out.steps.push_back(walker.Walk(step, inputs, collectives));
  }
  return out;
}

CrossRankPaths ComputeCrossRankPaths(std::span<const Trace> traces, AlignMethod method, const StepRange& range) {
  std::vector<ClockDigest> clocks;
  std::vector<RankPathDigest> digests;
  for (size_t i = 0; i < traces.size(); ++i) {
    clocks.push_back(DigestClock(traces[i], i));
    digests.push_back(DigestRankPaths(traces[i], clocks.back()));
  }
  CrossRankPaths out = CombineCrossRankPaths(clocks, digests, method, range);
  // Each segment's whole path, for the viewer: the question the walk asked its digest, on its trace.
  std::vector<std::unique_ptr<CriticalPathFinder>> finders(traces.size());
  for (CrossRankPath& step : out.steps) {
    for (RankSegment& segment : step.segments) {
      auto& finder = finders[segment.input];
      if (!finder) finder = std::make_unique<CriticalPathFinder>(traces[segment.input]);
      segment.path = finder->FindBefore(segment.from_ns, segment.until_ns, segment.by_ns);
    }
  }
  return out;
}

}  // namespace stepscope::analysis
