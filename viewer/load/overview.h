// The overview of a job too large to merge in memory: each rank's trace is read (several at once
// where the memory budget allows), reduced to a small summary and dropped, so the viewer holds
// summaries, never traces. The summaries make one small trace, a process per rank, drawn and
// analysed as a merge is; a rank (or a few) opens in full on demand, on the same clocks.
//
// A rank's summary (RankSummary), on the rank's own clock:
//  - per lane (a track with work: ops, a GPU stream, a collective lane), its busy time exactly
//    (the union of its work: annotations, syncs and Python frames are not work) and its busy
//    share in each of kOverviewBins equal bins over the rank's span, 16 bits a bin. The overview
//    draws a lane as runs of busy bins, each run named by its share ("busy >= 90 %", "busy
//    50-90 %", "busy < 50 %"): a piece of work is placed within one bin (the span / 1,024), and a
//    bin's busy time is within 1/65,535 of the bin of the trace's;
//  - its step windows (NumberedStepWindows), the kOverviewLongestPerStep longest slices of work
//    per step (whole: name, kind, lane, start, duration) and its collectives (the digest the
//    clock alignment matches them by);
//  - the digests of `stepscope align|stragglers` (distributed_digest.h InputDigest), from which
//    the clocks are aligned (AlignDigests) and the stragglers compared (CombineStragglers)
//    exactly as for a merge of the same ranks.
// About 2 KB per lane, 32 bytes per collective (in the clock digest), about 100 bytes per step
// and longest slice (bytes() says): a generated rank of 2 MB of Kineto JSON, 20 KB.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/distributed_digest.h"
#include "profiler/trace/trace.h"

namespace stepscope::viewer {

class TraceDocument;

inline constexpr int kOverviewBins = 1024;
inline constexpr int kOverviewLongestPerStep = 4;
inline constexpr int kOverviewBusyScale = 65535;  // a bin's busy share, 0..kOverviewBusyScale

// One of the rank's tracks, as merge.h copies it under the rank's process.
struct OverviewTrack {
  std::string name;
  int32_t parent = -1;  // index into RankSummary::tracks, -1 for a root (the rank's host)
  trace::TrackKind kind = trace::TrackKind::kOther;
  int32_t sort_index = 0;
  bool concurrent = false;
  int32_t lane = -1;  // index into RankSummary::lanes, -1: no work of its own
};

struct OverviewLane {
  uint32_t track = 0;          // index into RankSummary::tracks
  int64_t busy_ns = 0;         // the union of its work, exact
  std::vector<uint16_t> bins;  // busy share per bin (kOverviewBins), in 1/kOverviewBusyScale
};

// A slice kept whole: a step window, a longest slice, a collective (absolute ns, own clock).
struct OverviewSlice {
  std::string name;
  trace::SliceKind kind = trace::SliceKind::kOther;
  int32_t track = -1;  // index into RankSummary::tracks; -1: the rank's steps or collectives row
  int64_t start_ns = 0, dur_ns = 0;
};

struct RankSummary {
  std::string source;
  int32_t rank = -1;  // StepInfo.rank, -1 when unknown
  std::string host;
  std::string process;                     // "rank 3 (host-a)", as merge.h names it
  int64_t begin_ns = 0, bin_ns = 1;        // absolute, own clock: bin k is [begin + k bin, begin + (k+1) bin)
  int64_t end_ns = 0;
  std::vector<OverviewTrack> tracks;
  std::vector<OverviewLane> lanes;
  std::vector<OverviewSlice> steps, longest;  // the collectives: digest.clock.collectives
  int64_t slices = 0;                      // in the rank's trace
  analysis::InputDigest digest;            // clock and stragglers (input: its index among the ranks read)
  size_t bytes() const;                    // held by this summary
};

// The summary of one rank's trace (`input`: its index among the ranks read).
RankSummary SummarizeRank(const trace::Trace& trace, size_t input);

// When a directory opens as an overview instead of a merge.
struct OverviewPolicy {
  enum class Mode { kAuto, kAlways, kNever };
  Mode mode = Mode::kAuto;  // kAuto: when EstimatedMergeBytes exceeds the budget
  int64_t budget_bytes = 0; // 0: DefaultMemoryBudget()
};
// A quarter of physical memory.
int64_t DefaultMemoryBudget();
// What merging `files` would hold in memory, from their sizes on disk: a trace in memory takes
// about 3 times its uncompressed file (Kineto JSON 2.4x, protobuf 1.1x, measured in
// docs/viewer.md), a gzipped one about 12 times its compressed size.
int64_t EstimatedTraceBytes(const std::string& file);
int64_t EstimatedMergeBytes(const std::vector<std::string>& files);
// Whether `files` open as an overview under `policy` (one file never does).
bool WantsOverview(const std::vector<std::string>& files, const OverviewPolicy& policy);

struct UnreadRank {
  std::string file;
  std::string message;  // the reader's, naming the file
};

// What an overview document holds besides its small trace: the summaries, the clocks they were
// aligned on, and what could not be read.
struct Overview {
  std::vector<RankSummary> ranks;           // the ranks read, in input order (as RankMerge::inputs)
  analysis::AlignmentReport alignment;      // over `ranks`
  std::vector<UnreadRank> unread;
  int64_t budget_bytes = 0, estimated_merge_bytes = 0;
  int threads = 1;                          // ranks read at once
  size_t summary_bytes() const;             // all the summaries
};

// Reads `files` one rank at a time (in parallel where the budget allows), each reduced to its
// summary, and builds the overview document (aligned by `align`, as a merge would be). A file
// that cannot be read is left out and listed (Overview::unread; `note` names it); only when no
// file can be read does it fail. `on_file` is told each file as its read starts (from the
// reading threads, one call at a time).
StatusOr<std::shared_ptr<const TraceDocument>> OpenOverviewDocument(
    const std::vector<std::string>& files, const std::string& name, const std::atomic<bool>* cancel,
    const std::function<void(const std::string& file)>& on_file, std::string* note,
    analysis::AlignMethod align = analysis::AlignMethod::kAuto, const OverviewPolicy& policy = {});

// The overview's ranks `inputs` (indices into Overview::ranks) read in full and merged on the
// overview's clocks, so that their times equal the overview's.
StatusOr<std::shared_ptr<const TraceDocument>> OpenOverviewRanks(const TraceDocument& overview,
                                                                 const std::vector<size_t>& inputs,
                                                                 const std::atomic<bool>* cancel = nullptr);

// The input of the overview whose rank is `rank` (its index when ranks are unknown); -1: none.
int64_t OverviewInputOfRank(const Overview& overview, int32_t rank);

}  // namespace stepscope::viewer
