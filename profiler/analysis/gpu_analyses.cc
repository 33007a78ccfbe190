#include "profiler/analysis/gpu_analyses.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/gpu_lanes.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/step_analyses.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

namespace {

bool InWindows(const GpuInput& input, int64_t start) {
  if (input.windows.empty()) return true;
  for (const auto& [begin, end] : input.windows) {
    if (start >= begin && start < end) return true;
  }
  return false;
}

// One stream's GPU work, in time order.
struct StreamWork {
  uint32_t device = 0;  // device (or process) track
  uint32_t lane = 0;    // source lane
  std::vector<uint32_t> slices;
};

// The GPU work of one input by source lane, in track order.
std::vector<StreamWork> CollectWork(const GpuInput& input) {
  const Trace& trace = *input.trace;
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  std::map<uint32_t, StreamWork> by_lane;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!IsGpuLane(trace.tracks()[t].kind)) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto lane = trace.track_slices(t);
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const Slice& s = lane[k];
      if (s.duplicate() || !trace::IsDeviceWork(s.kind) || !InWindows(input, s.start_ns)) continue;
      StreamWork& work = by_lane[source_lane[t]];
      if (work.slices.empty()) {
        const int32_t device = trace.DeviceOf(t);
        work.device = static_cast<uint32_t>(device >= 0 ? device : trace.HostOf(t));
        work.lane = source_lane[t];
      }
      work.slices.push_back(first + k);
    }
  }
  std::vector<StreamWork> out;
  for (auto& [lane, work] : by_lane) {
    std::sort(work.slices.begin(), work.slices.end(), [&](uint32_t a, uint32_t b) {
      const Slice& x = trace.slices()[a];
      const Slice& y = trace.slices()[b];
      return std::tie(x.start_ns, y.dur_ns, a) < std::tie(y.start_ns, x.dur_ns, b);
    });
    out.push_back(std::move(work));
  }
  return out;
}

std::string TrackName(const Trace& trace, uint32_t track) { return std::string(trace.str(trace.tracks()[track].name)); }

// The innermost op (not an annotation) enclosing a slice on its track, -1 when none. Slices of a
// track nest and are sorted by start (longer first), so the parent is the nearest earlier slice of
// lower depth.
int64_t EnclosingOp(const Trace& trace, uint32_t slice) {
  const auto& slices = trace.slices();
  const uint32_t first = trace.track_first_slice(slices[slice].track);
  uint16_t depth = slices[slice].depth;
  for (uint32_t i = slice; i > first && depth > 0;) {
    --i;
    if (slices[i].depth >= depth) continue;
    depth = slices[i].depth;
    if (slices[i].kind == SliceKind::kOp) return i;
  }
  return -1;
}

IntervalStats IntervalsOf(std::vector<int64_t> values) {
  IntervalStats stats;
  stats.count = static_cast<int64_t>(values.size());
  if (values.empty()) return stats;
  std::vector<double> d(values.begin(), values.end());
  for (int64_t v : values) stats.total_ns += v;
  stats.max_ns = *std::max_element(values.begin(), values.end());
  stats.p50_ns = Quantile(d, 0.5);
  stats.p95_ns = Quantile(std::move(d), 0.95);
  return stats;
}

DurationStats Durations(const std::vector<int64_t>& values) {
  DurationStats stats;
  stats.count = static_cast<int64_t>(values.size());
  if (values.empty()) return stats;
  std::vector<double> d(values.begin(), values.end());
  double sum = 0;
  for (double v : d) sum += v;
  stats.mean_ns = sum / static_cast<double>(d.size());
  stats.min_ns = *std::min_element(values.begin(), values.end());
  stats.max_ns = *std::max_element(values.begin(), values.end());
  stats.p50_ns = Quantile(d, 0.5);
  stats.p95_ns = Quantile(std::move(d), 0.95);
  return stats;
}

