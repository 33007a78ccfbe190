// The overview of a job too large to merge (overview.h): ranks read one at a time on a few
// threads, each summarised and dropped; the summaries aligned and compared from their digests,
// then drawn as one small trace with a process per rank.
#include "viewer/load/overview.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <thread>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/formats/reader.h"
#include "viewer/load/document.h"

namespace stepscope::viewer {
namespace {

// Adds the busy interval [begin, end) (absolute ns) to the bins of `summary`.
void AddBusy(const RankSummary& summary, int64_t begin, int64_t end, std::vector<int64_t>& bins) {
  int64_t bin = std::clamp<int64_t>((begin - summary.begin_ns) / summary.bin_ns, 0, kOverviewBins - 1);
  while (begin < end && bin < kOverviewBins) {
    const int64_t bin_end = bin + 1 == kOverviewBins ? end : summary.begin_ns + (bin + 1) * summary.bin_ns;
    const int64_t upto = std::min(end, bin_end);
    if (upto > begin) bins[static_cast<size_t>(bin)] += upto - begin;
    begin = std::max(begin, upto);
    ++bin;
  }
}

std::string_view BusyRunName(uint16_t share) {
  if (share >= kOverviewBusyScale * 9 / 10) return "busy >= 90 %";
  if (share >= kOverviewBusyScale / 2) return "busy 50-90 %";
  return "busy < 50 %";
}
int BusyRunClass(uint16_t share) {
  return share == 0 ? 0 : share >= kOverviewBusyScale * 9 / 10 ? 3 : share >= kOverviewBusyScale / 2 ? 2 : 1;
}

// The overview's trace: a process per rank, its tracks below it, each lane's busy runs, a row of
// its steps, one of its collectives and one of its longest slices, all on the aligned clock.
trace::Trace BuildOverviewTrace(const std::vector<RankSummary>& ranks, const analysis::AlignmentReport& alignment,
                                RankMerge& merge) {
  trace::TraceBuilder builder;
  builder.SetSource(trace::SourceFormat::kSynthetic, "overview of " + std::to_string(ranks.size()) + " ranks");
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankSummary& rank = ranks[i];
    const analysis::RankClock& clock = alignment.ranks[alignment.rank_of_input[i]];
    const int64_t offset = clock.CorrectionAt(rank.begin_ns);
    // As merge.cc: the offset at the rank's first instant, or the drift's correction at each time.
    auto aligned = [&](int64_t t) { return t + (clock.drift_ppm == 0 ? offset : clock.CorrectionAt(t)); };
    analysis::MergedInput input;
    input.source = rank.source;
    input.process = rank.process;
    input.rank = rank.rank;
    input.host = rank.host;
    input.offset_ns = offset;
    input.alignment = alignment.input_alignment[i];
    trace::Track process;
    process.name = process.full_name = builder.Intern(rank.process);
    process.kind = trace::TrackKind::kHost;
    process.sort_index = (rank.rank >= 0 ? rank.rank : static_cast<int32_t>(i)) * 1000;
    input.process_track = builder.AddTrack(process);
    auto add_row = [&](std::string_view name, int32_t parent, int32_t sort_index) {
      trace::Track row;
      row.name = row.full_name = builder.Intern(name);
      row.parent = parent;
      row.kind = trace::TrackKind::kOther;
      row.concurrent = true;  // collectives of several groups, longest slices of several lanes overlap
      row.sort_index = sort_index;
      return builder.AddTrack(row);
    };
    const uint32_t steps_row = add_row("steps", static_cast<int32_t>(input.process_track), -3);
    const uint32_t collectives_row = add_row("collectives", static_cast<int32_t>(input.process_track), -2);
    const uint32_t longest_row = add_row("longest slices per step", static_cast<int32_t>(input.process_track), -1);
    std::vector<uint32_t> track_map(rank.tracks.size());
    for (size_t t = 0; t < rank.tracks.size(); ++t) {
      const OverviewTrack& from = rank.tracks[t];
      trace::Track copy;
      copy.name = copy.full_name = builder.Intern(from.name);
      copy.parent = from.parent >= 0 ? static_cast<int32_t>(track_map[static_cast<size_t>(from.parent)])
                                     : static_cast<int32_t>(input.process_track);
      copy.kind = from.kind;
      copy.sort_index = from.sort_index;
      copy.concurrent = from.concurrent;
      track_map[t] = builder.AddTrack(copy);  // parents come before their children (as in the trace)
    }
    for (const OverviewLane& lane : rank.lanes) {
      // Runs of bins of one share class, each a slice named by it.
      for (int b = 0; b < kOverviewBins;) {
        const int cls = BusyRunClass(lane.bins[static_cast<size_t>(b)]);
        int e = b + 1;
        while (e < kOverviewBins && BusyRunClass(lane.bins[static_cast<size_t>(e)]) == cls) ++e;
        if (cls != 0) {
          const int64_t begin = rank.begin_ns + b * rank.bin_ns;
          const int64_t end = std::min(rank.end_ns, rank.begin_ns + e * rank.bin_ns);
          const trace::StringId name = builder.Intern(BusyRunName(lane.bins[static_cast<size_t>(b)]));
          builder.AddSlice({.start_ns = aligned(begin), .dur_ns = std::max<int64_t>(1, aligned(end) - aligned(begin)),
                            .track = track_map[lane.track], .name = name, .op_type = name, .kind = trace::SliceKind::kOther});
        }
        b = e;
      }
    }
    auto add_whole = [&](const OverviewSlice& slice, uint32_t row) {
      const trace::StringId name = builder.Intern(slice.name);
      builder.AddSlice({.start_ns = aligned(slice.start_ns), .dur_ns = slice.dur_ns, .track = row, .name = name,
                        .op_type = name, .kind = slice.kind});
    };
    for (const OverviewSlice& step : rank.steps) add_whole(step, steps_row);
    for (const auto& [key, instances] : rank.digest.clock.collectives) {
      const trace::StringId name = builder.Intern(key.name);
      for (const analysis::CollectiveInstance& instance : instances) {
        builder.AddSlice({.start_ns = aligned(instance.start_ns), .dur_ns = instance.end_ns - instance.start_ns,
                          .track = collectives_row, .name = name, .op_type = name, .kind = trace::SliceKind::kCollective});
      }
    }
    for (const OverviewSlice& slice : rank.longest) add_whole(slice, longest_row);
    spans.emplace_back(aligned(rank.begin_ns), aligned(rank.end_ns));
    merge.inputs.push_back(std::move(input));
  }
  trace::Trace trace = std::move(builder).Build();
  // Rows whose slices overlap (a rank's longest slices) got lanes: the tracks were renumbered.
  analysis::FindProcessTracksAfterBuild(trace, merge.inputs);
  for (size_t i = 0; i < merge.inputs.size(); ++i) {
    merge.inputs[i].begin_ns = spans[i].first - trace.epoch_ns();
    merge.inputs[i].end_ns = spans[i].second - trace.epoch_ns();
  }
  return trace;
}

}  // namespace

