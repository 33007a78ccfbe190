// `stepscope stragglers` (stragglers.h): per step, the rank that finished last and why.
#include "profiler/analysis/stragglers.h"

#include <algorithm>
#include <limits>
#include <map>

#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/intervals.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/steps.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

// The ceil(n/2)-th smallest; 0 for none.
int64_t LowerMedian(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// One rank's work in one step, on the aligned (absolute) clock. Only the length of each
// category's union matters: a trace's slices are visited in start order across its tracks, so
// each union is measured as they pass, in a few words however many slices (all of a 256-rank
// run's steps are held here at once). The union of everything is measured alongside.
struct Work {
  int64_t slices = 0;
  int64_t begin = std::numeric_limits<int64_t>::max(), end = kNone;
  // The first start and last end of its communication: when it reached the step's collectives
  // and when it left them.
  int64_t comm_begin = std::numeric_limits<int64_t>::max(), comm_end = kNone;
  UnionInStartOrder by_category[kStragglerCategories], all;
  void Add(int64_t start, int64_t stop, StragglerCategory category) {
    ++slices;
    begin = std::min(begin, start);
    end = std::max(end, stop);
    if (category == StragglerCategory::kCommunication) {
      comm_begin = std::min(comm_begin, start);
      comm_end = std::max(comm_end, stop);
    }
    by_category[static_cast<int>(category)].Add(start, stop);
    all.Add(start, stop);
  }
};

// A window's work while its trace's slices pass.
struct StepWindowWork {
  Work gpu, host;
  // Input time on the host: its input ops and input annotations (never the end of the work).
  UnionInStartOrder host_input;
};

StragglerWork TotalsOf(const Work& w) {
  StragglerWork out;
  out.slices = w.slices;
  out.begin_ns = w.begin, out.end_ns = w.end;
  out.comm_begin_ns = w.comm_begin, out.comm_end_ns = w.comm_end;
  for (int c = 0; c < kStragglerCategories; ++c) out.by_category_ns[c] = w.by_category[c].length();
  out.busy_ns = w.all.length();
  return out;
}

// The work moved by `shift` (its sentinels stay).
StragglerWork Shifted(StragglerWork w, int64_t shift) {
  for (int64_t* t : {&w.begin_ns, &w.end_ns, &w.comm_begin_ns, &w.comm_end_ns}) {
    if (*t != INT64_MAX && *t != INT64_MIN) *t += shift;
  }
  return w;
}

// One rank's work in one step, on the aligned clock.
struct RankStepWork {
  size_t input = 0;
  int64_t window_begin = 0;  // aligned
  StragglerWork gpu, host;
  int64_t host_input_ns = 0;
};

// One window of a trace (trace time) and its step number.
struct Window {
  int64_t begin = 0, end = 0;
  int64_t step = -1;
};

StragglerCategory CategoryOf(const Trace& trace, const Slice& s, bool on_gpu) {
  const std::string_view op_type = trace.str(trace.slice_op_type(s));
  if (IsCommunication(trace, s) || (s.kind == SliceKind::kOp && IsCollectiveOpType(op_type))) {
    return StragglerCategory::kCommunication;
  }
  if (!on_gpu && IsInputOp(trace.str(trace.slice_name(s)), op_type)) return StragglerCategory::kInput;
  if (s.kind == SliceKind::kMemcpy || s.kind == SliceKind::kMemset) return StragglerCategory::kMemory;
  return StragglerCategory::kCompute;
}

}  // namespace

// Collective ops by type: host-side collectives that are not collective records (our sparse
// gradients' AllGather, TensorFlow's collective ops).
bool IsCollectiveOpType(std::string_view op_type) {
  for (std::string_view type : {"AllGather", "AllReduce", "Broadcast", "ReduceScatter", "AllToAll",
                                "CollectiveReduce", "CollectiveGather", "CollectiveBcastSend", "CollectiveBcastRecv",
                                "NcclAllReduce", "HorovodAllreduce", "HorovodAllgather", "HorovodBroadcast"}) {
    if (op_type == type) return true;
  }
  return false;
}

bool IsInputOp(std::string_view name, std::string_view op_type) {
  for (std::string_view text : {name, op_type}) {
    for (std::string_view word : {"TrainInput", "IteratorGetNext", "DataLoader", "dataloader"}) {
      if (text.find(word) != std::string_view::npos) return true;
    }
  }
  return false;
}

std::string_view StragglerCategoryName(StragglerCategory category) {
  switch (category) {
    case StragglerCategory::kCompute: return "compute";
    case StragglerCategory::kCommunication: return "communication";
    case StragglerCategory::kMemory: return "memory";
    default: return "input";
  }
}

