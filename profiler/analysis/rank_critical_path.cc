// The critical path of a step across ranks (rank_critical_path.h): each rank's single-rank path,
// cut at the collectives where it waited for a later rank and continued on that rank.
#include "profiler/analysis/rank_critical_path.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_set>

namespace stepscope::analysis {

using trace::Trace;

namespace {

// Puts the inputs on the aligned clock and walks one step's ranks.
class StepWalker {
 public:
  StepWalker(std::span<const Trace> traces, const AlignmentReport& alignment)
      : traces_(traces), alignment_(alignment), finders_(traces.size()) {}

  // An input's time (ns since its epoch) on the aligned clock (absolute ns).
  int64_t Aligned(size_t input, int64_t local) const {
    const int64_t absolute = traces_[input].epoch_ns() + local;
    return absolute + alignment_.CorrectionAt(input, absolute);
  }

  const CriticalPathFinder& Finder(size_t input) {
    if (!finders_[input]) finders_[input] = std::make_unique<CriticalPathFinder>(traces_[input]);
    return *finders_[input];
  }

  int32_t RankOf(size_t input) const { return alignment_.ranks[alignment_.rank_of_input[input]].rank; }

  // The path across ranks of one step: its windows by input, its matched collectives.
  CrossRankPath Walk(int64_t step, const std::map<size_t, StepWindow>& windows,
                     const std::vector<const MatchedCollective*>& collectives);

 private:
  struct Join {
    const MatchedCollective* collective = nullptr;
    const CollectiveMember* own = nullptr;
    const CollectiveMember* last = nullptr;  // the last to arrive
  };
  // The latest collective that `path` (on `input`, up to local `by`) passes through and that
  // another rank reached later; collective null when none.
  Join LatestJoin(size_t input, const CriticalPath& path, int64_t by,
                  const std::vector<const MatchedCollective*>& collectives, const std::map<size_t, StepWindow>& windows) const;

  // The collectives that `segment`'s rank reached last, arriving by `limit` (aligned), in time order.
  void AddHolds(const RankSegment& segment, int64_t limit, const std::vector<const MatchedCollective*>& collectives,
                const std::map<size_t, StepWindow>& windows, std::vector<RankHold>& holds) const;
  int64_t Arrival(const CollectiveMember& m) const { return Aligned(m.input, m.start_ns - traces_[m.input].epoch_ns()); }

