// The overview of a job too large to merge (viewer/load/overview.h) against the full merge of the
// same ranks: six generated PyTorch-profiler ranks (tests/analysis/kineto_generator.h: 40-iteration
// steps, NCCL all-reduce kernels, the last rank's kernels slower), rank 2's clock 5 s ahead. Each
// lane's busy time, its busy share per bin, the steps, the collectives and the clocks equal the merge's; a rank opened on demand has the merge's slices at the merge's times;
// a bad file is named and the other ranks open.
#include <QDockWidget>
#include <QLabel>
#include <QStandardPaths>
#include <QtTest/QtTest>
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/file_io.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "tests/analysis/kineto_generator.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/document.h"
#include "viewer/load/overview.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

constexpr int kRanks = 6;
constexpr int kShiftedRank = 2;
constexpr int64_t kShiftUs = 5'000'000;

// The generated rank with every "ts" moved by `shift_us` (its clock ahead).
std::string GeneratedRank(int rank, int64_t shift_us) {
  const auto generated = analysis::testing::GenerateKinetoJson(
      160 << 10, {.rank = rank, .world_size = kRanks, .iterations_per_step = 40,
                  .slow_kernel_ns = rank == kRanks - 1 ? 2000 : 0});
  if (shift_us == 0) return generated.json;
  std::string out;
  out.reserve(generated.json.size() + 1024);
  const std::string key = "\"ts\": ";
  size_t at = 0;
  for (size_t found; (found = generated.json.find(key, at)) != std::string::npos;) {
    const size_t digits = found + key.size();
    size_t end = digits;
    while (end < generated.json.size() && generated.json[end] >= '0' && generated.json[end] <= '9') ++end;
    out.append(generated.json, at, digits - at);
    out += std::to_string(std::stoll(generated.json.substr(digits, end - digits)) + shift_us);
    at = end;
  }
  out.append(generated.json, at, std::string::npos);
  return out;
}

// A track's names from its root down.
std::vector<std::string> OverviewPathOf(const RankSummary& rank, uint32_t track) {
  std::vector<std::string> path;
  for (int32_t t = static_cast<int32_t>(track); t >= 0; t = rank.tracks[static_cast<size_t>(t)].parent) {
    path.insert(path.begin(), rank.tracks[static_cast<size_t>(t)].name);
  }
  return path;
}

// The merged track under `process` whose names below it are `path`; -1 when none.
int64_t MergedTrackOf(const trace::Trace& merged, uint32_t process, const std::vector<std::string>& path) {
  for (uint32_t t = 0; t < merged.tracks().size(); ++t) {
    std::vector<std::string> names;
    int32_t at = static_cast<int32_t>(t);
    while (at >= 0 && static_cast<uint32_t>(at) != process) {
      names.insert(names.begin(), std::string(merged.str(merged.tracks()[static_cast<size_t>(at)].name)));
      at = merged.tracks()[static_cast<size_t>(at)].parent;
    }
    if (at >= 0 && names == path) return t;
  }
  return -1;
}

// The union of a merged track's work (annotations, syncs, Python frames are not work), absolute ns.
std::vector<std::pair<int64_t, int64_t>> MergedBusy(const trace::Trace& merged, uint32_t track) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const trace::Slice& s : merged.track_slices(track)) {
    if (trace::IsAnnotationOrSync(s.kind)) continue;
    const int64_t begin = merged.epoch_ns() + s.start_ns, end = merged.epoch_ns() + s.end_ns();
    if (!runs.empty() && begin <= runs.back().second) {
      runs.back().second = std::max(runs.back().second, end);
    } else {
      runs.emplace_back(begin, end);
    }
  }
  return runs;
}

int64_t BusyWithin(const std::vector<std::pair<int64_t, int64_t>>& runs, int64_t begin, int64_t end) {
  int64_t busy = 0;
  for (const auto& [b, e] : runs) busy += std::max<int64_t>(0, std::min(e, end) - std::max(b, begin));
  return busy;
}

size_t MergedInputOf(const RankMerge& merge, const std::string& source) {
  for (size_t i = 0; i < merge.inputs.size(); ++i) {
    if (merge.inputs[i].source == source) return i;
  }
  return merge.inputs.size();
}