namespace {

// (step, rank) -> its work
using WorkByStepAndRank = std::map<std::pair<int64_t, int32_t>, RankStepWork>;

// Which windows are kept (--steps) and where: a window without a number takes its place among
// its rank's steps (ranks are compared step by step, so each rank's k-th unnumbered step is step
// k); fails when another input already holds the same (step, rank).
Status AddWindows(const StragglerDigest& input, size_t i, int32_t rank, int64_t shift, int64_t& unnumbered,
                  const StragglerOptions& options, const StragglerReport& report, WorkByStepAndRank& work) {
  for (const StragglerWindow& window : input.windows) {
    const int64_t number = window.step >= 0 ? window.step : unnumbered++;
    if (options.steps && (number < options.steps->first || number > options.steps->second)) continue;
    auto [it, inserted] = work.try_emplace({number, rank});
    if (!inserted) {
      return InvalidInput("rank " + std::to_string(rank) + " step " + std::to_string(number) + " is in both " +
                          report.inputs[it->second.input].source + " and " + input.source +
                          " (give one run's traces)");
    }
    RankStepWork& slot = it->second;
    slot.input = i;
    slot.window_begin = window.begin_ns + shift;
    slot.gpu = Shifted(window.gpu, shift);
    slot.host = Shifted(window.host, shift);
    slot.host_input_ns = window.host_input_ns;
  }
  return Status::Ok();
}

// Adds each slice of work of the trace to the window it belongs to, on the trace's own absolute
// clock.
void AddWork(const Trace& trace, bool whole, const std::vector<Window>& windows, std::vector<StepWindowWork>& slots) {
  const int64_t shift = trace.epoch_ns();
  const LaunchIndex launch = whole ? LaunchIndex() : LaunchOf(trace);
  std::vector<bool> gpu_lane(trace.tracks().size());
  for (uint32_t t = 0; t < gpu_lane.size(); ++t) gpu_lane[t] = IsGpuDeviceLane(trace, t);
  const auto& slices = trace.slices();
  std::vector<std::pair<const Slice*, const Slice*>> lanes;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const auto lane = trace.track_slices(t);
    lanes.emplace_back(lane.data(), lane.data() + lane.size());
  }
  MergeByStart(std::move(lanes), [](const Slice& s) { return s.start_ns; }, [&](const Slice& s) {
    if (s.duplicate() || s.kind == SliceKind::kSync || s.kind == SliceKind::kPythonFrame) return;
    const bool on_gpu = gpu_lane[s.track];
    if (on_gpu && !trace::IsDeviceWork(s.kind)) return;  // GPU annotations
    const bool input_annotation = s.kind == SliceKind::kAnnotation && !on_gpu &&
                                  IsInputOp(trace.str(trace.slice_name(s)), trace.str(trace.slice_op_type(s)));
    if (s.kind == SliceKind::kAnnotation && !input_annotation) return;
    size_t w = 0;
    if (!whole) {
      // The window holding the work's launch, or its own start without one.
      const int64_t from = launch[static_cast<size_t>(&s - slices.data())];
      const int64_t anchor = from >= 0 ? slices[static_cast<size_t>(from)].start_ns : s.start_ns;
      auto after = std::upper_bound(windows.begin(), windows.end(), anchor,
                                    [](int64_t t, const Window& x) { return t < x.begin; });
      if (after == windows.begin()) return;
      w = static_cast<size_t>(after - windows.begin()) - 1;
      if (anchor >= windows[w].end) return;
    }
    StepWindowWork& slot = slots[w];
    const int64_t start = s.start_ns + shift, stop = s.end_ns() + shift;
    if (input_annotation) {
      slot.host_input.Add(start, stop);
      return;
    }
    const StragglerCategory category = CategoryOf(trace, s, on_gpu);
    (on_gpu ? slot.gpu : slot.host).Add(start, stop, category);
    if (!on_gpu && category == StragglerCategory::kInput) slot.host_input.Add(start, stop);
  });
}

