// `stepscope gpu`, `idle` and `launches` (gpu_analyses.h): GPU time, idle causes, launch costs.
#include "profiler/analysis/gpu_analyses.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "base/largest_n.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/duration_list.h"
#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/intervals.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/step_analyses.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;
using trace::TrackKind;
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

namespace {

// Idle figures of gap lists taken together (a stream's causes, a cause over all streams): each
// gap is kept once, in its stream's list for its cause.
IntervalStats IntervalsOfSorted(const std::vector<const DurationList*>& lists) {
  const MergedStats merged = StatsOfSorted(lists);
  IntervalStats stats;
  stats.count = merged.count;
  stats.total_ns = merged.total_ns;
  stats.max_ns = merged.max_ns;
  stats.p50_ns = merged.p50_ns;
  stats.p95_ns = merged.p95_ns;
  return stats;
}

// Busy, compute, communication and memory time of the slices of some streams, each stream's list
// sorted by start: the lists are merged by start and every union is measured as the slices pass,
// so nothing is gathered per slice. The overlap of compute and communication is
// |compute| + |communication| - |compute or communication|.
GpuTime TimeOf(const Trace& trace, const std::vector<const std::vector<uint32_t>*>& streams) {
  GpuTime time;
  std::vector<std::pair<const uint32_t*, const uint32_t*>> lists;
  for (const std::vector<uint32_t>* list : streams) {
    time.slices += static_cast<int64_t>(list->size());
    lists.emplace_back(list->data(), list->data() + list->size());
  }
  if (time.slices == 0) return time;
  const auto slices = trace.slices();
  UnionInStartOrder all, compute, comm, memory, compute_or_comm;
  int64_t first_start = INT64_MAX, last_end = INT64_MIN;
  MergeByStart(std::move(lists), [&](uint32_t i) { return slices[i].start_ns; }, [&](uint32_t i) {
    const Slice& s = slices[i];
    const int64_t start = s.start_ns, end = s.end_ns();
    first_start = std::min(first_start, start);
    last_end = std::max(last_end, end);
    all.Add(start, end);
    if (IsCommunication(trace, s)) {
      comm.Add(start, end);
      compute_or_comm.Add(start, end);
    } else if (s.kind == SliceKind::kMemcpy || s.kind == SliceKind::kMemset) {
      memory.Add(start, end);
    } else {
      compute.Add(start, end);
      compute_or_comm.Add(start, end);
    }
  });
  time.span_ns = last_end - first_start;
  time.busy_ns = all.length();
  time.idle_ns = time.span_ns - time.busy_ns;
  time.compute_ns = compute.length();
  time.communication_ns = comm.length();
  time.memory_ns = memory.length();
  time.compute_communication_overlap_ns = time.compute_ns + time.communication_ns - compute_or_comm.length();
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

std::vector<GpuBreakdown> GpuBreakdownOfInput(const GpuInput& input) {
  const Trace& trace = *input.trace;
  const int32_t rank = trace.step_info().rank;
  std::map<uint32_t, std::vector<const std::vector<uint32_t>*>> by_device;  // its streams' slices
  std::vector<uint32_t> device_order;
  const std::vector<StreamWork> work = CollectWork(input);
  for (const StreamWork& w : work) {
    auto [it, inserted] = by_device.try_emplace(w.device);
    if (inserted) device_order.push_back(w.device);
    it->second.push_back(&w.slices);
  }
  std::vector<GpuBreakdown> rows;
  for (uint32_t device : device_order) {
    GpuBreakdown row{rank, TrackName(trace, device), TimeOf(trace, by_device[device]), {}};
    for (const StreamWork& w : work) {
      if (w.device == device) row.streams.push_back({TrackName(trace, w.lane), TimeOf(trace, {&w.slices})});
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<GpuBreakdown> CombineGpuBreakdowns(std::span<const std::vector<GpuBreakdown>> inputs) {
  // (rank, device name) -> row; streams by name within it, in first-seen (track) order.
  std::vector<GpuBreakdown> rows;
  std::map<std::pair<int32_t, std::string>, size_t> index;
  for (const std::vector<GpuBreakdown>& input : inputs) {
    for (const GpuBreakdown& device : input) {
      auto [it, inserted] = index.try_emplace({device.rank, device.device}, rows.size());
      if (inserted) rows.push_back({device.rank, device.device, {}, {}});
      GpuBreakdown& row = rows[it->second];
      Add(row.time, device.time);
      for (const GpuStreamTime& stream : device.streams) {
        auto s = std::find_if(row.streams.begin(), row.streams.end(),
                              [&](const GpuStreamTime& x) { return x.stream == stream.stream; });
        if (s == row.streams.end()) s = row.streams.insert(row.streams.end(), {stream.stream, {}});
        Add(s->time, stream.time);
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const GpuBreakdown& a, const GpuBreakdown& b) { return a.rank < b.rank; });
  return rows;
}

std::vector<GpuBreakdown> ComputeGpuBreakdown(const std::vector<GpuInput>& inputs) {
  std::vector<std::vector<GpuBreakdown>> each;
  for (const GpuInput& input : inputs) each.push_back(GpuBreakdownOfInput(input));
  return CombineGpuBreakdowns(each);
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
    DurationList by_cause[3];
  };
  std::vector<Row> rows;
  std::map<std::tuple<int32_t, std::string, std::string>, size_t> index;
  // The largest gaps by reference, names and the enclosing host op looked up at the end: only
  // `largest` are kept, since a trace holds a gap per kernel or more.
  struct Gap {
    int64_t length, begin, end;
    const Trace* trace;
    int32_t rank;
    uint32_t device, stream, before, after;
    int64_t launch;
    IdleCause cause;
  };
  auto longer = [](const Gap& a, const Gap& b) { return a.length > b.length; };
  LargestN<Gap, decltype(longer)> largest_gaps(options.largest, longer);
  // A gap [prev_end, prev_end + gap) ended by work whose launch is `r` (-1: unknown).
  auto classify = [&options](const Trace& trace, int64_t r, int64_t prev_end, int64_t gap) {
    if (options.rule == IdleRule::kLaunchEnd) {
      if (r < 0) return IdleCause::kOther;
      return trace.slices()[r].end_ns() > prev_end ? IdleCause::kHostWait : IdleCause::kKernelWait;
    }
    if (r >= 0 && trace.slices()[r].start_ns > prev_end) return IdleCause::kHostWait;
    return gap < options.consecutive_kernel_delay_ns ? IdleCause::kKernelWait : IdleCause::kOther;
  };
  struct GpuRow {
    GpuIdle idle;
    DurationList by_cause[3];
  };
  std::vector<GpuRow> gpu_rows;
  std::map<std::pair<int32_t, std::string>, size_t> gpu_index;
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const int32_t rank = trace.step_info().rank;
    const LaunchIndex launch = LaunchOf(trace);
    const std::vector<StreamWork> work = CollectWork(input);
    // Per GPU: the gaps of the union of its streams' work, walked in start order across them.
    std::vector<uint32_t> device_order;
    for (const StreamWork& w : work) {
      if (std::find(device_order.begin(), device_order.end(), w.device) == device_order.end()) {
        device_order.push_back(w.device);
      }
    }
    for (uint32_t device : device_order) {
      auto [it, inserted] = gpu_index.try_emplace({rank, TrackName(trace, device)}, gpu_rows.size());
      if (inserted) {
        gpu_rows.emplace_back();
        gpu_rows.back().idle.rank = rank;
        gpu_rows.back().idle.device = TrackName(trace, device);
      }
      GpuRow& row = gpu_rows[it->second];
      std::vector<std::pair<const uint32_t*, const uint32_t*>> lists;
      for (const StreamWork& w : work) {
        if (w.device == device) lists.emplace_back(w.slices.data(), w.slices.data() + w.slices.size());
      }
      int64_t prev_end = INT64_MIN;
      MergeByStart(std::move(lists), [&](uint32_t i) { return trace.slices()[i].start_ns; }, [&](uint32_t i) {
        const Slice& s = trace.slices()[i];
        ++row.idle.work;
        if (prev_end != INT64_MIN && s.start_ns > prev_end) {
          const int64_t gap = s.start_ns - prev_end;
          row.by_cause[static_cast<int>(classify(trace, launch[i], prev_end, gap))].Add(gap);
        }
        prev_end = std::max(prev_end, s.end_ns());
      });
    }
    for (const StreamWork& w : work) {
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
        ++report.links.work;
        if (launch[i] >= 0) ++report.links.linked;
        if (prev >= 0 && s.start_ns > prev_end) {
          const int64_t gap = s.start_ns - prev_end;
          const int64_t r = launch[i];
          const IdleCause cause = classify(trace, r, prev_end, gap);
          row.by_cause[static_cast<int>(cause)].Add(gap);
          largest_gaps.Offer({gap, prev_end, s.start_ns, &trace, rank, w.device, w.lane,
                              static_cast<uint32_t>(prev), i, r, cause});
        }
        if (s.end_ns() > prev_end) {
          prev_end = s.end_ns();
          prev = i;
        }
      }
    }
  }
  std::vector<const DurationList*> of_cause[3];
  for (Row& row : rows) {
    for (int c = 0; c < 3; ++c) {
      row.by_cause[c].Sort();
      row.idle.by_cause[c] = IntervalsOfSorted({&row.by_cause[c]});
      of_cause[c].push_back(&row.by_cause[c]);
    }
    row.idle.all = IntervalsOfSorted({&row.by_cause[0], &row.by_cause[1], &row.by_cause[2]});
    report.streams.push_back(row.idle);
  }
  std::stable_sort(report.streams.begin(), report.streams.end(),
                   [](const StreamIdle& a, const StreamIdle& b) { return a.rank < b.rank; });
  for (int c = 0; c < 3; ++c) report.by_cause[c] = IntervalsOfSorted(of_cause[c]);
  for (GpuRow& row : gpu_rows) {
    for (int c = 0; c < 3; ++c) {
      row.by_cause[c].Sort();
      row.idle.by_cause[c] = IntervalsOfSorted({&row.by_cause[c]});
    }
    row.idle.all = IntervalsOfSorted({&row.by_cause[0], &row.by_cause[1], &row.by_cause[2]});
    report.gpus.push_back(std::move(row.idle));
  }
  std::stable_sort(report.gpus.begin(), report.gpus.end(),
                   [](const GpuIdle& a, const GpuIdle& b) { return a.rank < b.rank; });
  // Longest first; equal lengths in the order found.
  for (const Gap& g : largest_gaps.TakeSorted()) {
    const Trace& trace = *g.trace;
    IdleGapDetail detail;
    detail.rank = g.rank;
    detail.device = TrackName(trace, g.device);
    detail.stream = TrackName(trace, g.stream);
    detail.begin_ns = g.begin;
    detail.end_ns = g.end;
    detail.cause = g.cause;
    detail.before = std::string(trace.str(trace.slice_name(trace.slices()[g.before])));
    detail.after = std::string(trace.str(trace.slice_name(trace.slices()[g.after])));
    if (g.launch >= 0) {
      const Slice& call = trace.slices()[static_cast<size_t>(g.launch)];
      detail.launch = std::string(trace.str(trace.slice_name(call)));
      detail.launch_end_ns = call.end_ns();
      const int64_t op = LaunchingOp(trace, static_cast<uint32_t>(g.launch));
      if (op >= 0) detail.host_op = std::string(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(op)])));
    }
    report.largest.push_back(std::move(detail));
  }
  return report;
}