  std::span<const Trace> traces_;
  const AlignmentReport& alignment_;
  std::vector<std::unique_ptr<CriticalPathFinder>> finders_;
};

StepWalker::Join StepWalker::LatestJoin(size_t input, const CriticalPath& path, int64_t by,
                                        const std::vector<const MatchedCollective*>& collectives,
                                        const std::map<size_t, StepWindow>& windows) const {
  std::unordered_set<uint32_t> on_path;
  // The path's waits [start - wait, start], by their end: along the path they do not overlap.
  std::vector<std::pair<int64_t, int64_t>> waits;
  for (const PathElement& e : path.elements) {
    on_path.insert(e.slice);
    if (e.wait_ns > 0) waits.emplace_back(e.start_ns, e.start_ns - e.wait_ns);
  }
  std::sort(waits.begin(), waits.end());
  const Trace& trace = traces_[input];
  Join best;
  int64_t best_end = INT64_MIN;
  for (const MatchedCollective* c : collectives) {
    const CollectiveMember* own = nullptr;
    const CollectiveMember* last = nullptr;
    for (const CollectiveMember& m : c->members) {
      if (m.input == input) own = &m;
      if (windows.contains(m.input) &&
          (last == nullptr || Aligned(m.input, m.start_ns - traces_[m.input].epoch_ns()) >
                                  Aligned(last->input, last->start_ns - traces_[last->input].epoch_ns()))) {
        last = &m;
      }
    }
    if (own == nullptr || last == nullptr || last->input == input) continue;
    const int64_t own_end = own->end_ns - trace.epoch_ns();
    if (own_end > by || own_end <= best_end) continue;
    if (Aligned(last->input, last->start_ns - traces_[last->input].epoch_ns()) <=
        Aligned(input, own->start_ns - trace.epoch_ns())) {
      continue;
    }
    bool passes = on_path.contains(own->slice);
    if (!passes && trace::IsAnnotationOrSync(trace.slices()[own->slice].kind)) {
      // Work that is not a node of the graph (gloo's spans): the path waited through its end.
      const auto wait = std::lower_bound(waits.begin(), waits.end(), std::pair<int64_t, int64_t>{own_end, INT64_MIN});
      passes = wait != waits.end() && wait->second <= own_end;
    }
    if (!passes) continue;
    best = {c, own, last};
    best_end = own_end;
  }
  return best;
}

// The op type that held a segment's path longest among its slices that start in [from, to) (the
// trace's time), and its slice's name.
std::pair<std::string, std::string> LongestOp(const CriticalPath& path, int64_t from, int64_t to) {
  const PathElement* longest = nullptr;
  for (const PathElement& e : path.elements) {
    if (e.start_ns < from || e.start_ns >= to) continue;
    if (longest == nullptr || e.held_ns > longest->held_ns) longest = &e;
  }
  if (longest == nullptr) return {};
  return {longest->op_type.empty() ? longest->name : longest->op_type, longest->name};
}

void StepWalker::AddHolds(const RankSegment& segment, int64_t limit,
                          const std::vector<const MatchedCollective*>& collectives,
                          const std::map<size_t, StepWindow>& windows, std::vector<RankHold>& holds) const {
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
  const int64_t epoch = traces_[segment.input].epoch_ns();
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
    std::tie(hold.op, hold.op_name) = LongestOp(segment.path, from, own->start_ns - epoch);
    from = own->start_ns - epoch;
    holds.push_back(std::move(hold));
  }
}

CrossRankPath StepWalker::Walk(int64_t step, const std::map<size_t, StepWindow>& windows,
                               const std::vector<const MatchedCollective*>& collectives) {
  CrossRankPath out;
  out.step = step;
  // The rank whose work ends last.
  size_t input = windows.begin()->first;
  int64_t end = INT64_MIN, by = 0;  // aligned; `by` on the input's own time
  for (const auto& [i, w] : windows) {
    const CriticalPath path = Finder(i).Find(w.begin_ns, w.end_ns);
    if (path.elements.empty()) continue;
    if (Aligned(i, path.end_ns) > end) end = Aligned(i, path.end_ns), input = i, by = path.end_ns;
  }
  if (end == INT64_MIN) return out;
  std::vector<RankSegment> segments;  // latest first
  std::vector<RankWait> waits;
  for (size_t guard = 0; guard <= collectives.size(); ++guard) {
    const StepWindow& w = windows.at(input);
    CriticalPath path = Finder(input).FindBefore(w.begin_ns, w.end_ns, by);
    const Join join = LatestJoin(input, path, by, collectives, windows);
    const int64_t arrival = join.collective ? Arrival(*join.last) : 0;
    // The walk goes back in time only.
    if (join.collective != nullptr && arrival < Aligned(input, by)) {
      const int64_t own_end = join.own->end_ns - traces_[input].epoch_ns();
      path = Finder(input).FindBefore(std::max(w.begin_ns, own_end), w.end_ns, by);
      RankWait wait;
      wait.rank = RankOf(input);
      wait.waited_for = RankOf(join.last->input);
      wait.collective = join.collective->name;
      wait.arrival_ns = arrival;
      wait.wait_ns = arrival - Aligned(input, join.own->start_ns - traces_[input].epoch_ns());
      wait.transfer_ns = std::max<int64_t>(0, Aligned(input, own_end) - arrival);
      waits.push_back(std::move(wait));
    }
    RankSegment segment;
    segment.rank = RankOf(input);
    segment.input = input;
    segment.begin_ns = path.elements.empty() ? Aligned(input, by) : Aligned(input, path.begin_ns);
    segment.end_ns = path.elements.empty() ? Aligned(input, by) : Aligned(input, path.end_ns);
    segment.path = std::move(path);
    segments.push_back(std::move(segment));
    if (join.collective == nullptr || !(arrival < Aligned(input, by))) break;
    input = join.last->input;
    by = join.last->start_ns - traces_[input].epoch_ns();
  }
  if (segments.size() > waits.size() + 1) segments.resize(waits.size() + 1);
  std::reverse(segments.begin(), segments.end());
  std::reverse(waits.begin(), waits.end());
  out.begin_ns = segments.front().begin_ns;
  out.end_ns = end;
  out.length_ns = end - out.begin_ns;
  int64_t accounted = 0;
  for (const RankSegment& s : segments) {
    for (int b = 0; b < kPathBounds; ++b) out.bound_ns[b] += s.path.bound_ns[b];
    accounted += s.path.length_ns;
  }
  for (const RankWait& w : waits) out.transfer_ns += w.transfer_ns;
  out.gap_ns = out.length_ns - accounted - out.transfer_ns;
  for (size_t k = 0; k < segments.size(); ++k) {
    AddHolds(segments[k], k < waits.size() ? waits[k].arrival_ns : segments[k].end_ns, collectives, windows, out.holds);
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

CrossRankPaths ComputeCrossRankPaths(std::span<const Trace> traces, AlignMethod method, const StepRange& range) {
  CrossRankPaths out;
  out.alignment = AlignRanks(traces, method);
  if (out.alignment.ranks.size() < 2) return out;  // one rank: nothing to join
  const std::vector<MatchedCollective> matched = MatchRankCollectives(traces, out.alignment);
  // Per recorded step, each input's window (a rank's trace holds a step once).
  const auto windows = NumberedStepWindows(traces, range, StepWindowing::kEveryStep);
  std::map<int64_t, std::map<size_t, StepWindow>> steps;
  for (size_t i = 0; i < traces.size(); ++i) {
    for (const StepWindow& w : windows[i]) steps[w.step].emplace(i, w);
  }
  StepWalker walker(traces, out.alignment);
  out.origin_ns = INT64_MAX;
  for (size_t i = 0; i < traces.size(); ++i) out.origin_ns = std::min(out.origin_ns, walker.Aligned(i, traces[i].span_begin_ns()));
  for (const auto& [step, inputs] : steps) {
    std::vector<const MatchedCollective*> collectives;
    for (const MatchedCollective& c : matched) {
      if (c.step == step) collectives.push_back(&c);
    }
    out.steps.push_back(walker.Walk(step, inputs, collectives));
  }
  return out;
}

}  // namespace stepscope::analysis