// (absolute start, duration, name) of every slice under `process` whose kind passes `keep`.
using SliceKey = std::tuple<int64_t, int64_t, std::string>;
template <typename Keep>
std::vector<SliceKey> SlicesUnder(const trace::Trace& trace, uint32_t process, Keep keep) {
  std::vector<SliceKey> out;
  for (const trace::Slice& s : trace.slices()) {
    if (static_cast<uint32_t>(trace.HostOf(static_cast<uint32_t>(s.track))) != process || !keep(s)) continue;
    out.emplace_back(trace.epoch_ns() + s.start_ns, s.dur_ns, std::string(trace.str(trace.slice_name(s))));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

class OverviewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    const std::filesystem::path scratch = testing::ScratchDir("viewer_overview");
    dir_ = (scratch / "ranks").string();
    bad_dir_ = (scratch / "ranks_and_a_bad_file").string();
    std::filesystem::create_directories(dir_);
    std::filesystem::create_directories(bad_dir_);
    for (int rank = 0; rank < kRanks; ++rank) {
      const std::string json = GeneratedRank(rank, rank == kShiftedRank ? kShiftUs : 0);
      const std::string name = "/rank" + std::to_string(rank) + ".json";
      QVERIFY(WriteFileAtomically(dir_ + name, json).ok());
      QVERIFY(WriteFileAtomically(bad_dir_ + name, json).ok());
    }
    QVERIFY(WriteFileAtomically(bad_dir_ + "/rank9.json", "{\"traceEvents\": [ {\"ph\": \"X\", \"name\": ").ok());
    auto files = trace::ResolveTracePaths({dir_});
    QVERIFY(files.ok());
    files_ = *files;
    auto merged = OpenMergedDocument(files_, dir_, nullptr, nullptr, nullptr, false, analysis::AlignMethod::kAuto);
    QVERIFY2(merged.ok(), merged.status().message().c_str());
    merged_ = *merged;
    std::string note;
    auto overview = OpenOverviewDocument(files_, dir_, nullptr, nullptr, &note, analysis::AlignMethod::kAuto,
                                         {.mode = OverviewPolicy::Mode::kAlways});
    QVERIFY2(overview.ok(), overview.status().message().c_str());
    overview_ = *overview;
    QVERIFY2(note.find("Overview of 6 ranks") != std::string::npos, note.c_str());
  }

  // The clocks are aligned as the merge aligns them: the same method and each rank's offset
  // (rank 2's 5 s taken back when the collectives align them).
  void ClocksEqualTheMerge() {
    CheckClocksAndStragglers(*merged_, *overview_);
    if (QTest::currentTestFailed()) return;
    const RankMerge& merge = *merged_->rank_merge();
    const RankMerge& over = *overview_->rank_merge();
    QCOMPARE(merge.alignment.method, analysis::AlignMethod::kCollectives);
    {
      const size_t shifted = MergedInputOf(over, files_[kShiftedRank]);
      QVERIFY(std::llabs(over.inputs[shifted].offset_ns + kShiftUs * 1000) < 1'000'000);
    }
  }

  // Each lane's busy time is the merge's exactly, and each bin's share is the merge's busy time
  // in that bin (moved by the rank's offset) within the stated 1/65,535 of a bin.
  void BusyPerLaneEqualsTheMerge() { CheckBusyPerLane(*merged_, *overview_, kRanks * 2); }  // CPU and GPU lanes

  // The overview's step row and collectives row hold the merge's step annotations and the
  // collectives' kernels at the merge's times.
  void StepsAndCollectivesAtTheMergesTimes() { CheckStepsAndCollectives(*merged_, *overview_); }

  // The same on real ranks: three PyTorch processes of one gloo job (tests/data/analysis/gloo_ranks),
  // their collectives gloo's spans on a work thread, one of them over a group of two.
  void RealGlooRanksEqualTheMerge() {
    auto files = trace::ResolveTracePaths({testing::DataPath("analysis/gloo_ranks")});
    QVERIFY(files.ok());
    QCOMPARE(files->size(), size_t{3});
    auto merged = OpenMergedDocument(*files, "gloo_ranks", nullptr, nullptr, nullptr, false, analysis::AlignMethod::kCollectives);
    QVERIFY2(merged.ok(), merged.status().message().c_str());
    auto overview = OpenOverviewDocument(*files, "gloo_ranks", nullptr, nullptr, nullptr, analysis::AlignMethod::kCollectives,
                                         {.mode = OverviewPolicy::Mode::kAlways});
    QVERIFY2(overview.ok(), overview.status().message().c_str());
    QCOMPARE((*merged)->rank_merge()->alignment.method, analysis::AlignMethod::kCollectives);
    CheckClocksAndStragglers(**merged, **overview);
    if (QTest::currentTestFailed()) return;
    CheckBusyPerLane(**merged, **overview, 3);  // the main thread's ops (gloo's threads hold only annotations)
    if (QTest::currentTestFailed()) return;
    CheckStepsAndCollectives(**merged, **overview);
  }

  // A rank opened on demand holds exactly the merge's slices of that rank, at the same times.
  void RankOpenedOnDemandHasTheMergesTimes() {
    const Overview& overview = *overview_->overview();
    const int64_t input = OverviewInputOfRank(overview, kShiftedRank);
    QVERIFY(input >= 0);
    auto details = OpenOverviewRanks(*overview_, {static_cast<size_t>(input)});
    QVERIFY2(details.ok(), details.status().message().c_str());
    QVERIFY((*details)->overview() == nullptr);
    const RankMerge& merge = *merged_->rank_merge();
    const size_t m = MergedInputOf(merge, overview.ranks[static_cast<size_t>(input)].source);
    auto all = [](const trace::Slice&) { return true; };
    const auto expected = SlicesUnder(merged_->trace(), merge.inputs[m].process_track, all);
    const auto opened = SlicesUnder((*details)->trace(), (*details)->rank_merge()->inputs.front().process_track, all);
    QVERIFY2(expected.size() > 300, qPrintable(QString::number(expected.size())));
    QCOMPARE(opened.size(), expected.size());
    QVERIFY(opened == expected);
    QCOMPARE((*details)->rank_merge()->inputs.front().offset_ns, merge.inputs[m].offset_ns);
    // On the overview's epoch, so that the ruler reads the same times in both tabs.
    QCOMPARE((*details)->trace().epoch_ns(), overview_->trace().epoch_ns());
    QVERIFY((*details)->trace().span_begin_ns() > 0);  // the rank starts after the job's first instant
    // Two ranks merged on the overview's clocks.
    auto two = OpenOverviewRanks(*overview_, {0, static_cast<size_t>(input)});
    QVERIFY2(two.ok(), two.status().message().c_str());
    QCOMPARE((*two)->rank_merge()->inputs.size(), size_t{2});
    QCOMPARE((*two)->trace().epoch_ns(), overview_->trace().epoch_ns());
    QCOMPARE((*two)->trace().slices().size(),
             SlicesUnder(merged_->trace(), merge.inputs[m].process_track, all).size() +
                 SlicesUnder(merged_->trace(), merge.inputs[MergedInputOf(merge, overview.ranks[0].source)].process_track, all).size());
  }

  // A file that cannot be read is named; the other ranks open.
  void BadFileIsNamedAndTheOthersOpen() {
    const auto files = trace::ResolveTracePaths({bad_dir_});
    QVERIFY(files.ok());
    QCOMPARE(files->size(), size_t{kRanks + 1});
    std::string note;
    auto overview = OpenOverviewDocument(*files, bad_dir_, nullptr, nullptr, &note, analysis::AlignMethod::kAuto,
                                         {.mode = OverviewPolicy::Mode::kAlways});
    QVERIFY2(overview.ok(), overview.status().message().c_str());
    QCOMPARE((*overview)->overview()->ranks.size(), size_t{kRanks});
    QCOMPARE((*overview)->overview()->unread.size(), size_t{1});
    QVERIFY2((*overview)->overview()->unread.front().message.find("rank9.json") != std::string::npos,
             (*overview)->overview()->unread.front().message.c_str());
    QVERIFY2(note.find("not read: ") != std::string::npos && note.find("rank9.json") != std::string::npos, note.c_str());

    // In the window: the error names the file, the overview opens with the six ranks.
    MainWindow window(/*interactive=*/false);
    window.loader()->SetOverviewPolicy({.mode = OverviewPolicy::Mode::kAlways});
    window.Open({QString::fromStdString(bad_dir_)});
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 1);
    QVERIFY(window.document(0)->document().overview() != nullptr);
    QVERIFY(std::any_of(window.errors().begin(), window.errors().end(),
                        [](const QString& e) { return e.contains("rank9.json"); }));
  }

  // The window opens a directory over the memory budget as its overview (the Stragglers pane
  // filled), and File > Open Ranks in Detail's rank, the selected slice's, in a tab of its own.
  void WindowOpensTheOverviewThenARank() {
    MainWindow window(/*interactive=*/false);
    window.resize(1600, 1000);
    window.show();
    window.loader()->SetOverviewPolicy({.mode = OverviewPolicy::Mode::kAuto, .budget_bytes = 1 << 20});
    window.Open({QString::fromStdString(dir_)});
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 1);
    DocumentView* view = window.document(0);
    QVERIFY(view->document().overview() != nullptr);
    QVERIFY(view->pane<StragglersPane>()->stragglers_caption().contains("clocks aligned by"));
    // Panes that read every slice say how to open ranks in full, and are not analysed; the
    // stragglers, details, search, tracks and markers stay.
    QVERIFY(view->analysed());
    QVERIFY(view->analysis()->op_stats.by_op_type.empty() && view->analysis()->critical_paths.empty());
    for (PaneId id : {kStatsPane, kMemoryPane, kCallTreePane, kCriticalPathPane, kGpuPane}) {
      const auto* hint = qobject_cast<const QLabel*>(view->dock(id)->widget());
      QVERIFY2(hint != nullptr && hint->text().contains("Open Ranks in Detail"), PaneSpecOf(id).name);
      QVERIFY(!view->pane(id)->widget()->isVisibleTo(view));
    }
    for (PaneId id : {kStragglersPane, kDetailsPane, kSearchPane, kTracksPane}) {
      QCOMPARE(view->dock(id)->widget(), view->pane(id)->widget());
    }
    QVERIFY(window.ExportStatsCsv(QDir::temp().filePath("overview_stats.csv")).contains("Open Ranks in Detail"));
    // Select a busy run of the shifted rank: its rank is the one to open.
    const trace::Trace& over = view->document().trace();
    const uint32_t process =
        view->document().rank_merge()->inputs[static_cast<size_t>(OverviewInputOfRank(*view->document().overview(), kShiftedRank))]
            .process_track;
    int64_t selected = -1;
    for (uint32_t s = 0; s < over.slices().size() && selected < 0; ++s) {
      if (static_cast<uint32_t>(over.HostOf(static_cast<uint32_t>(over.slices()[s].track))) == process) selected = s;
    }
    QVERIFY(selected >= 0);
    view->timeline()->SelectSlice(selected);
    QCOMPARE(window.SelectedOverviewRank(), kShiftedRank);
    QVERIFY(window.OpenOverviewRanks({window.SelectedOverviewRank()}));
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 2);
    QVERIFY(window.document(1)->document().overview() == nullptr);
    QCOMPARE(window.document(1)->dock(kStatsPane)->widget(), window.document(1)->pane(kStatsPane)->widget());
    QCOMPARE(window.document(1)->document().rank_merge()->inputs.front().rank, kShiftedRank);
    // A double-click on rank 0's header row opens rank 0.
    window.ShowDocument(0);
    QApplication::processEvents();
    const uint32_t process0 =
        view->document().rank_merge()->inputs[static_cast<size_t>(OverviewInputOfRank(*view->document().overview(), 0))].process_track;
    const auto& rows = view->timeline()->layout().rows();
    int header = -1;
    for (size_t r = 0; r < rows.size() && header < 0; ++r) {
      if (rows[r].kind == TimelineRow::Kind::kHeader && rows[r].track == process0) header = static_cast<int>(r);
    }
    QVERIFY(header >= 0);
    const int y = view->timeline()->RowTop(header) + 4;
    QCOMPARE(view->OverviewRankAtRow(y), 0);
    QTest::mouseDClick(view->timeline(), Qt::LeftButton, {}, QPoint(view->timeline()->width() / 2, y));
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 3);
    QCOMPARE(window.document(2)->document().rank_merge()->inputs.front().rank, 0);
    // Under the budget the same directory merges.
    window.loader()->SetOverviewPolicy({.mode = OverviewPolicy::Mode::kAuto, .budget_bytes = int64_t{1} << 40});
    window.Open({QString::fromStdString(dir_)});
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 4);
    QVERIFY(window.document(3)->document().overview() == nullptr);
    QCOMPARE(window.document(3)->document().rank_merge()->inputs.size(), size_t{kRanks});
  }

  void BudgetDecides() {
    QVERIFY(WantsOverview(files_, {.mode = OverviewPolicy::Mode::kAuto, .budget_bytes = 1}));
    QVERIFY(!WantsOverview(files_, {.mode = OverviewPolicy::Mode::kAuto, .budget_bytes = int64_t{1} << 40}));
    QVERIFY(!WantsOverview(files_, {.mode = OverviewPolicy::Mode::kNever, .budget_bytes = 1}));
    QVERIFY(WantsOverview(files_, {.mode = OverviewPolicy::Mode::kAlways, .budget_bytes = int64_t{1} << 40}));
    QVERIFY(!WantsOverview({files_.front()}, {.mode = OverviewPolicy::Mode::kAlways}));
    QVERIFY(EstimatedMergeBytes(files_) >= 3 * kRanks * (160 << 10));
    // The per-rank summary stays small: its lanes' bins and its steps, collectives and longest slices.
    for (const RankSummary& rank : overview_->overview()->ranks) {
      QVERIFY2(rank.bytes() < 64 << 10, qPrintable(QString::number(rank.bytes())));
    }
  }

 private:
  // The overview's clocks and stragglers against the merge's: the same method, each rank's offset,
  // per step the same straggler and lateness.
  static void CheckClocksAndStragglers(const TraceDocument& merged, const TraceDocument& overview) {
    const RankMerge& merge = *merged.rank_merge();
    const RankMerge& over = *overview.rank_merge();
    // Each input's process track is its rank's (a rank header opens that rank), in both.
    for (const TraceDocument* document : {&merged, &overview}) {
      for (const analysis::MergedInput& input : document->rank_merge()->inputs) {
        QCOMPARE(document->trace().str(document->trace().tracks()[input.process_track].name), std::string_view(input.process));
      }
    }
    QCOMPARE(over.alignment.method, merge.alignment.method);
    QCOMPARE(over.inputs.size(), merge.inputs.size());
    for (const analysis::MergedInput& input : over.inputs) {
      const size_t m = MergedInputOf(merge, input.source);
      QVERIFY(m < merge.inputs.size());
      QCOMPARE(input.offset_ns, merge.inputs[m].offset_ns);
      QCOMPARE(input.process, merge.inputs[m].process);
    }
    // The stragglers are the merge's: per step the same straggler and lateness.
    QVERIFY(over.stragglers.has_value() && merge.stragglers.has_value());
    QCOMPARE(over.stragglers->steps.size(), merge.stragglers->steps.size());
    QVERIFY(!over.stragglers->steps.empty());
    for (size_t s = 0; s < merge.stragglers->steps.size(); ++s) {
      QCOMPARE(over.stragglers->steps[s].straggler, merge.stragglers->steps[s].straggler);
      QCOMPARE(over.stragglers->steps[s].lateness_ns, merge.stragglers->steps[s].lateness_ns);
      QCOMPARE(over.stragglers->steps[s].origin_ns, merge.stragglers->steps[s].origin_ns);
    }
  }

  // Each lane's busy time against the merge's (exact), each bin's share within 1/65,535 of a bin;
  // at least `min_lanes` lanes in all.
  static void CheckBusyPerLane(const TraceDocument& merged_document, const TraceDocument& overview_document, int min_lanes) {
    const Overview& overview = *overview_document.overview();
    const RankMerge& merge = *merged_document.rank_merge();
    const trace::Trace& merged = merged_document.trace();
    int lanes = 0;
    for (size_t i = 0; i < overview.ranks.size(); ++i) {
      const RankSummary& rank = overview.ranks[i];
      const size_t m = MergedInputOf(merge, rank.source);
      QVERIFY(m < merge.inputs.size());
      const int64_t offset = merge.inputs[m].offset_ns;
      QVERIFY(!rank.lanes.empty());
      for (const OverviewLane& lane : rank.lanes) {
        const int64_t track = MergedTrackOf(merged, merge.inputs[m].process_track, OverviewPathOf(rank, lane.track));
        QVERIFY(track >= 0);
        const auto runs = MergedBusy(merged, static_cast<uint32_t>(track));
        int64_t busy = 0;
        for (const auto& [b, e] : runs) busy += e - b;
        QCOMPARE(lane.busy_ns, busy);
        QVERIFY(busy > 0);
        int64_t from_bins = 0;
        for (int b = 0; b < kOverviewBins; ++b) {
          const int64_t begin = rank.begin_ns + offset + b * rank.bin_ns;
          const int64_t in_bin = BusyWithin(runs, begin, begin + rank.bin_ns);
          const double share_ns = static_cast<double>(lane.bins[static_cast<size_t>(b)]) * static_cast<double>(rank.bin_ns) /
                                  kOverviewBusyScale;
          QVERIFY2(std::abs(share_ns - static_cast<double>(in_bin)) <= static_cast<double>(rank.bin_ns) / kOverviewBusyScale + 1,
                   qPrintable(QStringLiteral("bin %1: %2 vs %3").arg(b).arg(share_ns).arg(in_bin)));
          from_bins += in_bin;
        }
        QCOMPARE(from_bins, busy);  // the bins cover the rank's span
        ++lanes;
      }
    }
    QVERIFY2(lanes >= min_lanes, qPrintable(QString::number(lanes)));
  }

  // The step row and collectives row against the merge's step annotations and collectives' work.
  static void CheckStepsAndCollectives(const TraceDocument& merged_document, const TraceDocument& overview_document) {
    const Overview& overview = *overview_document.overview();
    const RankMerge& merge = *merged_document.rank_merge();
    const trace::Trace& merged = merged_document.trace();
    const trace::Trace& over = overview_document.trace();
    for (size_t i = 0; i < overview.ranks.size(); ++i) {
      const RankSummary& rank = overview.ranks[i];
      const size_t m = MergedInputOf(merge, rank.source);
      const uint32_t process = overview_document.rank_merge()->inputs[i].process_track;
      auto in_row = [&](std::string_view row) {
        return [&over, row](const trace::Slice& s) { return over.str(over.tracks()[s.track].name) == row; };
      };
      const auto steps = SlicesUnder(over, process, in_row("steps"));
      const auto merged_steps = SlicesUnder(merged, merge.inputs[m].process_track, [&](const trace::Slice& s) {
        return merged.str(merged.slice_name(s)).starts_with("ProfilerStep#");
      });
      QVERIFY2(steps.size() >= 2, qPrintable(QStringLiteral("rank %1: %2 steps").arg(i).arg(steps.size())));
      QCOMPARE(steps, merged_steps);
      const auto collectives = SlicesUnder(over, process, in_row("collectives"));
      QVERIFY(!collectives.empty());
      size_t instances = 0;
      for (const auto& [key, of_key] : rank.digest.clock.collectives) instances += of_key.size();
      QCOMPARE(collectives.size(), instances);
      // A collective's work: a kernel, or a span on gloo's work thread (an annotation).
      const auto merged_slices = SlicesUnder(merged, merge.inputs[m].process_track, [](const trace::Slice&) { return true; });
      for (const SliceKey& collective : collectives) {
        const bool found = std::any_of(merged_slices.begin(), merged_slices.end(), [&](const SliceKey& k) {
          return std::get<0>(k) == std::get<0>(collective) && std::get<1>(k) == std::get<1>(collective);
        });
        QVERIFY2(found, std::get<2>(collective).c_str());
      }
    }
  }

  std::string dir_, bad_dir_;
  std::vector<std::string> files_;
  std::shared_ptr<const TraceDocument> merged_, overview_;
};

}  // namespace stepscope::viewer

QTEST_MAIN(stepscope::viewer::OverviewTest)
#include "overview_test.moc"
