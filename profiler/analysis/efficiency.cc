// The efficiency report (efficiency.h): ops' costs joined to the device time of the kernels they
// launched, added up per op type, per kernel and per step, then set against the device's peak.
#include "profiler/analysis/efficiency.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "profiler/analysis/gpu_work.h"

namespace stepscope::analysis {
namespace {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

// The index of `slice` in the costs (sorted by slice), -1 when it has none.
int64_t CostIndex(const OpCostReport& costs, uint32_t slice) {
  const auto it = std::lower_bound(costs.costs.begin(), costs.costs.end(), slice,
                                   [](const OpCost& cost, uint32_t s) { return cost.slice < s; });
  return it != costs.costs.end() && it->slice == slice ? it - costs.costs.begin() : -1;
}

// The costed op a kernel belongs to: the op that launched it or the nearest op around that one
// with a cost (the outermost costed op holds the cost of what it calls); -1 when none.
int64_t CostedLauncher(const Trace& trace, const OpCostReport& costs, const LaunchIndex& launches, uint32_t kernel) {
  const int64_t from = launches[kernel];
  if (from < 0) return -1;
  for (int64_t op = LaunchingOp(trace, static_cast<uint32_t>(from)); op >= 0;
       op = EnclosingOp(trace, static_cast<uint32_t>(op))) {
    const int64_t index = CostIndex(costs, static_cast<uint32_t>(op));
    if (index >= 0) return index;
  }
  return -1;
}

int64_t AddKnown(int64_t total, int64_t value) {
  if (value < 0) return total;
  return total < 0 ? value : total + value;
}

std::string SourcesText(uint32_t sources) {
  std::string out;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    if ((sources & (1u << bit)) == 0) continue;
    out += (out.empty() ? "" : "+") + std::string(CostSourceName(static_cast<CostSource>(bit)));
  }
  return out;
}

template <typename Array>
size_t LargestIndex(const Array& values) {
  return static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

std::optional<double> Utilisation(int64_t flops, int64_t duration_ns, const PeakChoice& peak) {
  if (!peak.known() || duration_ns <= 0) return std::nullopt;
  return static_cast<double>(flops) / (static_cast<double>(duration_ns) * 1e-9) / peak.flops_per_s;
}

void FinishTotal(EfficiencyTotal& total, const PeakChoice& peak) {
  if (!total.flops_known) return;
  total.mfu = Utilisation(total.model_flops, total.duration_ns, peak);
  total.hfu = Utilisation(total.flops, total.duration_ns, peak);
  if (total.duration_ns > 0) total.model_flops_per_s = static_cast<double>(total.model_flops) / (total.duration_ns * 1e-9);
}

std::vector<EfficiencyRow> SortedRows(std::vector<EfficiencyRow> rows) {
  std::sort(rows.begin(), rows.end(), [](const EfficiencyRow& a, const EfficiencyRow& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  return rows;
}

}  // namespace

Achieved Roofline(int64_t flops, int64_t bytes, int64_t time_ns, const PeakChoice& peak) {
  Achieved out;
  if (time_ns <= 0) return out;
  const double seconds = static_cast<double>(time_ns) * 1e-9;
  if (flops >= 0) out.flops_per_s = static_cast<double>(flops) / seconds;
  if (bytes >= 0) out.bytes_per_s = static_cast<double>(bytes) / seconds;
  if (flops >= 0 && bytes > 0) out.intensity = static_cast<double>(flops) / static_cast<double>(bytes);
  if (!peak.known() || peak.bytes_per_s <= 0 || out.intensity < 0) return out;
  const double ridge = peak.flops_per_s / peak.bytes_per_s;
  out.bound = out.intensity >= ridge ? "compute" : "memory";
  const double roof = std::min(peak.flops_per_s, out.intensity * peak.bytes_per_s);
  if (roof > 0) out.share_of_peak = out.flops_per_s / roof;
  return out;
}

namespace {

void CountCost(EfficiencyRowSums& state, const OpCost& cost) {
  EfficiencyRow& row = state.row;
  row.flops = AddKnown(row.flops, cost.flops);
  row.bytes = AddKnown(row.bytes, cost.bytes);
  row.reported_flops = AddKnown(row.reported_flops, cost.reported_flops);
  row.model_flops += cost.model_flops;
  if (cost.source != CostSource::kNone) state.sources |= 1u << static_cast<uint32_t>(cost.source);
  state.precision_flops[static_cast<size_t>(cost.precision) % state.precision_flops.size()] += std::max<int64_t>(cost.flops, 1);
  state.class_count[static_cast<size_t>(cost.cost_class) % state.class_count.size()] += 1;
}

// A row's longest op or kernel: the first of the longest, over the inputs in order.
void KeepLongest(EfficiencyRow& row, int64_t slice, int64_t time_ns) {
  if (row.longest_slice < 0 || time_ns > row.longest_ns) {
    row.longest_slice = slice;
    row.longest_ns = time_ns;
  }
}

// `part`'s sums added to `into` (every sum is associative, so inputs summed apart add up to
// inputs summed together).
void AddRowSums(EfficiencyRowSums& into, const EfficiencyRowSums& part) {
  EfficiencyRow& row = into.row;
  row.count += part.row.count;
  row.time_ns += part.row.time_ns;
  row.device_time_ns += part.row.device_time_ns;
  row.flops = AddKnown(row.flops, part.row.flops);
  row.bytes = AddKnown(row.bytes, part.row.bytes);
  row.reported_flops = AddKnown(row.reported_flops, part.row.reported_flops);
  row.model_flops += part.row.model_flops;
  row.costed += part.row.costed;
  if (part.row.longest_slice >= 0) KeepLongest(row, part.row.longest_slice, part.row.longest_ns);
  into.sources |= part.sources;
  for (const auto& [op_type, ns] : part.launcher_time_ns) into.launcher_time_ns[op_type] += ns;
  for (size_t i = 0; i < into.precision_flops.size(); ++i) into.precision_flops[i] += part.precision_flops[i];
  for (size_t i = 0; i < into.class_count.size(); ++i) into.class_count[i] += part.class_count[i];
}

// The steps of `windows` with the FLOPs of the ops that start in them.
std::vector<StepEfficiency> CostSteps(const Trace& trace, const OpCostReport& costs, std::span<const StepWindow> windows,
                                      int32_t rank, bool rank_recorded) {
  std::vector<StepEfficiency> steps;
  for (const StepWindow& w : windows) {
    StepEfficiency step;
    step.rank = rank;
    step.rank_recorded = rank_recorded;
    step.number = w.number;
    step.step = w.step;
    step.marker = w.marker;
    const int64_t begin = w.whole ? trace.span_begin_ns() : w.begin_ns;
    const int64_t end = w.whole ? trace.span_end_ns() : w.end_ns;
    step.duration_ns = std::max<int64_t>(0, end - begin);
    step.flops_known = costs.has_shapes;
    steps.push_back(step);
  }
  // An op counts in the step it starts in. Windows do not overlap: ordered by start, the one an
  // op may be in is the last that starts at or before it (a trace has thousands of steps).
  std::vector<size_t> order(windows.size());
  for (size_t w = 0; w < order.size(); ++w) order[w] = w;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return windows[a].begin_ns < windows[b].begin_ns; });
  for (const OpCost& cost : costs.costs) {
    const int64_t start = trace.slices()[cost.slice].start_ns;
    const auto after = std::upper_bound(order.begin(), order.end(), start,
                                        [&](int64_t t, size_t w) { return t < windows[w].begin_ns; });
    if (after == order.begin()) continue;
    const size_t w = *(after - 1);
    if (!windows[w].whole && start >= windows[w].end_ns) continue;
    StepEfficiency& step = steps[w];
    step.model_flops += cost.model_flops;
    step.flops += std::max<int64_t>(cost.flops, 0);
  }
  return steps;
}

CollectiveBandwidth CostCollectives(const Trace& trace, int32_t rank, const PeakOptions& peak_options,
                                    const CollectiveOptions& collective_options) {
  CollectiveOptions options = collective_options;
  // The link is the device's: --device, else the trace's first GPU.
  if (options.device_name.empty() && !peak_options.device.empty()) {
    const DevicePeaks* row = FindDevicePeaks(peak_options.device);
    if (row != nullptr) options.device_name = row->names.front();
  }
  if (options.device_name.empty() && !trace.step_info().devices.empty()) {
    options.device_name = trace.step_info().devices.front().name;
  }
  CollectiveBandwidth part = ComputeCollectiveBandwidth(trace, options);
  for (CollectiveRow& row : part.rows) row.rank = rank;  // a trace without one is its place among the inputs
  part.calls.clear();
  return part;
}

}  // namespace

EfficiencyInput CostEfficiencyInput(const Trace& trace, std::span<const StepWindow> windows, int32_t input,
                                    const PeakOptions& options, const CollectiveOptions& collective_options) {
  EfficiencyInput part;
  part.source = trace.source_path();
  part.devices = trace.step_info().devices;
  const OpCostReport costs = ComputeOpCosts(trace);
  part.ops_seen = costs.ops_seen;
  part.ops_costed = costs.ops_costed;
  part.has_shapes = costs.has_shapes;
  part.unknown_ops = costs.unknown_ops;

  // Each kernel's time goes to the costed op that launched it; a kernel is costed itself when its
  // op launched no other kernel (the op's FLOPs are then the kernel's, exactly).
  const auto slices = trace.slices();
  const LaunchIndex launches = LaunchOf(trace);
  std::vector<int64_t> device_ns(costs.costs.size(), 0);
  std::vector<uint32_t> kernels_of(costs.costs.size(), 0);
  std::vector<std::pair<uint32_t, int64_t>> kernel_cost;  // (kernel slice, cost index or -1)
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!IsGpuDeviceLane(trace, t)) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto track = trace.track_slices(t);
    for (uint32_t k = 0; k < track.size(); ++k) {
      const Slice& s = track[k];
      if (s.kind != SliceKind::kKernel || s.duplicate()) continue;
      const int64_t index = CostedLauncher(trace, costs, launches, first + k);
      if (index >= 0) {
        device_ns[index] += s.dur_ns;
        ++kernels_of[index];
      }
      kernel_cost.emplace_back(first + k, index);
    }
  }

  for (size_t i = 0; i < costs.costs.size(); ++i) {
    const OpCost& cost = costs.costs[i];
    const Slice& op = slices[cost.slice];
    EfficiencyRowSums& state = part.ops[std::string(trace.str(trace.slice_op_type(op)))];
    state.row.count += 1;
    state.row.device_time_ns += device_ns[i];
    const int64_t time = device_ns[i] > 0 ? device_ns[i] : op.dur_ns;
    state.row.time_ns += time;
    KeepLongest(state.row, cost.slice, time);
    CountCost(state, cost);
    if (cost.model_flops > 0) part.model_flops_by_precision[static_cast<size_t>(cost.precision) % 8] += cost.model_flops;
  }
  for (const auto& [kernel, index] : kernel_cost) {
    const Slice& s = slices[kernel];
    EfficiencyRowSums& state = part.kernels[std::string(trace.str(trace.slice_name(s)))];
    state.row.count += 1;
    state.row.time_ns += s.dur_ns;
    state.row.device_time_ns += s.dur_ns;
    KeepLongest(state.row, kernel, s.dur_ns);
    if (index < 0) continue;
    const OpCost& cost = costs.costs[index];
    state.launcher_time_ns[std::string(trace.str(trace.slice_op_type(slices[cost.slice])))] += s.dur_ns;
    if (kernels_of[index] == 1) {
      state.row.costed += 1;
      CountCost(state, cost);
    }
  }
  const int32_t recorded = trace.step_info().rank;
  const int32_t rank = recorded >= 0 ? recorded : input;
  part.steps = CostSteps(trace, costs, windows, rank, recorded >= 0);
  part.collectives = CostCollectives(trace, rank, options, collective_options);
  return part;
}

