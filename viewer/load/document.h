// A trace opened in the viewer: the immutable Trace plus what the timeline draws from (the
// per-level index, op type colours). Built once off the UI thread and then only read, so widgets
// paint from it without locks (the flows of the last slice asked about are kept under one). The analyses the panes show (op
// statistics, memory timelines) are computed from it separately, after the first frame.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/formats/reader.h"
#include "profiler/trace/trace.h"
#include "viewer/load/rank_paths.h"
#include "viewer/timeline_data/timeline_index.h"

namespace stepscope::viewer {

// A document that merges per-rank traces (a directory of ranks, --merge): what each input
// became in the merged trace, and the stragglers across the inputs, computed from the inputs
// before the merge (ComputeStragglers compares one trace per rank; the merged trace's ranks
// cannot be taken apart again).
struct RankMerge {
  std::vector<analysis::MergedInput> inputs;
  std::optional<analysis::StragglerReport> stragglers;
  std::string stragglers_error;  // why there is no report (two runs mixed, no steps)
  // How the ranks' clocks were aligned (the method applied, why others were not, each rank's
  // offset), as `stepscope align` reports it; and the critical path of each step across the
  // ranks, on the merged timeline.
  analysis::AlignmentReport alignment;
  std::vector<MergedRankPath> rank_paths;
};

struct Overview;  // overview.h

class TraceDocument {
 public:
  TraceDocument(trace::Trace trace, std::string path, std::shared_ptr<const RankMerge> ranks = nullptr,
                std::vector<trace::Truncation> truncations = {}, std::shared_ptr<const Overview> overview = nullptr);
  TraceDocument(const TraceDocument&) = delete;
  TraceDocument& operator=(const TraceDocument&) = delete;

  const std::string& path() const { return path_; }
  const trace::Trace& trace() const { return *trace_; }
  const TimelineIndex& index() const { return *index_; }
  // Null unless the document is a merge of several traces.
  const RankMerge* rank_merge() const { return rank_merge_.get(); }
  // Non-null for the overview of a job too large to merge (overview.h): its trace holds each
  // rank's summary, and its ranks open in full on demand (OpenOverviewRanks).
  const Overview* overview() const { return overview_.get(); }
  // The input files read only up to a cut (opened with allow_truncated), which the window says in
  // its title and a banner over the timeline; empty when every input was whole.
  const std::vector<trace::Truncation>& truncations() const { return truncations_; }
  // A preview: the first part of a big file, shown while the rest loads (0: the whole file).
  int64_t preview_bytes() const {
    return trace_->import_stats().Get("json_preview_bytes_read") + trace_->import_stats().Get("perfetto_preview_bytes_read");
  }
  // 0xRRGGBB of a slice, by op type (by name when the op type is empty).
  uint32_t ColorOf(const trace::Slice& slice) const { return colors_[slice.label]; }
  // Indices into trace().flows() leaving / entering `slice`, in flow order. Found by a scan of
  // the flows (a few milliseconds for 10^7) and kept for the last slice asked about: the
  // selection, which the timeline asks about every frame. Tables of the flows by either end
  // would hold 8 bytes a flow for as long as the document is open.
  std::vector<uint32_t> FlowsFrom(uint32_t slice) const;
  std::vector<uint32_t> FlowsTo(uint32_t slice) const;
  // Bytes held by the index and colours (the Trace is counted by the caller).
  size_t extra_bytes() const;

 private:
  std::string path_;
  std::unique_ptr<const trace::Trace> trace_;
  std::unique_ptr<TimelineIndex> index_;
  std::shared_ptr<const RankMerge> rank_merge_;
  std::vector<trace::Truncation> truncations_;
  std::shared_ptr<const Overview> overview_;
  std::vector<uint32_t> colors_;      // per label
  struct SliceFlows {
    int64_t slice = -1;
    std::vector<uint32_t> from, to;
  };
  // The flows of `slice`, scanned for unless it was the last one asked about (under flows_mutex_).
  const SliceFlows& FlowsOf(uint32_t slice) const;
  mutable std::mutex flows_mutex_;
  mutable SliceFlows last_flows_;
};

// Reads one trace file (any format the Trace library reads) and builds its document. The
// error names the file. `cancel` is polled between stages; a cancelled load returns kCancelled.
// `read` asks for a preview, progress or a file cut short read up to its cut
// (trace::ReadTraceOptions::allow_truncated; the cut is then in truncations()); `cancel` also
// stops a read in progress.
StatusOr<std::shared_ptr<const TraceDocument>> OpenDocument(const std::string& path,
                                                            const std::atomic<bool>* cancel = nullptr,
                                                            const trace::ReadTraceOptions& read = {});
// Builds the document of a trace already in memory (a merge of several files, a generated one).
StatusOr<std::shared_ptr<const TraceDocument>> MakeDocument(trace::Trace trace, const std::string& name,
                                                            std::shared_ptr<const RankMerge> ranks = nullptr,
                                                            std::vector<trace::Truncation> truncations = {});

// Reads `files` and merges them into one document (a directory of per-rank traces): the
// stragglers are computed from the inputs before the merge takes them (RankMerge). `on_file` is
// told each file before it is read; `note` gets what the merge did (inputs, clocks not aligned,
// steps compared across ranks). One unreadable file fails the whole merge, naming it (a merge with a
// rank missing would mislead); a cancelled merge returns kCancelled. `allow_truncated` reads
// files cut short up to their cut (truncations()). `align` is the clock alignment of the
// merge, the stragglers and the cross-rank critical path (`--align`; kAuto: the best available).
StatusOr<std::shared_ptr<const TraceDocument>> OpenMergedDocument(
    const std::vector<std::string>& files, const std::string& name, const std::atomic<bool>* cancel,
    const std::function<void(const std::string& file)>& on_file, std::string* note, bool allow_truncated = false,
    analysis::AlignMethod align = analysis::AlignMethod::kAuto);

// "clocks aligned by collectives": the method applied, as the CLI states it.
std::string AlignmentText(const analysis::AlignmentReport& alignment);

// Resident set size of this process in bytes (from /proc/self/statm), 0 when unknown.
int64_t ResidentBytes();
// Returns freed heap pages to the system so that resident size reflects live data.
void ReleaseFreeMemory();

}  // namespace stepscope::viewer