GpuTime TimeOf(const Trace& trace, const std::vector<uint32_t>& slices) {
  GpuTime time;
  Intervals all, compute, comm, memory;
  for (uint32_t i : slices) {
    const Slice& s = trace.slices()[i];
    const std::pair<int64_t, int64_t> interval{s.start_ns, s.end_ns()};
    all.push_back(interval);
    if (IsCommunication(trace, s)) {
      comm.push_back(interval);
    } else if (s.kind == SliceKind::kMemcpy || s.kind == SliceKind::kMemset) {
      memory.push_back(interval);
    } else {
      compute.push_back(interval);
    }
  }
  time.slices = static_cast<int64_t>(slices.size());
  if (all.empty()) return time;
  const Intervals busy = MergeIntervals(std::move(all));
  time.span_ns = busy.back().second - busy.front().first;
  for (const auto& [a, b] : busy) time.busy_ns += b - a;
  time.idle_ns = time.span_ns - time.busy_ns;
  const Intervals compute_union = MergeIntervals(std::move(compute));
  const Intervals comm_union = MergeIntervals(std::move(comm));
  for (const auto& [a, b] : compute_union) time.compute_ns += b - a;
  for (const auto& [a, b] : comm_union) time.communication_ns += b - a;
  for (const auto& [a, b] : MergeIntervals(std::move(memory))) time.memory_ns += b - a;
  time.compute_communication_overlap_ns = IntersectionLength(compute_union, comm_union);
  return time;
}

void Add(GpuTime& to, const GpuTime& from) {
  to.span_ns += from.span_ns;
  to.busy_ns += from.busy_ns;
  to.idle_ns += from.idle_ns;
  to.compute_ns += from.compute_ns;
  to.communication_ns += from.communication_ns;
  to.memory_ns += from.memory_ns;
  to.compute_communication_overlap_ns += from.compute_communication_overlap_ns;
  to.slices += from.slices;
}

std::string WorkKind(SliceKind kind) { return std::string(trace::SliceKindName(kind)); }

}  // namespace

// ---- gpu -------------------------------------------------------------------------------------

std::vector<GpuBreakdown> ComputeGpuBreakdown(const std::vector<GpuInput>& inputs) {
  // (rank, device name) -> row; streams by name within it, in first-seen (track) order.
  std::vector<GpuBreakdown> rows;
  std::map<std::pair<int32_t, std::string>, size_t> index;
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const int32_t rank = trace.step_info().rank;
    std::map<uint32_t, std::vector<uint32_t>> by_device;
    std::vector<uint32_t> device_order;
    const std::vector<StreamWork> work = CollectWork(input);
    for (const StreamWork& w : work) {
      auto [it, inserted] = by_device.try_emplace(w.device);
      if (inserted) device_order.push_back(w.device);
      it->second.insert(it->second.end(), w.slices.begin(), w.slices.end());
    }
    for (uint32_t device : device_order) {
      const std::string name = TrackName(trace, device);
      auto [it, inserted] = index.try_emplace({rank, name}, rows.size());
      if (inserted) rows.push_back({rank, name, {}, {}});
      GpuBreakdown& row = rows[it->second];
      Add(row.time, TimeOf(trace, by_device[device]));
      for (const StreamWork& w : work) {
        if (w.device != device) continue;
        const std::string stream = TrackName(trace, w.lane);
        auto s = std::find_if(row.streams.begin(), row.streams.end(),
                              [&](const GpuStreamTime& x) { return x.stream == stream; });
        if (s == row.streams.end()) s = row.streams.insert(row.streams.end(), {stream, {}});
        Add(s->time, TimeOf(trace, w.slices));
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const GpuBreakdown& a, const GpuBreakdown& b) { return a.rank < b.rank; });
  return rows;
}

std::vector<GpuBreakdown> ComputeGpuBreakdown(const Trace& trace) { return ComputeGpuBreakdown({GpuInput{&trace, {}}}); }

// ---- idle ------------------------------------------------------------------------------------

std::string_view IdleCauseName(IdleCause cause) {
  switch (cause) {
    case IdleCause::kHostWait: return "host_wait";
    case IdleCause::kKernelWait: return "kernel_wait";
    default: return "other";
  }
}

