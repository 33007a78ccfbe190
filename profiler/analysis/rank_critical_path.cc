// The critical path of a step across ranks (rank_critical_path.h): each rank's single-rank path,
// cut at the collectives where it waited for a later rank and continued on that rank. The walk
// reads the ranks only through their digests (RankPathDigest), so that it runs the same over
// traces at hand, over traces read one at a time, and over digests gathered from MPI processes.
#include "profiler/analysis/rank_critical_path.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <iterator>
#include <unordered_map>

#include "base/check.h"

namespace stepscope::analysis {

using trace::Trace;

namespace {

// ---- a rank's pieces ----------------------------------------------------------------------

// A piece as FindPieces gives it (elements unnamed): the elements kept are named from `trace`.
// Names kept once per digest (a rank's pieces name the same few ops thousands of times), keyed
// by the trace's own string ids: the trace interned them already.
class DigestNames {
 public:
  DigestNames(const Trace& trace, std::vector<std::string>& names) : trace_(trace), names_(names) {}
  uint32_t operator()(trace::StringId id) {
    const auto [it, added] = index_.try_emplace(id, static_cast<uint32_t>(names_.size()));
    if (added) names_.emplace_back(trace_.str(id));
    return it->second;
  }

 private:
  const Trace& trace_;
  std::vector<std::string>& names_;
  std::unordered_map<trace::StringId, uint32_t> index_;
};

RankPathPiece Summarise(const Trace& trace, const CriticalPathFinder::PathPiece& piece,
                        std::span<const int64_t> gap_starts, DigestNames& names) {
  const CriticalPath& path = piece.path;
  RankPathPiece out;
  RankPathSummary& s = out.path;
  s.empty = path.elements.empty();
  s.begin_ns = path.begin_ns;
  s.end_ns = path.end_ns;
  s.length_ns = path.length_ns;
  std::copy(std::begin(path.bound_ns), std::end(path.bound_ns), s.bound_ns);
  s.slices = static_cast<int64_t>(path.elements.size());
  const auto name = [&](uint32_t slice, uint32_t& op, uint32_t& op_name) {
    const trace::Slice& named = trace.slices()[slice];
    const trace::StringId slice_name = trace.slice_name(named);
    const trace::StringId op_type = trace.slice_op_type(named);
    op_name = names(slice_name);
    op = names(trace.str(op_type).empty() ? slice_name : op_type);
  };
  std::map<uint32_t, GapLongestOp> longest;  // by gap
  for (uint32_t k = 0; k < path.elements.size(); ++k) {
    const PathElement& e = path.elements[k];
    const auto gap = static_cast<uint32_t>(std::upper_bound(gap_starts.begin(), gap_starts.end(), e.start_ns) -
                                           gap_starts.begin());
    if (std::binary_search(piece.shared.begin(), piece.shared.end(), e.slice)) {
      SharedElement shared{.slice = e.slice, .gap = gap, .element = k, .held_ns = e.held_ns, .op = 0, .op_name = 0};
      name(e.slice, shared.op, shared.op_name);
      out.shared.push_back(std::move(shared));
      continue;
    }
    auto [it, first] = longest.try_emplace(gap);
    if (first || e.held_ns > it->second.held_ns) it->second = {.gap = gap, .element = k, .held_ns = e.held_ns};
  }
  std::sort(out.shared.begin(), out.shared.end(),
            [](const SharedElement& a, const SharedElement& b) { return a.slice < b.slice; });
  for (auto& [gap, op] : longest) {
    name(path.elements[op.element].slice, op.op, op.op_name);
    s.longest.push_back(std::move(op));
  }
  out.open = piece.open;
  out.closing = piece.closing;
  out.stopped = piece.stopped;
  out.passes = piece.passes;
  std::copy(std::begin(piece.link_bound_ns), std::end(piece.link_bound_ns), out.link_bound_ns);
  out.link_hold_slice = piece.link_hold_slice;
  out.link_hold_ns = piece.link_hold_ns;
  out.next = static_cast<uint32_t>(piece.next);
  return out;
}

// A rank's path to an instant, up to where the walk leaves it: pieces in walk order (the latest
// first), each followed by the next through its stop.
struct ChainedPath {
  std::vector<const RankPathPiece*> pieces;
  bool empty() const { return pieces.empty(); }
};

// The op that held `path` longest among its elements starting in [from, to) (the trace's time;
// `from` INT64_MIN or a gap start, `to` a gap start), and its slice's name; empty when none.
std::pair<std::string, std::string> LongestOp(const ChainedPath& path, std::span<const int64_t> gap_starts,
                                              std::span<const std::string> names, int64_t from, int64_t to) {
  // Elements in [gap_starts[a], gap_starts[b]) are those of gaps a + 1 .. b.
  const auto gap_of = [&](int64_t at) {
    return static_cast<uint32_t>(std::lower_bound(gap_starts.begin(), gap_starts.end(), at) - gap_starts.begin());
  };
  const uint32_t first = from == INT64_MIN ? 0 : gap_of(from) + 1, last = gap_of(to);
  struct Candidate {
    int64_t held_ns = 0;
    size_t piece = 0;      // its place in path order: the earliest piece holding it, its element there
    uint32_t element = 0;
    uint32_t op = 0, op_name = 0;
  };
  const Candidate* longest = nullptr;
  // The first of equals in path order (the earlier piece, then its earlier element), as one pass
  // over the whole path's elements finds it.
  const auto consider = [&](const Candidate& c) {
    if (longest == nullptr || c.held_ns > longest->held_ns ||
        (c.held_ns == longest->held_ns &&
         (c.piece > longest->piece || (c.piece == longest->piece && c.element < longest->element)))) {
      longest = &c;
    }
  };
  std::vector<Candidate> candidates;
  std::map<uint32_t, Candidate> shared;  // by slice: its time summed over the pieces and links
  std::map<uint32_t, bool> shared_in_range;
  for (size_t p = 0; p < path.pieces.size(); ++p) {
    const RankPathPiece& piece = *path.pieces[p];
    for (const GapLongestOp& op : piece.path.longest) {
      if (op.gap >= first && op.gap <= last) candidates.push_back({op.held_ns, p, op.element, op.op, op.op_name});
    }
    for (const SharedElement& e : piece.shared) {
      Candidate& c = shared[e.slice];
      c.held_ns += e.held_ns;
      c.piece = p, c.element = e.element, c.op = e.op, c.op_name = e.op_name;
      shared_in_range[e.slice] = e.gap >= first && e.gap <= last;
    }
  }
  for (size_t p = 0; p + 1 < path.pieces.size(); ++p) {
    const RankPathPiece& piece = *path.pieces[p];
    if (const auto it = shared.find(piece.link_hold_slice); piece.link_hold_ns > 0 && it != shared.end()) {
      it->second.held_ns += piece.link_hold_ns;
    }
  }
  for (const auto& [slice, c] : shared) {
    if (shared_in_range[slice]) candidates.push_back(c);
  }
  for (const Candidate& c : candidates) consider(c);
  if (longest == nullptr) return {};
  return {names[longest->op], names[longest->op_name]};
}

// ---- the walk ----------------------------------------------------------------------------------

// A rank's path to an instant as one segment of the path across ranks: its chained pieces summed.
struct SegmentPath {
  bool empty = true;
  int64_t begin_ns = 0, end_ns = 0, length_ns = 0;  // the input's time
  int64_t bound_ns[kPathBounds] = {};
  int64_t slices = 0;
};

// The pieces of `chain` before `cut` (all of them: cut = size) summed as the one path they are.
SegmentPath Sum(const ChainedPath& chain, size_t cut) {
  SegmentPath out;
  std::vector<uint32_t> reached;  // slices whose start a later piece did not reach: an earlier one may
  for (size_t p = 0; p < cut; ++p) {
    const RankPathPiece& piece = *chain.pieces[p];
    for (int b = 0; b < kPathBounds; ++b) out.bound_ns[b] += piece.path.bound_ns[b];
    if (p + 1 < cut) {
      for (int b = 0; b < kPathBounds; ++b) out.bound_ns[b] += piece.link_bound_ns[b];
    }
    out.slices += piece.path.slices;
    // An element on both sides of a stop is one element of the path.
    std::vector<uint32_t> both;
    std::set_intersection(reached.begin(), reached.end(), piece.closing.begin(), piece.closing.end(),
                          std::back_inserter(both));
    out.slices -= static_cast<int64_t>(both.size());
    std::vector<uint32_t> still;
    std::set_difference(reached.begin(), reached.end(), piece.closing.begin(), piece.closing.end(),
                        std::back_inserter(still));
    reached.clear();
    std::set_union(still.begin(), still.end(), piece.open.begin(), piece.open.end(), std::back_inserter(reached));
  }
  if (out.slices == 0) return out;
  out.empty = false;
  out.end_ns = chain.pieces.front()->path.end_ns;
  out.begin_ns = chain.pieces[cut - 1]->path.begin_ns;
  out.length_ns = out.end_ns - out.begin_ns;
  return out;
}

// Puts the inputs on the aligned clock and walks one step's ranks, chaining each its pieces.
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
    size_t cut = 0;                          // the chain's pieces before it
  };
  int64_t Local(const CollectiveMember& m, int64_t absolute) const { return absolute - paths_[m.input].epoch_ns; }
  int64_t Arrival(const CollectiveMember& m) const { return Aligned(m.input, Local(m, m.start_ns)); }