// ---- launches --------------------------------------------------------------------------------

namespace {

// A launch while launches are counted: indices into its trace, so that a trace of millions of
// launches costs 16 bytes each; names are looked up only for the launches reported whole.
struct LinkedWork {
  static constexpr uint32_t kNoOp = 0xffffffffu;
  uint32_t work = 0;     // the GPU work's slice
  uint32_t runtime = 0;  // the runtime call's slice
  uint32_t op = kNoOp;   // the host op around the call
  uint32_t stream = 0;   // index of its stream in the input's work (CollectWork)
};
static_assert(sizeof(LinkedWork) == 16);

// A stream's device and lane tracks.
struct StreamTracks {
  uint32_t device = 0, lane = 0;
};

Launch MakeLaunch(const Trace& trace, const LinkedWork& linked, const StreamTracks& tracks) {
  const Slice& s = trace.slices()[linked.work];
  const Slice& call = trace.slices()[linked.runtime];
  Launch l;
  l.rank = trace.step_info().rank;
  l.device = TrackName(trace, tracks.device);
  l.stream = TrackName(trace, tracks.lane);
  l.runtime = std::string(trace.str(trace.slice_name(call)));
  l.kernel = std::string(trace.str(trace.slice_name(s)));
  l.kind = WorkKind(s.kind);
  if (const std::optional<trace::KernelArgs> args = trace.kernel_args(linked.work)) l.correlation = args->correlation;
  if (const trace::TransferArgs* args = trace.transfer_args(linked.work)) l.correlation = args->correlation;
  l.runtime_start_ns = call.start_ns;
  l.cpu_ns = call.dur_ns;
  l.gpu_start_ns = s.start_ns;
  l.gpu_ns = s.dur_ns;
  l.delay_ns = s.start_ns - call.end_ns();
  if (linked.op != LinkedWork::kNoOp) {
    const Slice& o = trace.slices()[linked.op];
    l.host_op = std::string(trace.str(trace.slice_name(o)));
    l.op_to_launch_ns = call.start_ns - o.start_ns;
  }
  return l;
}

}  // namespace