void EfficiencyBuilder::Add(const Trace& trace, std::span<const StepWindow> windows, int32_t input) {
  Add(CostEfficiencyInput(trace, windows, input, options_, collective_options_));
}

void EfficiencyBuilder::Add(EfficiencyInput input) {
  report_.sources.push_back(std::move(input.source));
  if (devices_.empty()) devices_ = std::move(input.devices);
  report_.ops_seen += input.ops_seen;
  report_.ops_costed += input.ops_costed;
  report_.has_shapes = report_.has_shapes || input.has_shapes;
  for (const UnknownOpType& unknown : input.unknown_ops) {
    auto [it, inserted] = unknown_.try_emplace(unknown.op_type, unknown);
    if (!inserted) {
      it->second.count += unknown.count;
      it->second.time_ns += unknown.time_ns;
    }
  }
  for (const auto& [name, sums] : input.ops) AddRowSums(ops_[name], sums);
  for (const auto& [name, sums] : input.kernels) AddRowSums(kernels_[name], sums);
  for (size_t i = 0; i < model_flops_by_precision_.size(); ++i) {
    model_flops_by_precision_[i] += input.model_flops_by_precision[i];
  }
  for (StepEfficiency& step : input.steps) report_.steps.push_back(std::move(step));

  CollectiveBandwidth& all = report_.collectives;
  CollectiveBandwidth& part = input.collectives;
  for (CollectiveRow& row : part.rows) all.rows.push_back(std::move(row));
  all.totals.calls += part.totals.calls;
  all.totals.sized_calls += part.totals.sized_calls;
  all.totals.time_ns += part.totals.time_ns;
  all.totals.exposed_ns += part.totals.exposed_ns;
  all.totals.bytes += part.totals.bytes;
  if (!all.link.bytes_per_s) all.link = part.link;
  for (std::string& note : part.notes) {
    if (std::find(all.notes.begin(), all.notes.end(), note) == all.notes.end()) all.notes.push_back(std::move(note));
  }
}

