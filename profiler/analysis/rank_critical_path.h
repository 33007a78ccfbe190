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
  int64_t length_ns = 0;       // its single-rank path's length, bound and number of slices
  PathBound bound_by = PathBound::kCpu;
  int64_t slices = 0;
  // The question that found it, on the input's time: the path to `by_ns` of the work starting in
  // [from_ns, until_ns) (the step window, or from the end of the collective where it was cut).
  int64_t from_ns = 0, until_ns = 0, by_ns = 0;
  // On the input's own time (as step_analyses.h gives it); only ComputeCrossRankPaths fills it
  // (the viewer draws it), CombineCrossRankPaths leaves it empty.
  CriticalPath path;
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
// aligned by `method` (kAuto: the best available; the report says which). The inputs' digests
// (below) combined, each segment's whole path then found on its trace.
CrossRankPaths ComputeCrossRankPaths(std::span<const trace::Trace> traces, AlignMethod method = AlignMethod::kAuto,
                                     const StepRange& range = std::nullopt);

// ---- from digests: the same paths with one trace read at a time, or spread over processes ----
// The walk asks a rank for its single-rank path to an instant (the end of the step's work, or its
// arrival at one of its collectives), and where that path passes a collective another rank
// reached later, for the part of it after that collective. A rank's digest answers both without
// the trace and in a size linear in its collectives: each window's paths are cut into pieces
// (CriticalPathFinder::FindPieces) that stop at the first of the rank's collectives they reach,
// one piece per place a walk can start (the step's end, each arrival, each collective's node a
// piece stopped at); the path to an instant is a chain of pieces, and the walk across ranks
// chains them on the digests alone: at each collective the chain passes it may leave for the
// later rank, else it goes on with the piece from that collective. Each piece is summarised
// (RankPathSummary: a few numbers and, per stretch between two of the rank's collective starts,
// the op that held it longest), so the chained path is the path FindBefore finds, to the
// nanosecond (step_analyses.h says where an element enclosing a collective is counted twice).

// Of a piece's elements starting in the stretch `gap` of the step (gap k: from the (k-1)-th to the
// k-th start of the input's collectives in the step, sorted; gap 0 from the window's begin), the
// one that held it longest (the first of equals): a hold's "its op".
struct GapLongestOp {
  uint32_t gap = 0;
  uint32_t element = 0;        // its place in the piece
  int64_t held_ns = 0;
  uint32_t op = 0, op_name = 0;  // as RankHold's: indices into RankPathDigest::names
  bool operator==(const GapLongestOp& other) const = default;
};
// What the walk reads of one piece (times on the input's own clock).
struct RankPathSummary {
  bool empty = true;           // no work: begin and end are the instant it started from
  int64_t begin_ns = 0, end_ns = 0, length_ns = 0;
  int64_t bound_ns[kPathBounds] = {};
  int64_t slices = 0;
  std::vector<GapLongestOp> longest;  // by gap, the gaps with elements only
  bool operator==(const RankPathSummary& other) const = default;
};
// An element of a piece that another piece may hold time of too (PathPiece::shared): its time
// in this piece, summed over the pieces of a path before its longest op is chosen.
struct SharedElement {
  uint32_t slice = 0;
  uint32_t gap = 0, element = 0;  // as GapLongestOp's
  int64_t held_ns = 0;
  uint32_t op = 0, op_name = 0;   // indices into RankPathDigest::names
  bool operator==(const SharedElement& other) const = default;
};
// A piece (CriticalPathFinder::PathPiece) summarised; path.longest leaves out the shared elements.
struct RankPathPiece {
  RankPathSummary path;
  std::vector<uint32_t> open, closing;  // as PathPiece's
  std::vector<SharedElement> shared;    // by slice
  bool stopped = false;
  std::vector<uint32_t> passes;         // the collectives (their slices) passed going on to `next`, ascending
  int64_t link_bound_ns[kPathBounds] = {};
  uint32_t link_hold_slice = 0;
  int64_t link_hold_ns = 0;
  uint32_t next = 0;                    // index into the step's pieces
  bool operator==(const RankPathPiece& other) const = default;
};
// One step window of an input (NumberedStepWindows' kEveryStep, before any --step selection).
struct RankStepDigest {
  int64_t step = -1;                 // as the trace records it
  int64_t begin_ns = 0, end_ns = 0;  // the window, on the input's time
  std::vector<int64_t> gap_starts;   // the starts of its collectives in the step, sorted, distinct
  int64_t whole_end_ns = 0;          // the end of the window's path (ComputeCriticalPath's)
  bool has_work = false;             // false: the window holds no work (whole_end_ns meaningless)
  std::vector<int64_t> entry_by;     // the instants a walk can start from, ascending: the arrivals, the end
  std::vector<int64_t> entry_piece;  // per entry_by: its path's first piece, -1 when no work ends by it
  std::vector<RankPathPiece> pieces;
  bool operator==(const RankStepDigest& other) const = default;
};
struct RankPathDigest {
  int64_t epoch_ns = 0, span_begin_ns = 0;
  std::vector<RankStepDigest> steps;  // every kEveryStep window, in order
  std::vector<std::string> names;     // the ops' names and types the pieces name, each once
  bool operator==(const RankPathDigest& other) const = default;
};

// The digest of a trace whose clock digest (DigestClock) is `clock`.
RankPathDigest DigestRankPaths(const trace::Trace& trace, const ClockDigest& clock);

// ComputeCrossRankPaths from the inputs' digests (in input order; the clock digests' instances
// numbered by that order); the segments' `path` is left empty.
CrossRankPaths CombineCrossRankPaths(std::span<const ClockDigest> clocks, std::span<const RankPathDigest> paths,
                                     AlignMethod method = AlignMethod::kAuto, const StepRange& range = std::nullopt);

// The numbers of every input's steps by the rule of step_windows.h, from each input's recorded
// step numbers (-1: none) in step order: what NumberedStepWindows numbers them with kEveryStep.
std::vector<std::vector<int64_t>> NumberRecordedSteps(std::span<const std::vector<int64_t>> recorded);

}  // namespace stepscope::analysis
