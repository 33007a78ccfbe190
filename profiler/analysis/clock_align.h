// Aligning the clocks of several ranks, behind `stepscope align` and every command that puts
// ranks on one time line (`merge`, `stragglers`, the viewer). Three methods:
//
//  - collectives: a synchronising collective ends on every rank of its group at about the same
//    instant (the last rank to arrive starts the transfer; all finish within the link's latency),
//    so each rank's clock is corrected to make the ends of matched collectives coincide.
//    A collective is matched across ranks by its group, its name and its place: the process group
//    (PyTorch's `Process Group Name`, else `Process Group Ranks`), what it is (the NCCL kernel's
//    `Collective name`, gloo's `gloo:all_reduce` with its `Input Dims`, our trainer's record name
//    less its `tower_N/` prefix), the step it runs in (ProfilerStep#N, a step trace's number) and
//    its order among the collectives of that key in the step. A rank whose count of a key in a
//    step differs from the most common count sits that key out (its trace was cut in the step).
//    Only the work of a collective counts: NCCL kernels, gloo's work-thread spans, our trainer's
//    collective lane and its synchronous collective ops; never the asynchronous launch
//    (`record_param_comms`, `c10d::allreduce_`).
//    Each rank's correction is offset + drift x (t - anchor), t on its own clock and anchor the end
//    of its first matched collective; the lowest rank is the reference (correction 0). The
//    corrections are solved together: first outward from the reference (each rank against the
//    ranks fitted before it: their mean end, or earliest), then in rounds: each collective's end
//    as its members agree on it, taken once per round from all their corrected ends (O(members):
//    their median by selection where ends scatter both ways, NCCL kernels and gloo, so a few late
//    ends do not move it; their earliest for our trainer's records, a host span around a call
//    that returns once every rank is done, so a rank is only ever late to record its end), every
//    rank, the reference too, refitted to those ends, and all corrections re-expressed so that the
//    reference's is zero: a shift common to every rank (their typical lateness) cancels instead of
//    building up round after round. The rounds stop when no correction moves by 1 ns. Each
//    rank's fit is robust: up to half its matches may be off by any amount. It starts from the
//    densest half of the differences (after removing a repeated-median slope, so a drift does not
//    spread them), then keeps the matches within 4 robust standard deviations (1.4826 x MAD, never
//    under 1 µs) of a least-squares fit until the kept set settles. A drift is fitted only where
//    the data can tell it: at least 8 kept matches over at least 50 ms, moving the clock over that
//    span by more than 3 times the fit's residual; and a drift beyond 1,000 ppm (real clocks drift
//    by tens of ppm, NTP slews by at most 500) only when the slope is more than 10 standard errors
//    from zero (its residual / sqrt(sum of (t - mean t)^2) over the kept matches). Otherwise the
//    offset alone is fitted; a drift once supported stays fitted in later rounds. The residual is
//    the root mean square of the kept matches' distance to the others' end (their median, or
//    earliest) after correction.
//  - barrier: the host clock each of our trainer's ranks records after a barrier all passed
//    (TraceSession.clock_sync_nanos), as merge.h AlignClocks describes; ranks on the reference's
//    host are not shifted.
//  - clock: the clocks as recorded (every offset 0), right when the ranks share a host or a
//    synchronised clock.
// kAuto takes the best available: one host (every rank records the same host): its clock; else
// collectives when every rank is matched; else the barrier (a trace of another host without a
// sync point keeps its clock, "unaligned"). Collectives asked for that cannot be matched fall back
// to the barrier, and the report says why.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

enum class AlignMethod { kAuto, kCollectives, kBarrier, kClock };
std::string_view AlignMethodName(AlignMethod method);  // "auto", "collectives", "barrier", "clock"
std::optional<AlignMethod> ParseAlignMethod(std::string_view name);

// One rank's clock: several inputs of one rank (one step trace per step) share it.
struct RankClock {
  int32_t rank = -1;                // StepInfo.rank; the input's index when unknown
  std::string host;
  std::vector<size_t> inputs;       // indices into the traces given
  int64_t offset_ns = 0;            // added to this rank's clock at anchor_ns
  double drift_ppm = 0;             // its clock's correction rate: + drift_ppm x 1e-6 per ns after anchor_ns
  int64_t anchor_ns = 0;            // on the rank's own clock, ns since the epoch of its traces' clock
  int64_t residual_ns = -1;         // collectives: RMS distance of its kept matches after correction; -1: not measured
  int64_t matched_collectives = 0;  // collectives matched with another rank (collectives method)
  int64_t outliers = 0;             // matched but left out of the fit
  // The correction of an instant of this rank's clock (absolute ns).
  int64_t CorrectionAt(int64_t absolute_ns) const;
};

