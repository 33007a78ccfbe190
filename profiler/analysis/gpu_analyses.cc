#include "profiler/analysis/gpu_analyses.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "base/largest_n.h"
#include "base/mapped_array.h"
#include "profiler/analysis/breakdowns.h"
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

// The gaps of one stream and cause, each kept once (a stream's and a cause's statistics over all
// streams are read off these lists merged): 4 bytes a gap below 4.3 s, 8 past it. A trace holds a
// gap per kernel or more; three copies of 8 bytes each were the largest table of `idle`.
class GapList {
 public:
  void Add(int64_t gap) {
    if (gap >= 0 && gap <= int64_t{UINT32_MAX}) {
      narrow_.push_back(static_cast<uint32_t>(gap));
    } else {
      wide_.push_back(gap);
    }
  }
  size_t size() const { return narrow_.size() + wide_.size(); }
  void Sort() {
    std::sort(narrow_.begin(), narrow_.end());
    std::sort(wide_.begin(), wide_.end());
  }
  const MappedArray<uint32_t>& narrow() const { return narrow_; }
  const std::vector<int64_t>& wide() const { return wide_; }

 private:
  MappedArray<uint32_t> narrow_;
  std::vector<int64_t> wide_;
};

// Count, total, max and the quantiles of the union of sorted gap lists, by merging them up to the
// 95th percentile's position: the figures statistics.h's QuantileInPlace gives on the values gathered,
// without gathering them.
IntervalStats IntervalsOfSorted(const std::vector<const GapList*>& lists) {
  struct Cursor {
    const uint32_t* narrow;
    const int64_t* wide;
    size_t size, at;
    int64_t value() const { return narrow != nullptr ? int64_t{narrow[at]} : wide[at]; }
  };
  std::vector<Cursor> cursors;
  IntervalStats stats;
  for (const GapList* list : lists) {
    if (!list->narrow().empty()) cursors.push_back({list->narrow().data(), nullptr, list->narrow().size(), 0});
    if (!list->wide().empty()) cursors.push_back({nullptr, list->wide().data(), list->wide().size(), 0});
  }
  for (const Cursor& c : cursors) {
    stats.count += static_cast<int64_t>(c.size);
    for (size_t i = 0; i < c.size; ++i) stats.total_ns += c.narrow != nullptr ? int64_t{c.narrow[i]} : c.wide[i];
    stats.max_ns = std::max(stats.max_ns, Cursor{c.narrow, c.wide, c.size, c.size - 1}.value());  // sorted: the last
  }
  if (stats.count == 0) return stats;
  // The order statistics each quantile interpolates between (statistics.h QuantileInPlace).
  const auto n = static_cast<size_t>(stats.count);
  struct Wanted {
    double fraction, position;
    size_t below;
    int64_t lower = 0, upper = 0;
  };
  Wanted wanted[2] = {{0.5, 0, 0}, {0.95, 0, 0}};
  size_t last = 0;
  for (Wanted& w : wanted) {
    w.position = w.fraction * static_cast<double>(n - 1);
    w.below = static_cast<size_t>(w.position);
    last = std::max(last, std::min(w.below + 1, n - 1));
  }
  auto greater = [&](size_t a, size_t b) { return cursors[a].value() > cursors[b].value(); };
  std::vector<size_t> heap(cursors.size());
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  std::make_heap(heap.begin(), heap.end(), greater);
  for (size_t rank = 0; rank <= last; ++rank) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    Cursor& c = cursors[heap.back()];
    const int64_t value = c.value();
    for (Wanted& w : wanted) {
      if (rank == w.below) w.lower = value;
      if (rank == w.below + 1) w.upper = value;
    }
    if (++c.at == c.size) {
      heap.pop_back();
    } else {
      std::push_heap(heap.begin(), heap.end(), greater);
    }
  }
  auto quantile = [&](const Wanted& w) {
    if (w.below + 1 >= n) return static_cast<double>(w.lower);
    const double weight = w.position - static_cast<double>(w.below);
    return static_cast<double>(w.lower) * (1 - weight) + static_cast<double>(w.upper) * weight;
  };
  stats.p50_ns = quantile(wanted[0]);
  stats.p95_ns = quantile(wanted[1]);
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

