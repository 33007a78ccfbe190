// The critical path of a step across ranks, behind `stepscope critical-path DIR` when the inputs
// are several ranks. Each rank's graph is the single-rank graph of step_analyses.h; the ranks'
// graphs are joined at their collectives, matched across ranks as clock alignment matches them
// (clock_align.h MatchRankCollectives) on the clocks AlignRanks aligned: a collective's end on
// every rank depends on the arrival (the start of its work) of the last rank to arrive.
//
// Per step (the step number the ranks' traces record), the path starts at the end of the work
// that ends last on any rank (aligned) and walks back on that rank's graph. Where the walk passes
// through a collective that another rank reached later (the collective's slice is on the path,
// or, for a collective whose work is not a node of the graph such as gloo's spans, its end falls
// in a wait of the path), the path leaves for the last rank to arrive: the collective's time
// after that arrival is its transfer, and the walk goes on back on that rank from its arrival
// (the work that ends last by then). Of several such collectives, the latest. The path is a chain
// of segments, one rank each, joined by waits ("rank A waited at collective C for rank R"). Along
// it, every collective that the path's rank reached last is a hold: the others waited for it,
// and its op X is the op that held the path longest on that rank before it arrived. The hold
// with the longest lateness is the step's "waiting for rank R (its op X)".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "profiler/analysis/clock_align.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// A piece of the path on one rank: its single-rank path between two instants (aligned, absolute).
struct RankSegment {
  int32_t rank = -1;
  size_t input = 0;            // index into the traces
  int64_t begin_ns = 0, end_ns = 0;  // aligned, absolute: where the segment's path starts and ends
  CriticalPath path;           // on the input's own time (as step_analyses.h gives it)
};

// Where the path crosses ranks: `rank` waited at `collective` for `waited_for`.
struct RankWait {
  int32_t rank = -1;           // the rank that waited (the segment after the wait)
  int32_t waited_for = -1;     // the last rank to arrive (the segment before)
  std::string collective;
  int64_t arrival_ns = 0;      // waited_for's arrival, aligned, absolute
  int64_t wait_ns = 0;         // how much later than `rank` it arrived
  int64_t transfer_ns = 0;     // from that arrival to the collective's end on `rank`
};

// A collective on the path that the path's rank reached last: every other rank waited for it.
struct RankHold {
  int32_t rank = -1;           // the last to arrive, the path's rank there
  std::string collective;
  std::string op;              // the op type that held the path longest on that rank since its
  std::string op_name;         // previous hold (or the segment's start), and its slice's name
  int64_t arrival_ns = 0;      // aligned, absolute
  int64_t late_ns = 0;         // after the last of the other ranks arrived
};

struct CrossRankPath {
  int64_t step = -1;           // as the traces record it (-1: none)
  int64_t begin_ns = 0, end_ns = 0;  // aligned, absolute
  int64_t length_ns = 0;       // end - begin
  std::vector<RankSegment> segments;  // in time order
  std::vector<RankWait> waits;        // waits[k] joins segments[k] to segments[k + 1]
  // The segments' bounds, summed; with transfer_ns (the collectives' time after their last
  // arrival) and gap_ns (around the joins: a segment's end to the waited rank's arrival, the
  // collective's end to the next segment's start; a drift's stretch) they add up to length_ns.
  int64_t bound_ns[kPathBounds] = {};
  int64_t transfer_ns = 0, gap_ns = 0;
  PathBound bound_by = PathBound::kCpu;  // the largest of bound_ns
  std::vector<RankHold> holds;  // in path order
  // The hold that kept the other ranks waiting longest (the largest late_ns): the step's
  // "waiting for rank R (its op X)"; -1 when no rank on the path arrived last at a collective.
  int32_t held_by = -1;
};

struct CrossRankPaths {
  AlignmentReport alignment;
  int64_t origin_ns = 0;             // the earliest start of any input, aligned, absolute
  std::vector<CrossRankPath> steps;  // by step
};

// Paths across the ranks of `traces` (two ranks or more), per step in `range`, their clocks
// aligned by `method` (kAuto: the best available; the report says which).
CrossRankPaths ComputeCrossRankPaths(std::span<const trace::Trace> traces, AlignMethod method = AlignMethod::kAuto,
                                     const StepRange& range = std::nullopt);

}  // namespace stepscope::analysis
