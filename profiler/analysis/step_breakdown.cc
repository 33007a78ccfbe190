// Each step's time split into input, compute, communication and idle, slow steps and what to do
// about them (step_breakdown.h).
#include "profiler/analysis/step_breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/intervals.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

// The classes of work, in the order an instant is given to them (step_breakdown.h).
enum Level { kDeviceCompute, kCommunicationWork, kInputWork, kHostWork, kLevels };

// Cumulative unions of one window: unions[k] holds the work of levels 0..k, so each part is a
// difference of two lengths and the slices are measured as they pass (in start order).
struct WindowWork {
  UnionInStartOrder unions[kLevels];
  UnionInStartOrder gpu;
  bool has_gpu = false;
};

// The level of a slice of work, or kLevels when it is not work of the step.
int LevelOf(const Trace& trace, const Slice& s, bool gpu_lane) {
  if (s.duplicate() || s.kind == SliceKind::kSync || s.kind == SliceKind::kPythonFrame) return kLevels;
  if (gpu_lane && !trace::IsDeviceWork(s.kind)) return kLevels;  // GPU annotations
  const std::string_view name = trace.str(trace.slice_name(s));
  const std::string_view op_type = trace.str(trace.slice_op_type(s));
  if (s.kind == SliceKind::kAnnotation) return !gpu_lane && IsInputOp(name, op_type) ? kInputWork : kLevels;
  if (IsCommunication(trace, s) || (s.kind == SliceKind::kOp && IsCollectiveOpType(op_type))) return kCommunicationWork;
  if (s.kind == SliceKind::kMemcpy) {
    // A copy between two devices is communication whichever lane records it.
    trace::CopyName copy = trace::ParseCopyName(name);
    if (copy.kind.empty()) copy = trace::ParseCopyName(op_type);
    if (copy.kind == "PtoP") return kCommunicationWork;
  }
  if (gpu_lane) return kDeviceCompute;
  if (IsInputOp(name, op_type)) return kInputWork;
  return kHostWork;
}

// LevelOf once per kind of slice: it reads only the slice's label (name and op type), kind, flags,
// whether its lane is a GPU's and whether its track is a collective track, and its name searches
// (a lowercased copy of each kernel's name, eight substring searches) were a large part of the
// background analyses of a big trace. Duplicates are not cached (a flag, always kLevels).
class LevelCache {
 public:
  explicit LevelCache(const Trace& trace) : trace_(trace), levels_(trace.labels().size() * kPerLabel, kUnknown) {}

  int Of(const Slice& s, bool gpu_lane) {
    if (s.duplicate()) return kLevels;
    const bool collective_track = trace_.tracks()[s.track].kind == trace::TrackKind::kCollective;
    const size_t key = static_cast<size_t>(s.label) * kPerLabel + static_cast<size_t>(s.kind) * 4 +
                       (gpu_lane ? 2 : 0) + (collective_track ? 1 : 0);
    if (key >= levels_.size()) return LevelOf(trace_, s, gpu_lane);  // a kind past the table: not cached
    int8_t& level = levels_[key];
    if (level == kUnknown) level = static_cast<int8_t>(LevelOf(trace_, s, gpu_lane));
    return level;
  }

 private:
  static constexpr size_t kKinds = static_cast<size_t>(SliceKind::kPythonFrame) + 1;
  static constexpr size_t kPerLabel = kKinds * 4;
  static constexpr int8_t kUnknown = -1;
  const Trace& trace_;
  std::vector<int8_t> levels_;  // per (label, kind, GPU lane, collective track)
};

std::pair<int64_t, int64_t> Bounds(const Trace& trace, const StepWindow& w) {
  if (w.whole) return {trace.span_begin_ns(), trace.span_end_ns()};
  return {std::max(w.begin_ns, trace.span_begin_ns()), std::min(w.end_ns, trace.span_end_ns())};
}

// The recommendations a split calls for, largest share first.
std::vector<Recommendation> Recommend(const int64_t part_ns[kStepParts], int64_t total_ns, bool gpu,
                                      int64_t gpu_busy_ns) {
  std::vector<Recommendation> out;
  if (total_ns <= 0) return out;
  auto share = [&](int64_t ns) { return static_cast<double>(ns) / static_cast<double>(total_ns); };
  const double input = share(part_ns[static_cast<int>(StepPart::kInput)]);
  const double comm = share(part_ns[static_cast<int>(StepPart::kCommunication)]);
  const double idle = share(part_ns[static_cast<int>(StepPart::kIdle)]);
  if (input >= kInputBoundShare) out.push_back({Advice::kInputBound, input});
  if (comm >= kCommBoundShare) out.push_back({Advice::kCommunicationBound, comm});
  if (gpu) {
    // Input time is GPU idle time (no device work runs in it): what is left is the host not
    // keeping the GPU fed.
    const double gpu_idle = 1.0 - share(gpu_busy_ns);
    if (gpu_idle - input >= kLaunchBoundShare) out.push_back({Advice::kLaunchBound, gpu_idle});
  }
  if (idle >= kIdleShare) out.push_back({Advice::kIdle, idle});
  if (out.empty()) out.push_back({Advice::kComputeBound, share(part_ns[static_cast<int>(StepPart::kCompute)])});
  std::stable_sort(out.begin(), out.end(),
                   [](const Recommendation& a, const Recommendation& b) { return a.share > b.share; });
  return out;
}

