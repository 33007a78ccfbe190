// The document (document.h): the timeline's index and colours built once from the trace, and
// the flows of a slice found on request.
#include "viewer/load/document.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <future>

#include "profiler/formats/reader.h"
#include "viewer/load/overview.h"
#include "viewer/timeline_data/slice_colors.h"

namespace stepscope::viewer {

TraceDocument::TraceDocument(trace::Trace trace, std::string path, std::shared_ptr<const RankMerge> ranks,
                             std::vector<trace::Truncation> truncations, std::shared_ptr<const Overview> overview)
    : path_(std::move(path)),
      trace_(std::make_unique<const trace::Trace>(std::move(trace))),
      rank_merge_(std::move(ranks)),
      truncations_(std::move(truncations)),
      overview_(std::move(overview)) {
  index_ = std::make_unique<TimelineIndex>(*trace_);
  // A colour per label, by op type (by name when the op type is empty).
  const trace::LabelTable& labels = trace_->labels();
  colors_.resize(labels.size());
  for (trace::LabelId id = 0; id < labels.size(); ++id) {
    const trace::SliceLabel& label = labels[id];
    colors_[id] = ColorForName(trace_->str(label.op_type != 0 ? label.op_type : label.name));
  }
}

const TraceDocument::SliceFlows& TraceDocument::FlowsOf(uint32_t slice) const {
  if (last_flows_.slice == slice) return last_flows_;
  const auto& flows = trace_->flows();
  auto scan = [&](size_t begin, size_t end, SliceFlows& found) {
    for (size_t f = begin; f < end; ++f) {
      if (flows[f].from_slice == slice) found.from.push_back(static_cast<uint32_t>(f));
      if (flows[f].to_slice == slice) found.to.push_back(static_cast<uint32_t>(f));
    }
  };
  last_flows_ = {};
  // A big table's second half on another core (10^7 flows: 28 ms on one).
  constexpr size_t kScanAloneBelow = size_t{1} << 16;
  if (flows.size() < kScanAloneBelow) {
    scan(0, flows.size(), last_flows_);
  } else {
    SliceFlows later;
    auto helper = std::async(std::launch::async, scan, flows.size() / 2, flows.size(), std::ref(later));
    scan(0, flows.size() / 2, last_flows_);
    helper.get();
    last_flows_.from.insert(last_flows_.from.end(), later.from.begin(), later.from.end());
    last_flows_.to.insert(last_flows_.to.end(), later.to.begin(), later.to.end());
  }
  last_flows_.slice = slice;
  return last_flows_;
}

std::vector<uint32_t> TraceDocument::FlowsFrom(uint32_t slice) const {
  std::lock_guard<std::mutex> lock(flows_mutex_);
  return FlowsOf(slice).from;
}

std::vector<uint32_t> TraceDocument::FlowsTo(uint32_t slice) const {
  std::lock_guard<std::mutex> lock(flows_mutex_);
  return FlowsOf(slice).to;
}

size_t TraceDocument::extra_bytes() const {
  return index_->memory_bytes() + colors_.capacity() * sizeof(uint32_t);
}

StatusOr<std::shared_ptr<const TraceDocument>> OpenDocument(const std::string& path,
                                                            const std::atomic<bool>* cancel,
                                                            const trace::ReadTraceOptions& read) {
  auto cancelled = [&] { return cancel != nullptr && cancel->load(); };
  if (cancelled()) return Status(StatusCode::kCancelled, "opening " + path + " was cancelled");
  trace::ReadTraceOptions options = read;
  options.on_progress = [&](const trace::ReadProgress& progress) {
    return !cancelled() && (!read.on_progress || read.on_progress(progress));
  };
  trace::Truncation cut;
  if (options.allow_truncated) options.truncation = &cut;
  ASSIGN_OR_RETURN(trace::Trace trace, trace::ReadTrace(path, options));
  if (cancelled()) return Status(StatusCode::kCancelled, "opening " + path + " was cancelled");
  std::vector<trace::Truncation> truncations;
  if (!cut.file.empty()) truncations.push_back(std::move(cut));
  return MakeDocument(std::move(trace), path, nullptr, std::move(truncations));
}

StatusOr<std::shared_ptr<const TraceDocument>> MakeDocument(trace::Trace trace, const std::string& name,
                                                            std::shared_ptr<const RankMerge> ranks,
                                                            std::vector<trace::Truncation> truncations) {
  if (trace.slices().empty()) {
    return InvalidInput(name + ": the trace holds no slices (no ops, kernels or events to show)");
  }
  return std::shared_ptr<const TraceDocument>(
      std::make_shared<TraceDocument>(std::move(trace), name, std::move(ranks), std::move(truncations)));
}

StatusOr<std::shared_ptr<const TraceDocument>> OpenMergedDocument(
    const std::vector<std::string>& files, const std::string& name, const std::atomic<bool>* cancel,
    const std::function<void(const std::string& file)>& on_file, std::string* note, bool allow_truncated,
    analysis::AlignMethod align) {
  auto cancelled = [&] { return cancel != nullptr && cancel->load(); };
  auto stop = [&] { return Status(StatusCode::kCancelled, "opening " + name + " was cancelled"); };
  std::vector<trace::Trace> traces;
  std::vector<trace::Truncation> truncations;
  for (const std::string& file : files) {
    if (cancelled()) return stop();
    if (on_file) on_file(file);
    trace::Truncation cut;
    auto trace = trace::ReadTrace(file, {.allow_truncated = allow_truncated, .truncation = &cut});
    if (!trace.ok()) return Status(trace.status().code(), trace.status().message() + " (nothing from this merge was opened)");
    if (!cut.file.empty()) truncations.push_back(std::move(cut));
    traces.push_back(std::move(trace).value());
  }
  auto ranks = std::make_shared<RankMerge>();
  if (traces.size() < 2) ranks->stragglers_error = "one trace, no ranks to compare";
  std::optional<PendingRankPaths> paths;
  if (traces.size() > 1) {
    auto stragglers = analysis::ComputeStragglers(traces, {.align = align});
    if (stragglers.ok()) {
      ranks->stragglers = std::move(stragglers).value();
    } else {
      ranks->stragglers_error = stragglers.status().message();
    }
    if (cancelled()) return stop();
    // The path walks the ranks' own traces, which the merge consumes: its slices are noted now.
    analysis::CrossRankPaths across = analysis::ComputeCrossRankPaths(traces, align);
    if (across.alignment.ranks.size() > 1) paths = NoteRankPaths(traces, std::move(across));
  }
  if (cancelled()) return stop();
  analysis::MergeResult merged = analysis::MergeTraces(std::move(traces), align);
  ranks->alignment = merged.report.alignment;
  if (paths) ranks->rank_paths = ResolveRankPaths(std::move(*paths), merged.trace, merged.report);
  if (note != nullptr) {
    // Steps as the stragglers analysis numbers them (ProfilerStep#N windows too), not the inputs'
    // step numbers, which PyTorch traces do not have. The method as the CLI states it, and why a
    // method asked for was not applied.
    *note = "Merged " + std::to_string(merged.report.inputs.size()) + " traces, " + AlignmentText(ranks->alignment) +
            ": " + std::to_string(merged.report.unaligned) + " not clock-aligned; " +
            (ranks->stragglers ? std::to_string(ranks->stragglers->steps.size()) +
                                     (ranks->stragglers->steps.size() == 1 ? " step" : " steps") + " compared across ranks"
                               : "no stragglers: " + ranks->stragglers_error);
    for (const std::string& why : ranks->alignment.notes) *note += "; note: " + why;
  }
  ranks->inputs = std::move(merged.report.inputs);
  return MakeDocument(std::move(merged.trace), name, std::move(ranks), std::move(truncations));
}

std::string AlignmentText(const analysis::AlignmentReport& alignment) {
  return "clocks aligned by " + std::string(analysis::AlignMethodName(alignment.method));
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

void ReleaseFreeMemory() { malloc_trim(0); }

}  // namespace stepscope::viewer