IdleReport ComputeIdle(const std::vector<GpuInput>& inputs, const IdleOptions& options) {
  IdleReport report;
  report.rule = options.rule;
  report.consecutive_kernel_delay_ns = options.consecutive_kernel_delay_ns;
  struct Row {
    StreamIdle idle;
    std::vector<int64_t> all, by_cause[3];
  };
  std::vector<Row> rows;
  std::map<std::tuple<int32_t, std::string, std::string>, size_t> index;
  std::vector<int64_t> totals[3];
  std::vector<IdleGapDetail> gaps;
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const int32_t rank = trace.step_info().rank;
    const std::vector<int64_t> launch = LaunchOf(trace);
    for (const StreamWork& w : CollectWork(input)) {
      const std::string device = TrackName(trace, w.device), stream = TrackName(trace, w.lane);
      auto [it, inserted] = index.try_emplace({rank, device, stream}, rows.size());
      if (inserted) {
        rows.emplace_back();
        rows.back().idle.rank = rank;
        rows.back().idle.device = device;
        rows.back().idle.stream = stream;
      }
      Row& row = rows[it->second];
      row.idle.work += static_cast<int64_t>(w.slices.size());
      int64_t prev_end = INT64_MIN;
      int64_t prev = -1;
      for (uint32_t i : w.slices) {
        const Slice& s = trace.slices()[i];
        if (prev >= 0 && s.start_ns > prev_end) {
          const int64_t gap = s.start_ns - prev_end;
          const int64_t r = launch[i];
          IdleCause cause = IdleCause::kOther;
          if (options.rule == IdleRule::kLaunchEnd) {
            if (r >= 0) cause = trace.slices()[r].end_ns() > prev_end ? IdleCause::kHostWait : IdleCause::kKernelWait;
          } else {
            if (r >= 0 && trace.slices()[r].start_ns > prev_end) {
              cause = IdleCause::kHostWait;
            } else if (gap < options.consecutive_kernel_delay_ns) {
              cause = IdleCause::kKernelWait;
            }
          }
          const int c = static_cast<int>(cause);
          row.all.push_back(gap);
          row.by_cause[c].push_back(gap);
          totals[c].push_back(gap);
          IdleGapDetail detail;
          detail.rank = rank;
          detail.device = device;
          detail.stream = stream;
          detail.begin_ns = prev_end;
          detail.end_ns = s.start_ns;
          detail.cause = cause;
          detail.before = std::string(trace.str(trace.slices()[static_cast<size_t>(prev)].name));
          detail.after = std::string(trace.str(s.name));
          if (r >= 0) {
            detail.launch = std::string(trace.str(trace.slices()[r].name));
            detail.launch_end_ns = trace.slices()[r].end_ns();
            const int64_t op = EnclosingOp(trace, static_cast<uint32_t>(r));
            if (op >= 0) detail.host_op = std::string(trace.str(trace.slices()[op].name));
          }
          gaps.push_back(std::move(detail));
        }
        if (s.end_ns() > prev_end) {
          prev_end = s.end_ns();
          prev = i;
        }
      }
    }
  }
  for (Row& row : rows) {
    row.idle.all = IntervalsOf(std::move(row.all));
    for (int c = 0; c < 3; ++c) row.idle.by_cause[c] = IntervalsOf(std::move(row.by_cause[c]));
    report.streams.push_back(std::move(row.idle));
  }
  std::stable_sort(report.streams.begin(), report.streams.end(),
                   [](const StreamIdle& a, const StreamIdle& b) { return a.rank < b.rank; });
  for (int c = 0; c < 3; ++c) report.by_cause[c] = IntervalsOf(std::move(totals[c]));
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const IdleGapDetail& a, const IdleGapDetail& b) { return a.length() > b.length(); });
  if (gaps.size() > options.largest) gaps.resize(options.largest);
  report.largest = std::move(gaps);
  return report;
}

// ---- launches --------------------------------------------------------------------------------