size_t RankSummary::bytes() const {
  size_t total = sizeof(*this) + source.capacity() + host.capacity() + process.capacity();
  for (const OverviewTrack& track : tracks) total += sizeof(track) + track.name.capacity();
  for (const OverviewLane& lane : lanes) total += sizeof(lane) + lane.bins.capacity() * sizeof(uint16_t);
  for (const auto* list : {&steps, &longest}) {
    for (const OverviewSlice& slice : *list) total += sizeof(slice) + slice.name.capacity();
  }
  for (const auto& [key, instances] : digest.clock.collectives) {
    total += sizeof(key) + key.group.capacity() + key.name.capacity() + instances.capacity() * sizeof(instances[0]);
  }
  total += digest.stragglers.windows.capacity() * sizeof(analysis::StragglerWindow);
  return total;
}

RankSummary SummarizeRank(const trace::Trace& trace, size_t input) {
  RankSummary summary;
  const trace::StepInfo& info = trace.step_info();
  summary.source = trace.source_path();
  summary.rank = info.rank;
  summary.host = info.host;
  summary.process = analysis::MergedProcessName(trace, input);
  summary.slices = static_cast<int64_t>(trace.slices().size());
  const int64_t epoch = trace.epoch_ns();
  summary.begin_ns = epoch + trace.span_begin_ns();
  summary.end_ns = epoch + trace.span_end_ns();
  summary.bin_ns = std::max<int64_t>(1, (summary.end_ns - summary.begin_ns + kOverviewBins - 1) / kOverviewBins);

  // Tracks, and each lane's busy time: the union of its work, swept in start order.
  std::vector<int64_t> busy_bins(kOverviewBins);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const trace::Track& from = trace.tracks()[t];
    summary.tracks.push_back({std::string(trace.str(from.name)), from.parent, from.kind, from.sort_index, from.concurrent, -1});
    std::fill(busy_bins.begin(), busy_bins.end(), 0);
    int64_t busy = 0, run_begin = 0, run_end = INT64_MIN;
    auto flush = [&] {
      if (run_end == INT64_MIN) return;
      busy += run_end - run_begin;
      AddBusy(summary, run_begin, run_end, busy_bins);
    };
    bool any = false;
    for (const trace::Slice& slice : trace.track_slices(t)) {
      if (trace::IsAnnotationOrSync(slice.kind)) continue;
      any = true;
      const int64_t begin = epoch + slice.start_ns, end = epoch + slice.end_ns();
      if (begin > run_end) {
        flush();
        run_begin = begin;
        run_end = end;
      } else {
        run_end = std::max(run_end, end);
      }
    }
    flush();
    if (!any) continue;
    OverviewLane lane;
    lane.track = t;
    lane.busy_ns = busy;
    lane.bins.resize(kOverviewBins);
    for (int b = 0; b < kOverviewBins; ++b) {
      const int64_t share = (busy_bins[static_cast<size_t>(b)] * kOverviewBusyScale + summary.bin_ns / 2) / summary.bin_ns;
      lane.bins[static_cast<size_t>(b)] = static_cast<uint16_t>(std::min<int64_t>(share, kOverviewBusyScale));
    }
    summary.tracks.back().lane = static_cast<int32_t>(summary.lanes.size());
    summary.lanes.push_back(std::move(lane));
  }

  // Steps, and each step's longest slices of work (a slice belongs to the step it starts in).
  const std::vector<analysis::StepWindow> windows =
      analysis::NumberedStepWindows({&trace, 1}, std::nullopt, analysis::StepWindowing::kEveryStep).front();
  for (const analysis::StepWindow& window : windows) {
    if (window.whole || window.end_ns <= window.begin_ns) continue;
    // A ProfilerStep#N window by its marker's name; a step trace's span as "step N".
    const bool named = window.marker != "trace" && window.marker != "ranks merged";
    summary.steps.push_back({named ? window.marker : "step " + std::to_string(window.number), trace::SliceKind::kAnnotation,
                             -1, epoch + window.begin_ns, window.end_ns - window.begin_ns});
  }
  std::sort(summary.steps.begin(), summary.steps.end(),
            [](const OverviewSlice& a, const OverviewSlice& b) { return a.start_ns < b.start_ns; });
  std::vector<std::vector<uint32_t>> longest(std::max<size_t>(1, summary.steps.size()));
  const auto& slices = trace.slices();
  for (uint32_t k = 0; k < slices.size(); ++k) {
    const trace::Slice& slice = slices[k];
    if (trace::IsAnnotationOrSync(slice.kind) || slice.duplicate()) continue;
    size_t step = 0;
    if (!summary.steps.empty()) {
      const auto after = std::upper_bound(summary.steps.begin(), summary.steps.end(), epoch + slice.start_ns,
                                          [](int64_t t, const OverviewSlice& s) { return t < s.start_ns; });
      if (after == summary.steps.begin()) continue;
      step = static_cast<size_t>(after - summary.steps.begin() - 1);
    }
    std::vector<uint32_t>& kept = longest[step];
    auto shorter = [&](uint32_t a, uint32_t b) { return slices[a].dur_ns > slices[b].dur_ns; };  // min-heap on duration
    if (kept.size() < kOverviewLongestPerStep) {
      kept.push_back(k);
      std::push_heap(kept.begin(), kept.end(), shorter);
    } else if (slice.dur_ns > slices[kept.front()].dur_ns) {
      std::pop_heap(kept.begin(), kept.end(), shorter);
      kept.back() = k;
      std::push_heap(kept.begin(), kept.end(), shorter);
    }
  }
  for (const auto& kept : longest) {
    for (uint32_t k : kept) {
      const trace::Slice& slice = slices[k];
      summary.longest.push_back({std::string(trace.str(trace.slice_name(slice))), slice.kind,
                                 static_cast<int32_t>(slice.track), epoch + slice.start_ns, slice.dur_ns});
    }
  }
  std::sort(summary.longest.begin(), summary.longest.end(),
            [](const OverviewSlice& a, const OverviewSlice& b) { return a.start_ns < b.start_ns; });

  // The digests alignment and stragglers combine from (the collectives row is drawn from the clock's).
  summary.digest = analysis::DigestInput(trace, input);
  return summary;
}