void MarkSlowSteps(StepBreakdown& report) {
  std::vector<double> durations;
  for (const StepSplit& s : report.steps) durations.push_back(static_cast<double>(s.duration_ns));
  report.median_ns = Median(durations);
  report.mad_ns = MedianAbsoluteDeviation(durations);
  if (durations.size() < 3) return;
  report.slow_above_ns = report.median_ns + std::max(kSlowMads * report.mad_ns, kSlowFloor * report.median_ns);
  for (StepSplit& s : report.steps) s.slow = static_cast<double>(s.duration_ns) > report.slow_above_ns;
}

}  // namespace

std::string_view StepPartName(StepPart part) {
  switch (part) {
    case StepPart::kInput: return "input";
    case StepPart::kCompute: return "compute";
    case StepPart::kCommunication: return "communication";
    default: return "idle";
  }
}

std::string_view AdviceName(Advice advice) {
  switch (advice) {
    case Advice::kInputBound: return "input_bound";
    case Advice::kCommunicationBound: return "communication_bound";
    case Advice::kLaunchBound: return "launch_bound";
    case Advice::kIdle: return "idle";
    default: return "compute_bound";
  }
}

std::string RecommendationText(const Recommendation& r) {
  const std::string percent = std::to_string(static_cast<int>(std::lround(100 * r.share))) + " %";
  switch (r.advice) {
    case Advice::kInputBound:
      return "input-bound: " + percent + " of the step waits for data (prefetch, more loader workers)";
    case Advice::kCommunicationBound:
      return "communication-bound: " + percent + " of the step is communication not hidden by compute (see overlap)";
    case Advice::kLaunchBound:
      return "GPU idle " + percent + ": launch-bound, see launch delay (launches, critical-path)";
    case Advice::kIdle:
      return "idle " + percent + ": nothing recorded runs (waits outside the profiled ops)";
    default:
      return "compute-bound: " + percent + " of the step computes (see ops, kernels)";
  }
}

StepBreakdown ComputeStepBreakdown(const Trace& trace, std::span<const StepWindow> windows) {
  StepBreakdown report;
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (const StepWindow& w : windows) bounds.push_back(Bounds(trace, w));
  std::vector<WindowWork> work(windows.size());
  std::vector<bool> gpu_lane(trace.tracks().size());
  LevelCache levels(trace);
  std::vector<std::pair<const Slice*, const Slice*>> lanes;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    gpu_lane[t] = IsGpuDeviceLane(trace, t);
    const auto lane = trace.track_slices(t);
    lanes.emplace_back(lane.data(), lane.data() + lane.size());
  }
  // Slices in start order across tracks; a slice clipped to a window starts at or after the
  // clipped start of every slice before it, so each window's unions are fed in start order.
  MergeByStart(std::move(lanes), [](const Slice& s) { return s.start_ns; }, [&](const Slice& s) {
    const int level = levels.Of(s, gpu_lane[s.track]);
    if (level == kLevels) return;
    const int64_t end = s.end_ns();
    auto first =
        std::partition_point(bounds.begin(), bounds.end(), [&](const auto& b) { return b.second <= s.start_ns; });
    for (auto b = first; b != bounds.end() && b->first < end; ++b) {
      const int64_t from = std::max(s.start_ns, b->first), to = std::min(end, b->second);
      if (from >= to) continue;
      WindowWork& w = work[static_cast<size_t>(b - bounds.begin())];
      for (int k = level; k < kLevels; ++k) w.unions[k].Add(from, to);
      if (gpu_lane[s.track]) {
        w.gpu.Add(from, to);
        w.has_gpu = true;
      }
    }
  });
  for (size_t i = 0; i < windows.size(); ++i) {
    StepSplit split;
    split.number = windows[i].number;
    split.step = windows[i].step;
    split.marker = windows[i].marker;
    split.begin_ns = bounds[i].first;
    split.end_ns = std::max(bounds[i].first, bounds[i].second);
    split.duration_ns = split.end_ns - split.begin_ns;
    const WindowWork& w = work[i];
    const int64_t device = w.unions[kDeviceCompute].length();
    const int64_t with_comm = w.unions[kCommunicationWork].length();
    const int64_t with_input = w.unions[kInputWork].length();
    const int64_t all = w.unions[kHostWork].length();
    split.part_ns[static_cast<int>(StepPart::kCompute)] = device + (all - with_input);
    split.part_ns[static_cast<int>(StepPart::kCommunication)] = with_comm - device;
    split.part_ns[static_cast<int>(StepPart::kInput)] = with_input - with_comm;
    split.part_ns[static_cast<int>(StepPart::kIdle)] = split.duration_ns - all;
    split.gpu = w.has_gpu;
    split.gpu_busy_ns = w.gpu.length();
    split.recommendations = Recommend(split.part_ns, split.duration_ns, split.gpu, split.gpu_busy_ns);
    for (int p = 0; p < kStepParts; ++p) report.part_ns[p] += split.part_ns[p];
    report.total_ns += split.duration_ns;
    report.gpu_busy_ns += split.gpu_busy_ns;
    report.gpu = report.gpu || split.gpu;
    report.steps.push_back(std::move(split));
  }
  MarkSlowSteps(report);
  report.recommendations = Recommend(report.part_ns, report.total_ns, report.gpu, report.gpu_busy_ns);
  return report;
}

StepBreakdown ComputeStepBreakdown(const Trace& trace) {
  const auto windows = NumberedStepWindows(std::span<const Trace>(&trace, 1), std::nullopt, StepWindowing::kEveryStep);
  return ComputeStepBreakdown(trace, windows.front());
}

}  // namespace stepscope::analysis