  // The latest collective that the path to `by` (on `input`, `chain`) passes through and that
  // another rank reached later; collective null when none.
  Join LatestJoin(size_t input, const ChainedPath& chain, int64_t by,
                  const std::vector<const MatchedCollective*>& collectives, const Windows& windows) const;

  // The collectives that `segment`'s rank reached last, arriving by `limit` (aligned), in time order.
  void AddHolds(const RankSegment& segment, const RankStepDigest& window, const ChainedPath& path, int64_t limit,
                const std::vector<const MatchedCollective*>& collectives, const Windows& windows,
                std::vector<RankHold>& holds) const;

  std::span<const RankPathDigest> paths_;
  const AlignmentReport& alignment_;
};

// The path to `by` on `window`: its entry piece, then each stop's next, to a piece not stopped.
ChainedPath ChainTo(const RankStepDigest& window, int64_t by) {
  const auto it = std::lower_bound(window.entry_by.begin(), window.entry_by.end(), by);
  // The digest holds an entry for every instant the walk can start from (DigestRankPaths).
  STEPSCOPE_CHECK(it != window.entry_by.end() && *it == by);
  ChainedPath chain;
  int64_t piece = window.entry_piece[static_cast<size_t>(it - window.entry_by.begin())];
  if (piece < 0) return chain;
  // Time on a walk back never grows, and a piece is keyed by its first node and that time: a
  // chain longer than the pieces would be a cycle.
  while (chain.pieces.size() <= window.pieces.size()) {
    const RankPathPiece& p = window.pieces[static_cast<size_t>(piece)];
    chain.pieces.push_back(&p);
    if (!p.stopped) break;
    piece = p.next;
  }
  return chain;
}

