// Stragglers across ranks, behind `stepscope stragglers`: per step, which rank finished its work
// last, by how much, and why. Each input is one trace of one rank (StepInfo.rank: our step
// traces' rank, Kineto's distributedInfo.rank; the input's index when unknown) holding one step
// (a step trace, numbered by StepInfo.step) or several (ProfilerStep#N windows). Clocks of
// separate files are aligned as `merge` aligns them (clock_align.h AlignRanks).
//
// Per step and rank, from the rank's work in the step:
//  - the work: GPU work (kernels, copies, memsets, collectives on GPU lanes of a device not
//    named CPU: a CPU device's /memcpy lane holds host copies) when the rank has
//    any in the step, else its host work (executor ops, CPU ops, runtime calls, collectives).
//    Annotations, sync markers and TensorFlow's /stream:all and /memcpy repeats never count.
//    A step trace's work is all of it; in a ProfilerStep#N window, the work whose launch (its
//    runtime call, by the launch flow) or, without one, whose own start lies in the window;
//  - begin/end: first start and last end of the work, on the aligned clock;
//  - compute, communication, memory, input: unions of the work in each category.
//    communication: IsCommunication (NCCL kernels, collectives, fusion-buffer copies) and host
//    ops of a collective type (AllGather, AllReduce, Broadcast, ...); memory:
//    other copies and memsets; input: on GPU, the time from the step's start (the window's or
//    the step trace's first slice) to the first GPU work, on host the input ops (TrainInput,
//    IteratorGetNext, DataLoader: IsInputOp, annotations of those names included); compute: the
//    rest;
//  - collective_wait: a synchronising collective lets no rank through before the last one
//    arrives, so the early ones wait in it. The wait is the smaller of two bounds: communication
//    - the least communication of any rank in the step, and the time from the rank's arrival
//    (its first communication in the step) to the last rank's arrival, no later than it left
//    its collectives (a rank that arrived with the others and whose collectives ran longer was
//    slow, not waiting);
//  - own end = end - collective_wait: when the rank would have finished had it not waited.
// Per step: straggler = the rank with the latest own end (the lowest rank on a tie): the rank
// the others waited for, however close their ends; lateness = its own end - the earliest own
// end, and - the median own end; each rank's lateness = its own end - the earliest.
// reason = the category (compute, communication, memory, input) where the straggler exceeds the
// median of the other ranks most ("none" when it exceeds it in none); communication less each
// rank's collective wait (waiting for the others is not why a rank is late). Medians are lower
// medians (the ceil(n/2)-th smallest), as `merge` reports them, so every figure is exact
// integer ns.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/clock_align.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// Input ops: data loading and input splitting (TrainInput, IteratorGetNext, DataLoader, ...).
bool IsInputOp(std::string_view name, std::string_view op_type);
// Host ops of a collective type (AllGather, AllReduce, NcclAllReduce, HorovodAllreduce, ...).
bool IsCollectiveOpType(std::string_view op_type);

enum class StragglerCategory : uint8_t { kCompute, kCommunication, kMemory, kInput };
inline constexpr int kStragglerCategories = 4;
std::string_view StragglerCategoryName(StragglerCategory category);  // "compute", ...

struct RankStep {
  int32_t rank = -1;
  size_t input = 0;             // index into StragglerReport::inputs
  bool gpu = false;             // its work is GPU work (else host work)
  int64_t work = 0;             // slices counted
  int64_t begin_ns = 0, end_ns = 0;  // aligned, relative to the step's earliest begin over ranks
  int64_t lateness_ns = 0;      // own end (end - collective wait) - the earliest own end in the step
  int64_t busy_ns = 0;          // union of the work
  int64_t by_category_ns[kStragglerCategories] = {0, 0, 0, 0};  // indexed by StragglerCategory
  int64_t collective_wait_ns = 0;
  int64_t compute_ns() const { return by_category_ns[0]; }
  int64_t communication_ns() const { return by_category_ns[1]; }
  int64_t memory_ns() const { return by_category_ns[2]; }
  int64_t input_ns() const { return by_category_ns[3]; }
};