StatusOr<EfficiencyReport> EfficiencyBuilder::Finish() && {
  EfficiencyReport report = std::move(report_);
  // The precision of most model FLOPs picks the peak, unless --precision says; fp32 when the
  // ops say nothing (or only int8, which the table has no column for).
  Precision precision = Precision::kFp32;
  if (options_.precision) {
    precision = *options_.precision;
    report.precision_why = "--precision";
  } else {
    const size_t largest = LargestIndex(model_flops_by_precision_);
    const auto named = static_cast<Precision>(largest);
    if (model_flops_by_precision_[largest] > 0 && named != Precision::kUnknown && named != Precision::kInt8) {
      precision = named;
      report.precision_why = "most model FLOPs are " + std::string(PrecisionName(precision)) + " (the ops' input types)";
    } else {
      report.precision_why = "the ops' input types are not recorded: fp32 assumed (pass --precision)";
    }
  }
  ASSIGN_OR_RETURN(report.peak, ChoosePeak(devices_, options_, precision));

  auto finish_rows = [&](std::map<std::string, EfficiencyRowSums>& states, bool kernels) {
    std::vector<EfficiencyRow> rows;
    for (auto& [name, state] : states) {
      EfficiencyRow row = std::move(state.row);
      row.name = name;
      row.flops_source = SourcesText(state.sources);
      row.cost_class = static_cast<CostClass>(LargestIndex(state.class_count));
      row.precision = static_cast<Precision>(LargestIndex(state.precision_flops));
      if (!state.launcher_time_ns.empty()) {
        row.op_type = std::max_element(state.launcher_time_ns.begin(), state.launcher_time_ns.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; })->first;
      }
      // A kernel's roofline is over the launches that carry a cost: their share of its time.
      int64_t time = row.time_ns;
      if (kernels && row.count > 0) time = row.costed == row.count ? row.time_ns : -1;
      if (kernels && row.costed == 0) row.cost_class = CostClass::kUnknown;
      row.achieved = time > 0 ? Roofline(row.flops, row.bytes, time, report.peak) : Achieved{};
      rows.push_back(std::move(row));
    }
    return SortedRows(std::move(rows));
  };
  report.ops = finish_rows(ops_, false);
  report.kernels = finish_rows(kernels_, true);
  for (auto& [name, unknown] : unknown_) report.unknown_ops.push_back(std::move(unknown));
  std::sort(report.unknown_ops.begin(), report.unknown_ops.end(), [](const UnknownOpType& a, const UnknownOpType& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.op_type < b.op_type;
  });

  std::map<int32_t, EfficiencyTotal> ranks;
  for (StepEfficiency& step : report.steps) {
    if (step.flops_known) {
      step.mfu = Utilisation(step.model_flops, step.duration_ns, report.peak);
      step.hfu = Utilisation(step.flops, step.duration_ns, report.peak);
    }
    for (EfficiencyTotal* total : {&ranks[step.rank], &report.total}) {
      total->steps += 1;
      // A total's rates are over the steps whose FLOPs are known; their time only.
      if (step.flops_known && !total->flops_known) total->duration_ns = 0;
      total->flops_known = total->flops_known || step.flops_known;
      if (step.flops_known == total->flops_known) total->duration_ns += step.duration_ns;
      total->model_flops += step.model_flops;
      total->flops += step.flops;
    }
  }
  for (auto& [rank, total] : ranks) {
    total.rank = rank;
    FinishTotal(total, report.peak);
    report.ranks.push_back(total);
  }
  FinishTotal(report.total, report.peak);
  const int64_t impossible = std::count_if(report.steps.begin(), report.steps.end(),
                                           [](const StepEfficiency& s) { return s.mfu && *s.mfu > 1; });
  if (impossible > 0) {
    report.notes.push_back("MFU above 100 % in " + std::to_string(impossible) + " of " + std::to_string(report.steps.size()) +
                           " steps: the peak (" + report.peak.source +
                           ") is below the work the shapes record; check --device, --precision and --peak");
  }
  return report;
}

StatusOr<EfficiencyReport> ComputeEfficiency(const Trace& trace, const PeakOptions& options) {
  const auto windows = NumberedStepWindows({&trace, 1}, std::nullopt, StepWindowing::kWholeUnlessSeveral);
  EfficiencyBuilder builder(options);
  builder.Add(trace, windows.front(), 0);
  return std::move(builder).Finish();
}

}  // namespace stepscope::analysis