size_t Overview::summary_bytes() const {
  size_t total = 0;
  for (const RankSummary& rank : ranks) total += rank.bytes();
  return total;
}

int64_t DefaultMemoryBudget() {
  const int64_t pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? pages * page / 4 : int64_t{4} << 30;
}

int64_t EstimatedTraceBytes(const std::string& file) {
  std::error_code error;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(file, error));
  if (error) return 0;
  const bool gzipped = file.size() > 3 && file.compare(file.size() - 3, 3, ".gz") == 0;
  return size * (gzipped ? 12 : 3);
}

int64_t EstimatedMergeBytes(const std::vector<std::string>& files) {
  int64_t total = 0;
  for (const std::string& file : files) total += EstimatedTraceBytes(file);
  return total;
}

bool WantsOverview(const std::vector<std::string>& files, const OverviewPolicy& policy) {
  if (files.size() < 2 || policy.mode == OverviewPolicy::Mode::kNever) return false;
  if (policy.mode == OverviewPolicy::Mode::kAlways) return true;
  const int64_t budget = policy.budget_bytes > 0 ? policy.budget_bytes : DefaultMemoryBudget();
  return EstimatedMergeBytes(files) > budget;
}

int64_t OverviewInputOfRank(const Overview& overview, int32_t rank) {
  for (size_t i = 0; i < overview.ranks.size(); ++i) {
    const int32_t known = overview.ranks[i].rank >= 0 ? overview.ranks[i].rank : static_cast<int32_t>(i);
    if (known == rank) return static_cast<int64_t>(i);
  }
  return -1;
}