struct StepStragglers {
  int64_t step = -1;
  // The step's earliest begin over ranks on the aligned clock (ns since the Unix epoch, as
  // Trace::epoch_ns() + a slice's start); RankStep times are relative to it. In the trace
  // `MergeTraces` makes of the same inputs, the step starts at origin_ns - its epoch_ns().
  int64_t origin_ns = 0;
  std::vector<RankStep> ranks;  // by rank
  int32_t straggler = -1;       // its rank
  int64_t lateness_ns = 0;      // vs the earliest own end (end - collective wait)
  int64_t lateness_vs_median_ns = 0;
  std::string reason;           // StragglerCategoryName, or "none"
  // The straggler's value minus the median of the other ranks', per category (communication
  // less the collective wait).
  int64_t excess_ns[kStragglerCategories] = {0, 0, 0, 0};
  // The rank that reached the step's collectives last (the one the others waited for; the
  // lowest on a tie), -1 when no rank waited; the median collective wait of the others.
  int32_t waited_for = -1;
  int64_t others_waited_ns = 0;
};

struct RankStragglerTotals {
  int32_t rank = -1;
  int64_t steps = 0;            // steps it took part in
  int64_t straggler_steps = 0;  // steps it finished last
  int64_t lateness_total_ns = 0, lateness_max_ns = 0;  // over all its steps
};

struct StragglerInputInfo {
  std::string source;
  int32_t rank = -1;
  bool rank_known = false;      // false: the input's index stands for it
  std::string alignment;        // merge.h AlignClocks
  int64_t offset_ns = 0;
};

struct StragglerReport {
  std::vector<StragglerInputInfo> inputs;
  std::vector<StepStragglers> steps;        // steps with at least two ranks, by step number
  std::vector<int64_t> single_rank_steps;   // steps only one rank had (not compared)
  std::vector<RankStragglerTotals> ranks;   // by rank
  AlignmentReport alignment;                // how the clocks were aligned
};

struct StragglerOptions {
  std::optional<std::pair<int64_t, int64_t>> steps;  // [first, last]; all when absent
  // How the ranks' clocks are aligned (clock_align.h); each input is moved by its rank's
  // correction at the input's first instant.
  AlignMethod align = AlignMethod::kAuto;
};

// Fails (InvalidInput, naming both files) when two inputs hold the same step of the same rank.
StatusOr<StragglerReport> ComputeStragglers(std::span<const trace::Trace> traces,
                                            const StragglerOptions& options = {});

// What the comparison needs of one input, taken where the input is read (one pass over its
// slices), so that a job spread over processes compares from these alone. Times are absolute on
// the input's own clock; the combination moves them by the rank's correction.
struct StragglerWork {
  int64_t slices = 0;
  int64_t begin_ns = INT64_MAX, end_ns = INT64_MIN;            // first start, last end
  int64_t comm_begin_ns = INT64_MAX, comm_end_ns = INT64_MIN;  // of its communication
  int64_t by_category_ns[kStragglerCategories] = {0, 0, 0, 0}; // unions, by StragglerCategory
  int64_t busy_ns = 0;                                          // union of all of it
  bool operator==(const StragglerWork& other) const = default;
};
struct StragglerWindow {
  int64_t step = -1;      // as the trace records it; -1: numbered by its place among its rank's steps
  int64_t begin_ns = 0;   // the window's (a step trace's first slice)
  StragglerWork gpu, host;
  int64_t host_input_ns = 0;  // union of host input ops and input annotations
  bool operator==(const StragglerWindow& other) const = default;
};
struct StragglerDigest {
  std::string source;
  int32_t rank = -1;              // StepInfo.rank, -1 when unknown
  int64_t first_instant_ns = 0;   // epoch + span begin: where the rank's correction is taken
  std::string error;              // why the input cannot be compared ("" when it can)
  std::vector<StragglerWindow> windows;
  bool operator==(const StragglerDigest& other) const = default;
};
StragglerDigest DigestStragglers(const trace::Trace& trace);
// ComputeStragglers from the inputs' digests (in input order) and their clocks' alignment
// (AlignDigests of the same inputs): the same report.
StatusOr<StragglerReport> CombineStragglers(std::span<const StragglerDigest> inputs, AlignmentReport alignment,
                                            const StragglerOptions& options = {});

}  // namespace stepscope::analysis