// Why the straggler was late: the category where it exceeds the other ranks' median most.
void FindReason(StepStragglers& step, size_t last) {
  const RankStep& straggler = step.ranks[last];
  int64_t best = 0;
  step.reason = "none";
  // Communication less the wait in it: waiting for the others is not why a rank is late.
  auto own = [](const RankStep& r, int c) {
    return r.by_category_ns[c] - (c == static_cast<int>(StragglerCategory::kCommunication) ? r.collective_wait_ns : 0);
  };
  for (int c = 0; c < kStragglerCategories; ++c) {
    std::vector<int64_t> others;
    for (size_t k = 0; k < step.ranks.size(); ++k) {
      if (k != last) others.push_back(own(step.ranks[k], c));
    }
    step.excess_ns[c] = own(straggler, c) - LowerMedian(std::move(others));
    if (step.excess_ns[c] > best) {
      best = step.excess_ns[c];
      step.reason = std::string(StragglerCategoryName(static_cast<StragglerCategory>(c)));
    }
  }
}

// Each rank's figures in one step, its lateness and collective wait, and the straggler; fills
// `comm_begin`/`comm_end` (per rank, when it reached and left the step's collectives).
StepStragglers CompareRanks(int64_t number, const std::vector<std::pair<int32_t, RankStepWork*>>& members,
                            std::vector<int64_t>& comm_begin, std::vector<int64_t>& comm_end) {
  StepStragglers step;
  step.step = number;
  std::vector<int64_t> absolute_begin, absolute_end;
  for (auto& [rank, w] : members) {
    RankStep r;
    r.rank = rank;
    r.input = w->input;
    r.gpu = w->gpu.slices > 0;
    const StragglerWork& used = r.gpu ? w->gpu : w->host;
    r.work = used.slices;
    r.busy_ns = used.busy_ns;
    for (int c = 0; c < kStragglerCategories; ++c) r.by_category_ns[c] = used.by_category_ns[c];
    constexpr int kInput = static_cast<int>(StragglerCategory::kInput);
    r.by_category_ns[kInput] = r.gpu ? std::max<int64_t>(0, used.begin_ns - w->window_begin) : w->host_input_ns;
    absolute_begin.push_back(used.begin_ns);
    absolute_end.push_back(used.end_ns);
    comm_begin.push_back(used.comm_begin_ns);
    comm_end.push_back(used.comm_end_ns);
    step.ranks.push_back(r);
  }
  const int64_t step_begin = *std::min_element(absolute_begin.begin(), absolute_begin.end());
  step.origin_ns = step_begin;
  int64_t least_comm = std::numeric_limits<int64_t>::max();
  for (const RankStep& r : step.ranks) least_comm = std::min(least_comm, r.communication_ns());
  // A synchronising collective lets no rank through before the last one arrives: the early
  // ranks spend the difference waiting in it. A rank's wait is bounded twice: by its
  // communication beyond the least of any rank (the rank that arrived last waited least), and
  // by the time from its arrival at the step's collectives to the last rank's arrival (a rank
  // whose collectives merely ran longer, arriving with the others, did not wait: it was slow).
  // Each rank's own end is its end less that wait, so the rank the others waited for is the
  // straggler, late by what they waited.
  int64_t last_arrival = kNone;
  for (size_t k = 0; k < step.ranks.size(); ++k) {
    if (comm_end[k] != kNone) last_arrival = std::max(last_arrival, comm_begin[k]);
  }
  std::vector<int64_t> own_end(step.ranks.size());
  for (size_t k = 0; k < step.ranks.size(); ++k) {
    RankStep& r = step.ranks[k];
    const int64_t until_all_arrived =
        comm_end[k] == kNone ? 0 : std::min(last_arrival, comm_end[k]) - comm_begin[k];
    r.collective_wait_ns = std::max<int64_t>(0, std::min(r.communication_ns() - least_comm, until_all_arrived));
    own_end[k] = absolute_end[k] - r.collective_wait_ns;
  }
  const int64_t first_end = *std::min_element(own_end.begin(), own_end.end());
  size_t last = 0;
  for (size_t k = 0; k < step.ranks.size(); ++k) {
    RankStep& r = step.ranks[k];
    r.begin_ns = absolute_begin[k] - step_begin;
    r.end_ns = absolute_end[k] - step_begin;
    r.lateness_ns = own_end[k] - first_end;
    if (own_end[k] > own_end[last]) last = k;
  }
  const RankStep& straggler = step.ranks[last];
  step.straggler = straggler.rank;
  step.lateness_ns = straggler.lateness_ns;
  step.lateness_vs_median_ns = own_end[last] - LowerMedian(own_end);
  FindReason(step, last);
  return step;
}