StatusOr<std::shared_ptr<const TraceDocument>> OpenOverviewDocument(
    const std::vector<std::string>& files, const std::string& name, const std::atomic<bool>* cancel,
    const std::function<void(const std::string& file)>& on_file, std::string* note, analysis::AlignMethod align,
    const OverviewPolicy& policy) {
  auto cancelled = [&] { return cancel != nullptr && cancel->load(); };
  auto overview = std::make_shared<Overview>();
  overview->budget_bytes = policy.budget_bytes > 0 ? policy.budget_bytes : DefaultMemoryBudget();
  overview->estimated_merge_bytes = EstimatedMergeBytes(files);
  // As many ranks at once as the budget holds of the largest, at most one per core.
  int64_t largest = 1;
  for (const std::string& file : files) largest = std::max(largest, EstimatedTraceBytes(file));
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  overview->threads = static_cast<int>(std::clamp<int64_t>(overview->budget_bytes / largest, 1, std::min<int64_t>(cores, static_cast<int64_t>(files.size()))));

  std::vector<std::optional<RankSummary>> summaries(files.size());
  std::vector<std::string> errors(files.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  auto work = [&] {
    for (size_t i = next++; i < files.size() && !cancelled(); i = next++) {
      if (on_file) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        on_file(files[i]);
      }
      auto trace = trace::ReadTrace(files[i]);
      if (!trace.ok()) {
        errors[i] = trace.status().message();
      } else if (trace->slices().empty()) {
        errors[i] = files[i] + ": the trace holds no slices (no ops, kernels or events to show)";
      } else {
        summaries[i] = SummarizeRank(*trace, i);  // renumbered below, once the unread are known
      }
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < overview->threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
  if (cancelled()) return Status(StatusCode::kCancelled, "opening " + name + " was cancelled");

  for (size_t i = 0; i < files.size(); ++i) {
    if (!summaries[i]) {
      overview->unread.push_back({files[i], errors[i]});
      continue;
    }
    summaries[i]->digest.input = overview->ranks.size();
    for (auto& [key, instances] : summaries[i]->digest.clock.collectives) {
      for (analysis::CollectiveInstance& instance : instances) instance.input = overview->ranks.size();
    }
    overview->ranks.push_back(std::move(*summaries[i]));
  }
  summaries.clear();
  if (overview->ranks.empty()) {
    std::string why = name + ": no trace could be read";
    for (const UnreadRank& unread : overview->unread) why += "; " + unread.message;
    return InvalidInput(why);
  }

  std::vector<analysis::ClockDigest> clocks;
  std::vector<analysis::StragglerDigest> stragglers;
  for (const RankSummary& rank : overview->ranks) {
    clocks.push_back(rank.digest.clock);
    stragglers.push_back(rank.digest.stragglers);
  }
  overview->alignment = analysis::AlignDigests(clocks, align);
  auto ranks = std::make_shared<RankMerge>();
  ranks->alignment = overview->alignment;
  if (overview->ranks.size() < 2) {
    ranks->stragglers_error = "one trace, no ranks to compare";
  } else {
    auto report = analysis::CombineStragglers(stragglers, overview->alignment, {.align = align});
    if (report.ok()) {
      ranks->stragglers = std::move(report).value();
    } else {
      ranks->stragglers_error = report.status().message();
    }
  }
  trace::Trace trace = BuildOverviewTrace(overview->ranks, overview->alignment, *ranks);
  if (note != nullptr) {
    *note = "Overview of " + std::to_string(overview->ranks.size()) + " ranks (merging them would take about " +
            std::to_string(overview->estimated_merge_bytes >> 20) + " MB, the budget is " +
            std::to_string(overview->budget_bytes >> 20) + " MB; summaries " +
            std::to_string(overview->summary_bytes() >> 10) + " KB), " + AlignmentText(ranks->alignment) + "; " +
            (ranks->stragglers ? std::to_string(ranks->stragglers->steps.size()) +
                                     (ranks->stragglers->steps.size() == 1 ? " step" : " steps") + " compared across ranks"
                               : "no stragglers: " + ranks->stragglers_error) +
            "; File > Open Ranks in Detail opens a rank in full";
    for (const std::string& why : ranks->alignment.notes) *note += "; note: " + why;
    for (const UnreadRank& unread : overview->unread) *note += "; not read: " + unread.message;
  }
  if (trace.slices().empty()) return InvalidInput(name + ": the ranks hold no work to show");
  return std::shared_ptr<const TraceDocument>(
      std::make_shared<TraceDocument>(std::move(trace), name, std::move(ranks), std::vector<trace::Truncation>{},
                                      std::move(overview)));
}

StatusOr<std::shared_ptr<const TraceDocument>> OpenOverviewRanks(const TraceDocument& document,
                                                                 const std::vector<size_t>& inputs,
                                                                 const std::atomic<bool>* cancel) {
  const Overview* overview = document.overview();
  if (overview == nullptr) return InvalidInput(document.path() + ": not an overview of ranks");
  if (inputs.empty()) return InvalidInput(document.path() + ": no rank chosen to open");
  // The chosen inputs' clocks, as the whole job aligned them.
  analysis::AlignmentReport alignment;
  alignment.method = overview->alignment.method;
  alignment.notes = overview->alignment.notes;
  std::vector<trace::Trace> traces;
  std::string ranks_text;
  for (size_t input : inputs) {
    if (input >= overview->ranks.size()) return InvalidInput(document.path() + ": no input " + std::to_string(input));
    if (cancel != nullptr && cancel->load()) return Status(StatusCode::kCancelled, "opening ranks was cancelled");
    const RankSummary& rank = overview->ranks[input];
    ASSIGN_OR_RETURN(trace::Trace trace, trace::ReadTrace(rank.source));
    analysis::RankClock clock = overview->alignment.ranks[overview->alignment.rank_of_input[input]];
    clock.inputs = {traces.size()};
    alignment.rank_of_input.push_back(alignment.ranks.size());
    alignment.ranks.push_back(std::move(clock));
    alignment.input_alignment.push_back(overview->alignment.input_alignment[input]);
    traces.push_back(std::move(trace));
    ranks_text += (ranks_text.empty() ? "" : ", ") + rank.process;
  }
  // On the overview's epoch: the ruler reads the same times in both tabs.
  analysis::MergeResult merged =
      analysis::MergeTraces(std::move(traces), std::move(alignment), document.trace().epoch_ns());
  auto ranks = std::make_shared<RankMerge>();
  ranks->alignment = merged.report.alignment;
  ranks->inputs = std::move(merged.report.inputs);
  ranks->stragglers_error = "the overview's Stragglers pane compares every rank";
  return MakeDocument(std::move(merged.trace), ranks_text + " of " + document.path(), std::move(ranks));
}

}  // namespace stepscope::viewer