struct AlignmentReport {
  AlignMethod method = AlignMethod::kClock;  // the method applied (never kAuto)
  std::vector<std::string> notes;            // why a method was not applied, in order tried
  std::vector<RankClock> ranks;              // by rank
  std::vector<size_t> rank_of_input;         // input index -> index into `ranks`
  // Per input, how it was aligned: "reference", "collectives", "barrier" labels of merge.h
  // AlignClocks ("same host", "clock_sync", "unaligned"), or "clock".
  std::vector<std::string> input_alignment;
  int solve_rounds = 0;  // collectives: the rounds of all ranks refitted after the first pass
  int64_t CorrectionAt(size_t input, int64_t absolute_ns) const {
    return ranks[rank_of_input[input]].CorrectionAt(absolute_ns);
  }
};

// The clocks of `traces` aligned by `method` (kAuto: the best available), falling back as above.
AlignmentReport AlignRanks(std::span<const trace::Trace> traces, AlignMethod method = AlignMethod::kAuto);

// A collective's key across ranks: its group, what it is, the step it runs in (as its trace
// records it, -1 outside one) and how its ends meet: `earliest` for our trainer's records (the
// earliest end is the collective's), else the mean of the ends.
struct CollectiveKey {
  bool earliest = false;
  std::string group, name;
  int64_t step = -1;
  bool operator<(const CollectiveKey& other) const;  // earliest ends first, then group, name, step
  bool operator==(const CollectiveKey& other) const = default;
};
// One instance of a collective on one input, on its own clock (absolute ns).
struct CollectiveInstance {
  int64_t end_ns = INT64_MIN, start_ns = 0;
  size_t input = 0;  // index into the traces
  uint32_t slice = 0;
  bool operator==(const CollectiveInstance& other) const = default;
};
// What alignment needs of one input, taken where the input is read, so that a job spread over
// processes aligns from these alone: its identity, its clock sync point and its collectives
// (per key, in order; of the same instance on several tracks, the one that ends last).
struct ClockDigest {
  std::string source;
  int32_t rank = -1;         // StepInfo.rank, -1 when unknown
  int64_t step = -1;         // StepInfo.step
  std::string host;
  int64_t clock_sync_ns = 0;  // TraceSession.clock_sync_nanos, 0 when absent
  std::map<CollectiveKey, std::vector<CollectiveInstance>> collectives;
  bool operator==(const ClockDigest& other) const = default;
};
// The digest of traces[input] (its instances numbered `input`).
ClockDigest DigestClock(const trace::Trace& trace, size_t input);
// AlignRanks from the inputs' digests (in input order): the same report.
AlignmentReport AlignDigests(std::span<const ClockDigest> inputs, AlignMethod method = AlignMethod::kAuto);

// One rank's part in a collective matched across ranks: the slice of its work (of its instances
// on several tracks, the one that ends last), on the rank's own clock (absolute ns).
struct CollectiveMember {
  size_t rank = 0;     // index into AlignmentReport::ranks
  size_t input = 0;    // index into the traces
  uint32_t slice = 0;
  int64_t start_ns = 0, end_ns = 0;
};
// A collective matched across ranks, as the collectives method matches them (see above).
struct MatchedCollective {
  std::string name;    // what it is: "gloo:all_reduce[[512, 256]]", "nccl:allreduce", a record's name
  int64_t step = -1;   // the step it runs in (NumberedStepWindows, kEveryStep), -1 outside steps
  std::vector<CollectiveMember> members;
};
// The collectives of `traces` matched across the ranks of `report` (AlignRanks' GroupRanks), in
// no particular order; whatever method aligned the clocks.
std::vector<MatchedCollective> MatchRankCollectives(std::span<const trace::Trace> traces,
                                                    const AlignmentReport& report);
// The same from the inputs' clock digests (a rank's inputs merged: of the same instance, the one
// that ends last), matched per key where two ranks or more agree on how many there are.
std::vector<MatchedCollective> MatchDigestCollectives(std::span<const ClockDigest> inputs,
                                                      const AlignmentReport& report);

}  // namespace stepscope::analysis