// Who the others waited for in the collectives (the rank that reached them last), and how long.
void FindWaitedFor(StepStragglers& step, const std::vector<int64_t>& comm_begin, const std::vector<int64_t>& comm_end) {
  int64_t most_wait = 0;
  for (const RankStep& r : step.ranks) most_wait = std::max(most_wait, r.collective_wait_ns);
  if (most_wait > 0) {
    // The rank that reached the collectives last (the lowest on a tie).
    size_t waited = 0;
    for (size_t k = 0; k < step.ranks.size(); ++k) {
      if (comm_end[k] != kNone && (comm_end[waited] == kNone || comm_begin[k] > comm_begin[waited])) waited = k;
    }
    step.waited_for = step.ranks[waited].rank;
    std::vector<int64_t> waits;
    for (size_t k = 0; k < step.ranks.size(); ++k) {
      if (k != waited) waits.push_back(step.ranks[k].collective_wait_ns);
    }
    step.others_waited_ns = LowerMedian(std::move(waits));
  }
}

}  // namespace

StragglerDigest DigestStragglers(const Trace& trace) {
  StragglerDigest digest;
  digest.source = trace.source_path();
  digest.rank = trace.step_info().rank;
  digest.first_instant_ns = trace.epoch_ns() + trace.span_begin_ns();
  const std::vector<Step> steps = StepsOfTrace(trace, /*with_totals=*/false);
  if (steps.empty()) {
    digest.error = trace.source_path() + ": no steps found (the trace holds no slices)";
    return digest;
  }
  const bool whole = steps.size() == 1 && steps.front().marker == "trace";
  std::vector<Window> windows;
  for (const Step& step : steps) windows.push_back({step.begin_ns, step.end_ns, step.step});
  std::vector<StepWindowWork> work(windows.size());
  AddWork(trace, whole, windows, work);
  for (size_t w = 0; w < windows.size(); ++w) {
    digest.windows.push_back({windows[w].step, windows[w].begin + trace.epoch_ns(), TotalsOf(work[w].gpu),
                              TotalsOf(work[w].host), work[w].host_input.length()});
  }
  return digest;
}

StatusOr<StragglerReport> ComputeStragglers(std::span<const Trace> traces, const StragglerOptions& options) {
  std::vector<ClockDigest> clocks;
  std::vector<StragglerDigest> inputs;
  for (size_t i = 0; i < traces.size(); ++i) {
    clocks.push_back(DigestClock(traces[i], i));
    inputs.push_back(DigestStragglers(traces[i]));
  }
  return CombineStragglers(inputs, AlignDigests(clocks, options.align), options);
}

StatusOr<StragglerReport> CombineStragglers(std::span<const StragglerDigest> inputs, AlignmentReport alignment,
                                            const StragglerOptions& options) {
  StragglerReport report;
  report.alignment = std::move(alignment);
  WorkByStepAndRank work;
  std::map<int32_t, int64_t> unnumbered;  // per rank: steps without a number so far
  for (size_t i = 0; i < inputs.size(); ++i) {
    const StragglerDigest& input = inputs[i];
    StragglerInputInfo info;
    info.source = input.source;
    info.rank_known = input.rank >= 0;
    info.rank = info.rank_known ? input.rank : static_cast<int32_t>(i);
    info.alignment = report.alignment.input_alignment[i];
    info.offset_ns = report.alignment.CorrectionAt(i, input.first_instant_ns);
    report.inputs.push_back(info);
    if (!input.error.empty()) return InvalidInput(input.error);
    RETURN_IF_ERROR(AddWindows(input, i, info.rank, info.offset_ns, unnumbered[info.rank], options, report, work));
  }
  // Per step, the ranks in rank order (the map's order).
  std::map<int64_t, std::vector<std::pair<int32_t, RankStepWork*>>> by_step;
  for (auto& [key, w] : work) {
    if (w.gpu.slices + w.host.slices > 0) by_step[key.first].emplace_back(key.second, &w);
  }
  std::map<int32_t, RankStragglerTotals> totals;
  for (auto& [number, members] : by_step) {
    if (members.size() < 2) {
      report.single_rank_steps.push_back(number);
      continue;
    }
    std::vector<int64_t> comm_begin, comm_end;
    StepStragglers step = CompareRanks(number, members, comm_begin, comm_end);
    FindWaitedFor(step, comm_begin, comm_end);
    for (const RankStep& r : step.ranks) {
      RankStragglerTotals& t = totals[r.rank];
      t.rank = r.rank;
      ++t.steps;
      if (r.rank == step.straggler) ++t.straggler_steps;
      t.lateness_total_ns += r.lateness_ns;
      t.lateness_max_ns = std::max(t.lateness_max_ns, r.lateness_ns);
    }
    report.steps.push_back(std::move(step));
  }
  for (auto& [rank, t] : totals) report.ranks.push_back(t);
  return report;
}

}  // namespace stepscope::analysis