LaunchReport ComputeLaunches(const std::vector<GpuInput>& inputs, const LaunchOptions& options) {
  LaunchReport report;
  report.runtime_cutoff_ns = options.runtime_cutoff_ns;
  report.delay_cutoff_ns = options.delay_cutoff_ns;
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const std::vector<int64_t> launch = LaunchOf(trace);
    std::vector<Launch> mine;
    for (const StreamWork& w : CollectWork(input)) {
      for (uint32_t i : w.slices) {
        ++report.work;
        const int64_t r = launch[i];
        if (r < 0) {
          ++report.unlinked;
          continue;
        }
        const Slice& s = trace.slices()[i];
        const Slice& call = trace.slices()[static_cast<size_t>(r)];
        Launch l;
        l.rank = trace.step_info().rank;
        l.device = TrackName(trace, w.device);
        l.stream = TrackName(trace, w.lane);
        l.runtime = std::string(trace.str(call.name));
        l.kernel = std::string(trace.str(s.name));
        l.kind = WorkKind(s.kind);
        if (const trace::KernelArgs* args = trace.kernel_args(i)) l.correlation = args->correlation;
        if (const trace::TransferArgs* args = trace.transfer_args(i)) l.correlation = args->correlation;
        l.runtime_start_ns = call.start_ns;
        l.cpu_ns = call.dur_ns;
        l.gpu_start_ns = s.start_ns;
        l.gpu_ns = s.dur_ns;
        l.delay_ns = s.start_ns - call.end_ns();
        const int64_t op = EnclosingOp(trace, static_cast<uint32_t>(r));
        if (op >= 0) {
          const Slice& o = trace.slices()[static_cast<size_t>(op)];
          l.host_op = std::string(trace.str(o.name));
          l.op_to_launch_ns = call.start_ns - o.start_ns;
        }
        mine.push_back(std::move(l));
      }
    }
    std::stable_sort(mine.begin(), mine.end(),
                     [](const Launch& a, const Launch& b) { return a.runtime_start_ns < b.runtime_start_ns; });
    for (Launch& l : mine) report.launches.push_back(std::move(l));
  }
  std::vector<int64_t> cpu, gpu, delay;
  struct Op {
    std::vector<int64_t> delay, op_to_launch;
    std::map<std::string, std::vector<int64_t>> kernels;
  };
  std::map<std::string, Op> ops;
  for (const Launch& l : report.launches) {
    cpu.push_back(l.cpu_ns);
    gpu.push_back(l.gpu_ns);
    delay.push_back(l.delay_ns);
    if (l.cpu_ns > options.runtime_cutoff_ns) report.long_runtime.push_back(l);
    if (l.delay_ns > options.delay_cutoff_ns) report.long_delay.push_back(l);
    Op& op = ops[l.host_op.empty() ? "(no op)" : l.host_op];
    op.delay.push_back(l.delay_ns);
    if (l.op_to_launch_ns >= 0) op.op_to_launch.push_back(l.op_to_launch_ns);
    op.kernels[l.kernel].push_back(l.delay_ns);
  }
  report.cpu = Durations(cpu);
  report.gpu = Durations(gpu);
  report.delay = Durations(delay);
  report.long_runtime_count = static_cast<int64_t>(report.long_runtime.size());
  report.long_delay_count = static_cast<int64_t>(report.long_delay.size());
  std::stable_sort(report.long_runtime.begin(), report.long_runtime.end(),
                   [](const Launch& a, const Launch& b) { return a.cpu_ns > b.cpu_ns; });
  std::stable_sort(report.long_delay.begin(), report.long_delay.end(),
                   [](const Launch& a, const Launch& b) { return a.delay_ns > b.delay_ns; });
  if (report.long_runtime.size() > options.outliers) report.long_runtime.resize(options.outliers);
  if (report.long_delay.size() > options.outliers) report.long_delay.resize(options.outliers);
  for (auto& [name, op] : ops) {
    OpLaunches row;
    row.op = name;
    row.launches = static_cast<int64_t>(op.delay.size());
    row.delay = Durations(op.delay);
    row.op_to_launch = Durations(op.op_to_launch);
    for (auto& [kernel, delays] : op.kernels) {
      row.kernels.push_back({kernel, static_cast<int64_t>(delays.size()), Durations(delays)});
    }
    std::stable_sort(row.kernels.begin(), row.kernels.end(),
                     [](const OpKernelLaunches& a, const OpKernelLaunches& b) { return a.count > b.count; });
    report.by_op.push_back(std::move(row));
  }
  std::stable_sort(report.by_op.begin(), report.by_op.end(),
                   [](const OpLaunches& a, const OpLaunches& b) { return a.launches > b.launches; });
  return report;
}

}  // namespace stepscope::analysis
