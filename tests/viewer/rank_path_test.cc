// Ranks merged in the viewer with their clocks aligned (`--align`) and the critical path across
// them outlined on the merged timeline: two PyTorch-format ranks written here, rank 1's clock 5 s
// ahead and its compute 2 ms longer before a gloo all-reduce rank 0 waits in (the path the CLI's
// rank_path_cli_test recounts by hand), and the real three-rank gloo job of
// tests/data/analysis/gloo_ranks, whose every path slice must be found in the merge.
#include <QCheckBox>
#include <QComboBox>
#include <QImage>
#include <QStandardPaths>
#include <QtTest/QtTest>
#include <filesystem>
#include <string>

#include "base/file_io.h"
#include "profiler/analysis/rank_critical_path.h"
#include "profiler/formats/inputs.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/document.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/critical_path_pane.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

constexpr int64_t kRank1AheadUs = 5'000'000;

// Rank r (µs from its step's start, plus `shift_us` on its clock): "compute" [100, 100 + compute_us)
// on the main thread, c10d::allreduce_ 10 µs after it; gloo's all-reduce on its own thread from
// 15 µs after the compute until 3,315 (the late rank arrives at 3,115, then 200 µs of transfer);
// then "optimizer" [3,320, 3,820).
std::string Rank(int rank, int64_t compute_us, int64_t shift_us) {
  const int64_t end = 100 + compute_us;
  auto op = [&](const std::string& name, int tid, int64_t ts, int64_t dur, const std::string& cat,
                const std::string& args = "") {
    return R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name + R"(", "pid": 1, "tid": )" + std::to_string(tid) +
           R"(, "ts": )" + std::to_string(ts + shift_us) + R"(, "dur": )" + std::to_string(dur) + args + "}";
  };
  const std::string events =
      op("ProfilerStep#1", 1, 0, 10000, "user_annotation") + ",\n" + op("compute", 1, 100, compute_us, "cpu_op") +
      ",\n" + op("c10d::allreduce_", 1, end + 10, 20, "cpu_op") + ",\n" +
      op("gloo:all_reduce", 2, end + 15, 3315 - (end + 15), "user_annotation", R"(, "args": {"Input Dims": [[1000]]})") +
      ",\n" + op("optimizer", 1, 3320, 500, "cpu_op");
  return R"({"distributedInfo": {"backend": "gloo", "rank": )" + std::to_string(rank) +
         R"(, "world_size": 2}, "traceEvents": [)" + "\n" + events + "\n]}\n";
}

// The merged slice named `name` under the process of input `input`, or -1.
int64_t SliceOnInput(const TraceDocument& doc, size_t input, const std::string& name) {
  const trace::Trace& trace = doc.trace();
  const uint32_t process = doc.rank_merge()->inputs[input].process_track;
  for (uint32_t s = 0; s < trace.slices().size(); ++s) {
    if (trace.str(trace.slice_name(trace.slices()[s])) != name) continue;
    for (int32_t t = static_cast<int32_t>(trace.slices()[s].track); t >= 0; t = trace.tracks()[static_cast<size_t>(t)].parent) {
      if (static_cast<uint32_t>(t) == process) return s;
    }
  }
  return -1;
}

// The input of the merge that is rank `rank`.
size_t InputOfRank(const TraceDocument& doc, int32_t rank) {
  const auto& inputs = doc.rank_merge()->inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].rank == rank) return i;
  }
  return inputs.size();
}

int CountColor(const QImage& image, QRgb color, QRect area) {
  int count = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    for (int x = area.left(); x <= area.right(); ++x) count += (image.pixel(x, y) & 0xffffff) == (color & 0xffffff);
  }
  return count;
}

}  // namespace

class RankPathTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    dir_ = (testing::ScratchDir("viewer_rank_path") / "ranks").string();
    std::filesystem::create_directories(dir_);
    QVERIFY(WriteFileAtomically(dir_ + "/rank0.json", Rank(0, 1000, 0)).ok());
    QVERIFY(WriteFileAtomically(dir_ + "/rank1.json", Rank(1, 3000, kRank1AheadUs)).ok());
  }

  // By default (auto: the best available) the ranks are aligned on their all-reduce, which
  // takes rank 1's 5 s back; the status note and the Stragglers pane say so.
  void AutoAlignsOnTheCollectives() {
    const auto files = trace::ResolveTracePaths({dir_});
    QVERIFY(files.ok());
    std::string note;
    auto doc = OpenMergedDocument(*files, dir_, nullptr, nullptr, &note);
    QVERIFY2(doc.ok(), doc.status().message().c_str());
    const RankMerge* merge = (*doc)->rank_merge();
    QCOMPARE(merge->alignment.method, analysis::AlignMethod::kCollectives);
    QVERIFY2(note.find("clocks aligned by collectives") != std::string::npos, note.c_str());
    // Both ranks' compute start at 100 µs into their step: together once aligned.
    const int64_t compute0 = SliceOnInput(**doc, InputOfRank(**doc, 0), "compute");
    const int64_t compute1 = SliceOnInput(**doc, InputOfRank(**doc, 1), "compute");
    QVERIFY(compute0 >= 0 && compute1 >= 0);
    const auto& slices = (*doc)->trace().slices();
    QVERIFY2(std::llabs(slices[static_cast<size_t>(compute1)].start_ns - slices[static_cast<size_t>(compute0)].start_ns) < 1000,
             qPrintable(QString::number(slices[static_cast<size_t>(compute1)].start_ns - slices[static_cast<size_t>(compute0)].start_ns)));
  }

  // --align clock keeps the clocks as recorded: rank 1 stays 5 s ahead, and the method stated is "clock".
  void ClockKeepsTheRecordedClocks() {
    const auto files = trace::ResolveTracePaths({dir_});
    QVERIFY(files.ok());
    std::string note;
    auto doc = OpenMergedDocument(*files, dir_, nullptr, nullptr, &note, false, analysis::AlignMethod::kClock);
    QVERIFY2(doc.ok(), doc.status().message().c_str());
    QCOMPARE((*doc)->rank_merge()->alignment.method, analysis::AlignMethod::kClock);
    QVERIFY2(note.find("clocks aligned by clock") != std::string::npos, note.c_str());
    const auto& slices = (*doc)->trace().slices();
    const int64_t compute0 = SliceOnInput(**doc, InputOfRank(**doc, 0), "compute");
    const int64_t compute1 = SliceOnInput(**doc, InputOfRank(**doc, 1), "compute");
    QCOMPARE(slices[static_cast<size_t>(compute1)].start_ns - slices[static_cast<size_t>(compute0)].start_ns,
             kRank1AheadUs * 1000);
  }

  // The path runs through rank 1's compute, jumps at the all-reduce, and ends in rank 0's
  // optimizer; the pane lists it first, the timeline outlines both slices and links them, the
  // link reaching the edge when rank 0's end is out of view.
  void PathAcrossRanksIsOutlinedAndLinked() {
    MainWindow window(/*interactive=*/false);
    window.resize(1600, 1000);
    window.show();
    window.Open({QString::fromStdString(dir_)});
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 1);
    DocumentView* view = window.document(0);
    QVERIFY(view->analysed());
    const TraceDocument& doc = view->document();
    const RankMerge* merge = doc.rank_merge();
    QCOMPARE(merge->rank_paths.size(), size_t{1});
    const MergedRankPath& path = merge->rank_paths.front();
    QCOMPARE(path.unmatched, int64_t{0});
    const int64_t compute1 = SliceOnInput(doc, InputOfRank(doc, 1), "compute");
    const int64_t optimizer0 = SliceOnInput(doc, InputOfRank(doc, 0), "optimizer");
    QCOMPARE(path.elements.size(), size_t{2});
    QCOMPARE(static_cast<int64_t>(path.elements[0].slice), compute1);
    QCOMPARE(static_cast<int64_t>(path.elements[1].slice), optimizer0);
    QCOMPARE(path.jumps, std::vector<size_t>{1});
    QCOMPARE(path.length_ns, int64_t{3'720'000});  // rank 1's compute start to rank 0's optimizer end

    view->ShowPane(DocumentView::kCriticalPathPane);
    CriticalPathPane* pane = view->pane<CriticalPathPane>();
    QVERIFY(pane->path_checkbox()->isChecked());
    QCOMPARE(pane->path_window()->currentIndex(), 0);  // the path across ranks first
    QVERIFY2(pane->path_caption().contains("step 1 across 2 ranks") && pane->path_caption().contains("waiting for rank 1 (its op compute"),
             qPrintable(pane->path_caption()));
    TimelineView* timeline = view->timeline();
    QCOMPARE(timeline->path_slices(), (std::vector<uint32_t>{static_cast<uint32_t>(compute1), static_cast<uint32_t>(optimizer0)}));
    QCOMPARE(timeline->path_jumps(), std::vector<size_t>{1});

    // Rank 1's compute in view, rank 0's optimizer beyond the right edge: the link runs from the
    // compute's end to the edge.
    const auto& slices = doc.trace().slices();
    const trace::Slice& compute = slices[static_cast<size_t>(compute1)];
    view->axis()->SetRange(static_cast<double>(compute.start_ns) - 200'000, static_cast<double>(compute.end_ns()) + 100'000);
    QApplication::processEvents();
    const QRect box = timeline->SliceRect(static_cast<uint32_t>(compute1));
    QVERIFY(!box.isEmpty());
    QVERIFY(timeline->SliceRect(static_cast<uint32_t>(optimizer0)).isEmpty());
    QImage image(timeline->size(), QImage::Format_RGB32);
    timeline->render(&image);
    const QRect beyond(box.right() + 3, 0, timeline->width() - box.right() - 3 - kTimeAreaRight, timeline->height());
    QVERIFY2(CountColor(image, TimelineView::kPathColor, beyond) > 10,
             qPrintable(QString::number(CountColor(image, TimelineView::kPathColor, beyond))));
    // Unchecked, neither outline nor link.
    pane->path_checkbox()->setChecked(false);
    QVERIFY(timeline->path_slices().empty() && timeline->path_jumps().empty());
    timeline->render(&image);
    QCOMPARE(CountColor(image, TimelineView::kPathColor, beyond), 0);

    // The Stragglers pane states the alignment as the CLI does.
    QVERIFY2(view->pane<StragglersPane>()->stragglers_caption().contains("clocks aligned by collectives"),
             qPrintable(view->pane<StragglersPane>()->stragglers_caption()));
    // Its tooltip gives each rank's clock as `stepscope align` does: rank 1 moved back 5 s.
    const QString clocks = view->pane<StragglersPane>()->stragglers_clocks();
    QVERIFY2(clocks.contains("rank 0") && clocks.contains("rank 1") && clocks.contains("offset -5.000 s"), qPrintable(clocks));
  }

  // The real gloo job: every step's path is found slice for slice in the merge, each on its
  // rank's process, with the name and duration the analysis gave; a jump wherever the rank changes.
  void RealGlooRanksPathsAreFoundInTheMerge() {
    const std::string dir = testing::DataPath("analysis/gloo_ranks");
    const auto traces = trace::ReadTraces({dir});
    QVERIFY(traces.ok());
    const analysis::CrossRankPaths expected = analysis::ComputeCrossRankPaths(*traces);
    QVERIFY(!expected.steps.empty());
    const auto files = trace::ResolveTracePaths({dir});
    QVERIFY(files.ok());
    std::string note;
    auto doc = OpenMergedDocument(*files, dir, nullptr, nullptr, &note);
    QVERIFY2(doc.ok(), doc.status().message().c_str());
    const RankMerge* merge = (*doc)->rank_merge();
    QCOMPARE(merge->rank_paths.size(), expected.steps.size());
    const trace::Trace& merged = (*doc)->trace();
    size_t jumps = 0;
    for (size_t p = 0; p < expected.steps.size(); ++p) {
      const MergedRankPath& shown = merge->rank_paths[p];
      QCOMPARE(shown.unmatched, int64_t{0});
      size_t k = 0;
      for (const analysis::RankSegment& segment : expected.steps[p].segments) {
        const uint32_t process = merge->inputs[segment.input].process_track;
        for (size_t e = 0; e < segment.path.elements.size(); ++e, ++k) {
          QVERIFY(k < shown.elements.size());
          const trace::Slice& original = (*traces)[segment.input].slices()[segment.path.elements[e].slice];
          const trace::Slice& found = merged.slices()[shown.elements[k].slice];
          QCOMPARE(merged.str(merged.slice_name(found)), (*traces)[segment.input].str((*traces)[segment.input].slice_name(original)));
          QCOMPARE(found.dur_ns, original.dur_ns);
          bool on_rank = false;
          for (int32_t t = static_cast<int32_t>(found.track); t >= 0; t = merged.tracks()[static_cast<size_t>(t)].parent) {
            on_rank |= static_cast<uint32_t>(t) == process;
          }
          QVERIFY(on_rank);
          QCOMPARE(shown.element_rank[k], segment.rank);
        }
      }
      QCOMPARE(k, shown.elements.size());
      QCOMPARE(shown.jumps.size(), expected.steps[p].waits.size());
      jumps += shown.jumps.size();
    }
    qInfo("gloo_ranks: %zu paths, %zu jumps between ranks", expected.steps.size(), jumps);
  }

 private:
  std::string dir_;
};

QTEST_MAIN(RankPathTest)
#include "rank_path_test.moc"