std::vector<GpuBreakdown> ComputeGpuBreakdown(const std::vector<GpuInput>& inputs) {
  // (rank, device name) -> row; streams by name within it, in first-seen (track) order.
  std::vector<GpuBreakdown> rows;
  std::map<std::pair<int32_t, std::string>, size_t> index;
  for (const GpuInput& input : inputs) {
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
        Add(s->time, TimeOf(trace, {&w.slices}));
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
    GapList by_cause[3];
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
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const int32_t rank = trace.step_info().rank;
    const LaunchIndex launch = LaunchOf(trace);
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
  std::vector<const GapList*> of_cause[3];
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

LaunchReport ComputeLaunches(const std::vector<GpuInput>& inputs, const LaunchOptions& options) {
  LaunchReport report;
  report.runtime_cutoff_ns = options.runtime_cutoff_ns;
  report.delay_cutoff_ns = options.delay_cutoff_ns;
  std::vector<int64_t> cpu, gpu, delay;
  // Names are views into the inputs' string tables, which outlive this call.
  struct Op {
    std::vector<int64_t> delay, op_to_launch;
    std::map<std::string_view, std::vector<int64_t>> kernels;
  };
  std::map<std::string_view, Op> ops;
  struct Outlier {
    const Trace* trace;
    LinkedWork linked;
    StreamTracks tracks;
    int64_t ns;
  };
  std::vector<Outlier> long_runtime, long_delay;
  // Launches in input, then time order (the order of every list below).
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const LaunchIndex launch = LaunchOf(trace);
    std::vector<LinkedWork> mine;
    std::vector<StreamTracks> streams;
    {
      const std::vector<StreamWork> work = CollectWork(input);
      size_t count = 0;
      for (const StreamWork& w : work) count += w.slices.size();
      mine.reserve(count);  // exactly: a regrowth would copy the table at the peak
      for (const StreamWork& w : work) {
        const auto stream = static_cast<uint32_t>(streams.size());
        streams.push_back({w.device, w.lane});
        for (uint32_t i : w.slices) {
          ++report.work;
          const int64_t r = launch[i];
          if (r < 0) {
            ++report.unlinked;
            continue;
          }
          mine.push_back({i, static_cast<uint32_t>(r), LinkedWork::kNoOp, stream});
        }
      }
    }
    cpu.reserve(cpu.size() + mine.size());
    gpu.reserve(gpu.size() + mine.size());
    delay.reserve(delay.size() + mine.size());
    std::stable_sort(mine.begin(), mine.end(), [&](const LinkedWork& a, const LinkedWork& b) {
      const int64_t a_start = trace.slices()[a.runtime].start_ns, b_start = trace.slices()[b.runtime].start_ns;
      return a_start != b_start ? a_start < b_start : a.runtime < b.runtime;
    });
    // Per name id of this trace: its op row, and each (op, kernel) pair's delays.
    std::vector<Op*> op_of_name(trace.strings().size(), nullptr);
    Op* no_op = nullptr;
    std::unordered_map<uint64_t, std::vector<int64_t>*> kernel_delays;
    // `mine` is in the order of the calls' starts, a call's work together (stable sort).
    int64_t last_call = -1;
    for (LinkedWork& l : mine) {
      const Slice& s = trace.slices()[l.work];
      const Slice& call = trace.slices()[l.runtime];
      const int64_t op_index = LaunchingOp(trace, l.runtime);
      l.op = op_index >= 0 ? static_cast<uint32_t>(op_index) : LinkedWork::kNoOp;
      const StreamTracks& tracks = streams[l.stream];
      const int64_t delay_ns = s.start_ns - call.end_ns();
      // A call counts once however much work it launched (an op of a RunMetadata trace launches
      // several kernels; a Kineto runtime call one).
      const bool first_of_call = l.runtime != last_call;
      last_call = l.runtime;
      if (first_of_call) cpu.push_back(call.dur_ns);
      gpu.push_back(s.dur_ns);
      delay.push_back(delay_ns);
      if (first_of_call && call.dur_ns > options.runtime_cutoff_ns) {
        long_runtime.push_back({&trace, l, tracks, call.dur_ns});
      }
      if (delay_ns > options.delay_cutoff_ns) long_delay.push_back({&trace, l, tracks, delay_ns});
      if (options.keep_all) report.launches.push_back(MakeLaunch(trace, l, tracks));
      if (options.keep_delays) report.delays.push_back({s.start_ns, delay_ns});
      if (!options.by_op) continue;
      const Slice* host_op = l.op != LinkedWork::kNoOp ? &trace.slices()[l.op] : nullptr;
      const bool named = host_op != nullptr && !trace.str(trace.slice_name(*host_op)).empty();
      Op*& op = named ? op_of_name[trace.slice_name(*host_op)] : no_op;
      if (op == nullptr) op = &ops[named ? trace.str(trace.slice_name(*host_op)) : std::string_view("(no op)")];
      op->delay.push_back(delay_ns);
      // (An op that is the launch itself has no delay before it.)
      if (host_op != nullptr && l.op != l.runtime && call.start_ns - host_op->start_ns >= 0) {
        op->op_to_launch.push_back(call.start_ns - host_op->start_ns);
      }
      const trace::StringId kernel = trace.slice_name(s);
      const uint64_t pair = (static_cast<uint64_t>(named ? trace.slice_name(*host_op) + 1 : 0) << 32) | kernel;
      std::vector<int64_t>*& delays = kernel_delays[pair];
      if (delays == nullptr) delays = &op->kernels[trace.str(kernel)];
      delays->push_back(delay_ns);
    }
    report.linked += static_cast<int64_t>(mine.size());
  }
  report.cpu = Durations(std::move(cpu));
  report.gpu = Durations(std::move(gpu));
  report.delay = Durations(std::move(delay));
  report.long_runtime_count = static_cast<int64_t>(long_runtime.size());
  report.long_delay_count = static_cast<int64_t>(long_delay.size());
  auto largest = [&](std::vector<Outlier>& outliers, std::vector<Launch>& into) {
    std::stable_sort(outliers.begin(), outliers.end(), [](const Outlier& a, const Outlier& b) { return a.ns > b.ns; });
    if (outliers.size() > options.outliers) outliers.resize(options.outliers);
    for (const Outlier& o : outliers) into.push_back(MakeLaunch(*o.trace, o.linked, o.tracks));
  };
  largest(long_runtime, report.long_runtime);
  largest(long_delay, report.long_delay);
  for (auto& [name, op] : ops) {
    OpLaunches row;
    row.op = std::string(name);
    row.launches = static_cast<int64_t>(op.delay.size());
    row.delay = Durations(std::move(op.delay));
    row.op_to_launch = Durations(std::move(op.op_to_launch));
    for (auto& [kernel, delays] : op.kernels) {
      const auto count = static_cast<int64_t>(delays.size());
      row.kernels.push_back({std::string(kernel), count, Durations(std::move(delays))});
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