StepWalker::Join StepWalker::LatestJoin(size_t input, const ChainedPath& chain, int64_t by,
                                        const std::vector<const MatchedCollective*>& collectives,
                                        const Windows& windows) const {
  // Where the chain passes each collective first: the pieces before the cut.
  std::unordered_map<uint32_t, size_t> passed;
  for (size_t p = 0; p < chain.pieces.size(); ++p) {
    for (uint32_t slice : chain.pieces[p]->passes) passed.try_emplace(slice, p + 1);
  }
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
    const auto at = passed.find(own->slice);
    if (at == passed.end()) continue;
    best = {c, own, last, at->second};
    best_end = own_end;
  }
  return best;
}

void StepWalker::AddHolds(const RankSegment& segment, const RankStepDigest& window, const ChainedPath& path,
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
    std::tie(hold.op, hold.op_name) = LongestOp(path, window.gap_starts, paths_[segment.input].names, from, own_start);
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
  std::vector<ChainedPath> paths;     // each segment's
  std::vector<SegmentPath> sums;
  std::vector<RankWait> waits;
  for (size_t guard = 0; guard <= collectives.size(); ++guard) {
    const RankStepDigest& w = *windows.at(input);
    ChainedPath chain = ChainTo(w, by);
    const Join join = LatestJoin(input, chain, by, collectives, windows);
    const int64_t arrival = join.collective ? Arrival(*join.last) : 0;
    int64_t from = w.begin_ns;
    size_t cut = chain.pieces.size();
    // The walk goes back in time only.
    if (join.collective != nullptr && arrival < Aligned(input, by)) {
      const int64_t own_end = Local(*join.own, join.own->end_ns);
      cut = join.cut;
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
    const SegmentPath sum = Sum(chain, cut);
    chain.pieces.resize(cut);
    RankSegment segment;
    segment.rank = RankOf(input);
    segment.input = input;
    segment.begin_ns = sum.empty ? Aligned(input, by) : Aligned(input, sum.begin_ns);
    segment.end_ns = sum.empty ? Aligned(input, by) : Aligned(input, sum.end_ns);
    segment.length_ns = sum.length_ns;
    for (int b = 1; b < kPathBounds; ++b) {
      if (sum.bound_ns[b] > sum.bound_ns[static_cast<int>(segment.bound_by)]) segment.bound_by = static_cast<PathBound>(b);
    }
    segment.slices = sum.slices;
    segment.from_ns = from;
    segment.until_ns = w.end_ns;
    segment.by_ns = by;
    segments.push_back(std::move(segment));
    paths.push_back(std::move(chain));
    sums.push_back(sum);
    if (join.collective == nullptr || !(arrival < Aligned(input, by))) break;
    input = join.last->input;
    by = Local(*join.last, join.last->start_ns);
  }
  if (segments.size() > waits.size() + 1) {
    segments.resize(waits.size() + 1), paths.resize(waits.size() + 1), sums.resize(waits.size() + 1);
  }
  std::reverse(segments.begin(), segments.end());
  std::reverse(paths.begin(), paths.end());
  std::reverse(sums.begin(), sums.end());
  std::reverse(waits.begin(), waits.end());
  out.begin_ns = segments.front().begin_ns;
  out.end_ns = end;
  out.length_ns = end - out.begin_ns;
  int64_t accounted = 0;
  for (const SegmentPath& s : sums) {
    for (int b = 0; b < kPathBounds; ++b) out.bound_ns[b] += s.bound_ns[b];
    accounted += s.length_ns;
  }
  for (const RankWait& w : waits) out.transfer_ns += w.transfer_ns;
  out.gap_ns = out.length_ns - accounted - out.transfer_ns;
  for (size_t k = 0; k < segments.size(); ++k) {
    AddHolds(segments[k], *windows.at(segments[k].input), paths[k],
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
  DigestNames names(trace, digest.names);
  const Trace* one = &trace;
  const auto windows = NumberedStepWindows({one, 1}, std::nullopt, StepWindowing::kEveryStep);
  for (const StepWindow& w : windows.front()) {
    RankStepDigest step;
    step.step = w.step;
    step.begin_ns = w.begin_ns;
    step.end_ns = w.end_ns;
    std::vector<uint32_t> stops;  // the rank's collectives in the step
    for (const auto& [key, instances] : clock.collectives) {
      if (key.step != w.step) continue;
      for (const CollectiveInstance& i : instances) {
        stops.push_back(i.slice);
        step.gap_starts.push_back(i.start_ns - trace.epoch_ns());
      }
    }
    std::sort(step.gap_starts.begin(), step.gap_starts.end());
    step.gap_starts.erase(std::unique(step.gap_starts.begin(), step.gap_starts.end()), step.gap_starts.end());
    // Where the walk can start on this rank: the end of the step's work (where the window's whole
    // path ends: the entry of the work that ends last by any time) and its arrivals at its
    // collectives (coming from a rank that waited for it).
    std::vector<int64_t> asked = step.gap_starts;
    asked.push_back(INT64_MAX);
    const CriticalPathFinder::WindowPieces pieces = finder.FindPieces(w.begin_ns, w.end_ns, asked, stops);
    const int64_t whole = pieces.entries.back();
    step.has_work = whole >= 0;
    step.whole_end_ns = step.has_work ? pieces.pieces[static_cast<size_t>(whole)].path.end_ns : 0;
    for (size_t k = 0; k < asked.size(); ++k) {
      const int64_t by = k + 1 < asked.size() ? asked[k] : step.whole_end_ns;
      if (k + 1 == asked.size() && !step.has_work) break;
      // The end of the work may be an arrival too: the work that ends last by it is the same.
      const auto at = std::lower_bound(step.entry_by.begin(), step.entry_by.end(), by);
      if (at != step.entry_by.end() && *at == by) continue;
      step.entry_piece.insert(step.entry_piece.begin() + (at - step.entry_by.begin()), pieces.entries[k]);
      step.entry_by.insert(at, by);
    }
    for (const CriticalPathFinder::PathPiece& piece : pieces.pieces) {
      step.pieces.push_back(Summarise(trace, piece, step.gap_starts, names));
      if (piece.path.elements.empty()) step.pieces.back().path.begin_ns = step.pieces.back().path.end_ns = piece.path.begin_ns;
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