namespace {

DurationStats StatsOf(const std::vector<const DurationList*>& lists) {
  const MergedStats merged = StatsOfSorted(lists);
  DurationStats stats;
  stats.count = merged.count;
  if (merged.count == 0) return stats;
  stats.min_ns = merged.min_ns;
  stats.max_ns = merged.max_ns;
  stats.mean_ns = static_cast<double>(merged.total_ns) / static_cast<double>(merged.count);
  stats.p50_ns = merged.p50_ns;
  stats.p95_ns = merged.p95_ns;
  return stats;
}

}  // namespace

// Launches are taken in the order their work was collected (stream by stream); what depends on
// the order of the calls (the listed launches, outliers that tie) is put in that order by key, so
// nothing is kept per launch but its figures: 4 bytes each for the runtime call's duration (once a
// call), the work's, the delay (in its op and kernel's list only) and the op-to-launch time.
LaunchReport ComputeLaunches(const std::vector<GpuInput>& inputs, const LaunchOptions& options) {
  LaunchReport report;
  report.runtime_cutoff_ns = options.runtime_cutoff_ns;
  report.delay_cutoff_ns = options.delay_cutoff_ns;
  DurationList cpu, gpu, delays;  // delays: only without by_op
  // Names are views into the inputs' string tables, which outlive this call.
  struct Op {
    DurationList op_to_launch;
    std::map<std::string_view, DurationList> kernels;  // the delays of the work of each kernel
  };
  std::map<std::string_view, Op> ops;
  struct Outlier {
    const Trace* trace;
    LinkedWork linked;
    StreamTracks tracks;
    int64_t ns;
    size_t input;
    int64_t call_start_ns;
    uint64_t collected;  // its place in the order work was collected
  };
  // Longest first; then in input order, then the calls' order, then the order work was collected.
  auto ranks_higher = [](const Outlier& a, const Outlier& b) {
    return std::tuple(-a.ns, a.input, a.call_start_ns, a.linked.runtime, a.collected) <
           std::tuple(-b.ns, b.input, b.call_start_ns, b.linked.runtime, b.collected);
  };
  LargestN<Outlier, decltype(ranks_higher)> long_runtime(options.outliers, ranks_higher),
      long_delay(options.outliers, ranks_higher);
  for (size_t input_index = 0; input_index < inputs.size(); ++input_index) {
    const GpuInput& input = inputs[input_index];
    const Trace& trace = *input.trace;
    const LaunchIndex launch = LaunchOf(trace);
    const std::vector<StreamWork> work = CollectWork(input);
    std::vector<bool> call_counted(trace.slices().size(), false);  // a call counts once, however much it launched
    std::vector<LinkedWork> kept;  // for the launches listed (LaunchOptions keep_all, keep_delays)
    std::vector<StreamTracks> streams;
    // Per name id of this trace: its op row, and each (op, kernel) pair's delays.
    std::vector<Op*> op_of_name(options.by_op ? trace.strings().size() : 0, nullptr);
    Op* no_op = nullptr;
    std::unordered_map<uint64_t, DurationList*> kernel_delays;
    uint64_t collected = 0;
    for (const StreamWork& w : work) {
      const auto stream = static_cast<uint32_t>(streams.size());
      streams.push_back({w.device, w.lane});
      const StreamTracks& tracks = streams.back();
      for (uint32_t i : w.slices) {
        ++report.work;
        const int64_t r = launch[i];
        if (r < 0) {
          ++report.unlinked;
          continue;
        }
        ++report.linked;
        LinkedWork l{i, static_cast<uint32_t>(r), LinkedWork::kNoOp, stream};
        const Slice& s = trace.slices()[l.work];
        const Slice& call = trace.slices()[l.runtime];
        const int64_t op_index = LaunchingOp(trace, l.runtime);
        l.op = op_index >= 0 ? static_cast<uint32_t>(op_index) : LinkedWork::kNoOp;
        const int64_t delay_ns = s.start_ns - call.end_ns();
        const bool first_of_call = !call_counted[l.runtime];
        call_counted[l.runtime] = true;
        if (first_of_call) cpu.Add(call.dur_ns);
        gpu.Add(s.dur_ns);
        ++collected;
        if (first_of_call && call.dur_ns > options.runtime_cutoff_ns) {
          ++report.long_runtime_count;
          long_runtime.Offer({&trace, l, tracks, call.dur_ns, input_index, call.start_ns, collected});
        }
        if (delay_ns > options.delay_cutoff_ns) {
          ++report.long_delay_count;
          long_delay.Offer({&trace, l, tracks, delay_ns, input_index, call.start_ns, collected});
        }
        if (options.keep_all || options.keep_delays) kept.push_back(l);
        if (!options.by_op) {
          delays.Add(delay_ns);
          continue;
        }
        const Slice* host_op = l.op != LinkedWork::kNoOp ? &trace.slices()[l.op] : nullptr;
        const bool named = host_op != nullptr && !trace.str(trace.slice_name(*host_op)).empty();
        Op*& op = named ? op_of_name[trace.slice_name(*host_op)] : no_op;
        if (op == nullptr) op = &ops[named ? trace.str(trace.slice_name(*host_op)) : std::string_view("(no op)")];
        // (An op that is the launch itself has no delay before it.)
        if (host_op != nullptr && l.op != l.runtime && call.start_ns - host_op->start_ns >= 0) {
          op->op_to_launch.Add(call.start_ns - host_op->start_ns);
        }
        const trace::StringId kernel = trace.slice_name(s);
        const uint64_t pair = (static_cast<uint64_t>(named ? trace.slice_name(*host_op) + 1 : 0) << 32) | kernel;
        DurationList*& list = kernel_delays[pair];
        if (list == nullptr) list = &op->kernels[trace.str(kernel)];
        list->Add(delay_ns);
      }
    }
    // The listed launches in the order of the calls' starts, a call's work together.
    std::stable_sort(kept.begin(), kept.end(), [&](const LinkedWork& a, const LinkedWork& b) {
      const int64_t a_start = trace.slices()[a.runtime].start_ns, b_start = trace.slices()[b.runtime].start_ns;
      return a_start != b_start ? a_start < b_start : a.runtime < b.runtime;
    });
    for (const LinkedWork& l : kept) {
      if (options.keep_all) report.launches.push_back(MakeLaunch(trace, l, streams[l.stream]));
      if (options.keep_delays) {
        const Slice& s = trace.slices()[l.work];
        report.delays.push_back({s.start_ns, s.start_ns - trace.slices()[l.runtime].end_ns()});
      }
    }
  }
  std::vector<const DurationList*> all_delays = {&delays};
  for (DurationList* list : {&cpu, &gpu, &delays}) list->Sort();
  for (auto& [name, op] : ops) {
    op.op_to_launch.Sort();
    for (auto& [kernel, list] : op.kernels) {
      list.Sort();
      all_delays.push_back(&list);
    }
  }
  report.cpu = StatsOf({&cpu});
  report.gpu = StatsOf({&gpu});
  report.delay = StatsOf(all_delays);
  for (const Outlier& o : long_runtime.TakeSorted()) report.long_runtime.push_back(MakeLaunch(*o.trace, o.linked, o.tracks));
  for (const Outlier& o : long_delay.TakeSorted()) report.long_delay.push_back(MakeLaunch(*o.trace, o.linked, o.tracks));
  for (auto& [name, op] : ops) {
    OpLaunches row;
    row.op = std::string(name);
    std::vector<const DurationList*> of_op;
    for (auto& [kernel, list] : op.kernels) {
      of_op.push_back(&list);
      row.kernels.push_back({std::string(kernel), static_cast<int64_t>(list.size()), StatsOf({&list})});
    }
    row.delay = StatsOf(of_op);
    row.launches = row.delay.count;
    row.op_to_launch = StatsOf({&op.op_to_launch});
    std::stable_sort(row.kernels.begin(), row.kernels.end(),
                     [](const OpKernelLaunches& a, const OpKernelLaunches& b) { return a.count > b.count; });
    report.by_op.push_back(std::move(row));
  }
  std::stable_sort(report.by_op.begin(), report.by_op.end(),
                   [](const OpLaunches& a, const OpLaunches& b) { return a.launches > b.launches; });
  return report;
}

}  // namespace stepscope::analysis
