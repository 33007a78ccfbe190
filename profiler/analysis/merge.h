// Several traces (ranks, steps) as one: merging them into one timeline with aligned clocks, and
// reporting stragglers. The traces come from the caller (profiler/formats/inputs.h reads a
// directory of per-rank traces).
//
// Clock alignment: by clock_align.h AlignRanks (collectives, the barrier or the clocks as
// recorded; by default the best available). The barrier (AlignClocks below): traces from the
// same host share its clock and are not shifted. A trace from another host is shifted so that
// its TraceSession.clock_sync_nanos (the host clock at a barrier every rank passed together)
// coincides with the reference trace's (the lowest rank of the same step). Without a sync record
// on both sides a trace from another host stays unshifted and is reported (and counted as
// `merge_clock_unaligned`). A rank's drift, when the collectives show one, moves each of its
// times by the correction at that time.
// Each input becomes one process ("rank 1 (host-b) step 12"); tracks, slices, flows, counters
// and StepStats details (outputs, memcpy and kernel records) carry over.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/clock_align.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// How each trace's clock meets the others' (the alignment described above): the offset added to
// its times, and how it was found ("reference", "same host", "clock_sync", "unaligned"). The
// reference of a trace is the lowest rank of the same StepInfo.step (the first input when ranks
// are unknown).
struct ClockAlignment {
  int64_t offset_ns = 0;
  std::string alignment;
};
std::vector<ClockAlignment> AlignClocks(std::span<const trace::Trace> traces);
// The same from what each input records: its rank, step, host and clock sync point.
struct ClockStamp {
  int32_t rank = -1;
  int64_t step = -1;
  std::string host;
  int64_t clock_sync_ns = 0;
};
std::vector<ClockAlignment> AlignClocks(std::span<const ClockStamp> inputs);

struct MergedInput {
  std::string source;        // path
  std::string process;       // process name in the merged trace
  uint32_t process_track = 0;  // its track there
  int32_t rank = -1;         // -1: the input does not record it
  int64_t step = -1;         // StepInfo.step, -1 when the input does not record it
  std::string host;
  int64_t offset_ns = 0;     // added to this input's clock (at its first instant, with a drift)
  std::string alignment;     // "reference", "collectives", "same host", "clock_sync", "unaligned", "clock"
  int64_t begin_ns = 0, end_ns = 0;  // its work (annotations, syncs excluded), merged trace time
  std::string last_device;   // the device (tower) that finished last in this input
  int64_t last_device_lag_ns = 0;    // by how much after the earliest-finishing device
};

// Per step, the rank that finished last: analysis/stragglers.h's straggler and lateness (its
// numbering: ProfilerStep#N, a step trace's number, else each rank's inputs in order).
struct StepStraggler {
  int64_t step = -1;
  size_t input = 0;          // index into MergeReport::inputs of the rank that finished last
  int64_t lag_ns = 0;        // its end minus the earliest end among the step's ranks
  int64_t lag_vs_median_ns = 0;
  size_t ranks = 0;
};

struct MergeReport {
  std::vector<MergedInput> inputs;
  std::vector<StepStraggler> stragglers;  // one per step with more than one rank
  std::string stragglers_error;           // why none were computed (e.g. one rank's step twice)
  int64_t unaligned = 0;
  AlignmentReport alignment;              // the method applied, its notes, each rank's clock
};

struct MergeResult {
  trace::Trace trace;
  MergeReport report;
};

// The process a merge names input `index` after: "rank R", else the file's name (else
// "trace I"), then " (host)" and " step S" where the trace records them.
std::string MergedProcessName(const trace::Trace& trace, size_t index);

// Each input's process track in the built trace. Build() renumbers tracks when it makes overlap
// lanes (each lane goes just after its track: trace.h), so an index AddTrack returned is stale
// after it; the roots of a merge are its inputs' processes, in input order, and stay so.
void FindProcessTracksAfterBuild(const trace::Trace& merged, std::span<MergedInput> inputs);

MergeResult MergeTraces(std::vector<trace::Trace> traces, AlignMethod align = AlignMethod::kAuto);
// The same with the clocks aligned as `alignment` says (one entry per trace in rank_of_input and
// input_alignment): the viewer's overview aligns a whole job from its digests, then merges a
// few of its ranks on those clocks, its epoch at most the overview's (TraceBuilder::SetEpochAtMost)
// so that both count time from the same instant.
MergeResult MergeTraces(std::vector<trace::Trace> traces, AlignmentReport alignment,
                        std::optional<int64_t> epoch_at_most_ns = std::nullopt);

// One trace for analyses: the trace itself when there is one, else the merge of all.
// The single-trace reports (ops, streams, ...) keep the barrier alignment they always had.
trace::Trace OneTrace(std::vector<trace::Trace> traces, AlignMethod align = AlignMethod::kBarrier);

}  // namespace stepscope::analysis
