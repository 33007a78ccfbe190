// stepscope-view's command line (command_line.h): the flags, the window, and the headless modes
// (screenshot, bench, write-synthetic) with their targets.
#include "viewer/app/command_line.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QRegularExpression>
#include <QTableWidget>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "base/units.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/merge.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"
#include "profiler/testing/synthetic_trace.h"
#include "viewer/app/document_view.h"
#include "viewer/app/formats_text.h"
#include "viewer/app/main_window.h"
#include "viewer/app/theme.h"
#include "viewer/app/session_probe.h"
#include "viewer/compare/compare_view.h"
#include "viewer/load/document.h"
#include "viewer/load/overview.h"
#include "viewer/load/trace_loader.h"
#include "viewer/memory/memory_chart.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/panes/critical_path_pane.h"
#include "viewer/panes/memory_pane.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/counter_tracks.h"

namespace stepscope::viewer {
namespace {

// Targets of the viewer (see docs/viewer.md and docs/performance.md). The first frame: 2 s, and
// past 2 * 10^7 slices 100 ns a slice (the 10 s goal of 10^8 slices): opening reads, builds and
// indexes every slice, so its target grows with them.
constexpr double kFirstFrameTargetMs = 2000;
constexpr double kFirstFrameTargetMsPerSlice = 100e-6;
double FirstFrameTargetMs(size_t slices) {
  return std::max(kFirstFrameTargetMs, kFirstFrameTargetMsPerSlice * static_cast<double>(slices));
}
constexpr double kPreviewFrameTargetMs = 5000;  // a big file's first frame, from its preview
constexpr double kFrameTargetMs = 16;
// Resident memory: 32 bytes a slice above a fixed allowance for what does not grow with the
// trace (the first frames' glyph and paint caches, the analyses' per-trace tables and the panes'
// models: about 18 MB at 10^6 generated slices, 0.2 byte a slice at 10^8).
constexpr double kBytesPerSliceTarget = 32;
constexpr double kFixedResidentBytes = 20e6;

void Print(const QString& text) { std::fprintf(stdout, "%s\n", text.toLocal8Bit().constData()); }
void PrintError(const QString& text) {
  std::fprintf(stderr, "stepscope-view: %s\n", text.toLocal8Bit().constData());
}

double Ms(const QElapsedTimer& timer) { return static_cast<double>(timer.nsecsElapsed()) / 1e6; }

// CPU time of the process (every thread: a frame collects its boxes on two), in ms: a frame's own
// cost on a machine that other work shares, where its wall time also holds the waits for a core.
double ProcessCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// Writes the window as OUT (atomically) and says so: exit code 0, or 1 when it cannot be written.
int SaveScreenshot(MainWindow& window, const QString& out) {
  const QImage image = window.grab().toImage();
  const QString error = SavePngAtomically(image, out);
  if (!error.isEmpty()) {
    PrintError(error);
    return 1;
  }
  Print(QStringLiteral("wrote %1 (%2x%3)").arg(out).arg(image.width()).arg(image.height()));
  return 0;
}

int RunScreenshot(const QStringList& traces, bool merge, bool allow_truncated, const QString& out, QSize size,
                  PaneId pane, analysis::AlignMethod align, const OverviewPolicy& overview) {
  MainWindow window(/*interactive=*/false);
  window.loader()->SetAlign(align);
  window.loader()->SetOverviewPolicy(overview);
  window.resize(size);
  window.show();
  window.SetAllowTruncated(allow_truncated);
  window.Open(traces, merge);
  window.loader()->WaitForIdle();
  if (window.document_count() == 0) {
    for (const QString& error : window.errors()) PrintError(error);
    if (window.errors().isEmpty()) PrintError(traces.join(", ") + ": nothing could be opened");
    return 2;
  }
  DocumentView* document = window.current_document();
  document->ShowPane(pane);
  if (pane == kMemoryPane) {
    // Show what was live at the first allocator's peak, as a click on its marker would.
    MemoryPanel* memory = document->pane<MemoryPane>()->memory_panel();
    if (memory->chart_count() > 0) memory->ShowLiveAt(0, memory->chart(0)->timeline().peak_ns);
  }
  // The critical path fills the timeline, outlined.
  if (pane == kCriticalPathPane) document->pane<CriticalPathPane>()->ZoomToPath();
  if (pane == kStragglersPane) {
    StragglersPane* stragglers = document->pane<StragglersPane>();
    stragglers->ZoomToStragglerStep(stragglers->stragglers_table()->currentRow());
  }
  QApplication::processEvents();
  return SaveScreenshot(window, out);
}

int RunCompareScreenshot(const QStringList& a, const QStringList& b, int64_t step_a, int64_t step_b,
                         const QString& out, QSize size) {
  MainWindow window(/*interactive=*/false);
  window.resize(size);
  window.show();
  window.Compare(a, b, step_a, step_b);
  window.WaitForComparison();
  if (window.comparison_count() == 0) {
    for (const QString& error : window.errors()) PrintError(error);
    if (window.errors().isEmpty()) PrintError("nothing could be compared");
    return 2;
  }
  QApplication::processEvents();
  return SaveScreenshot(window, out);
}

// One timeline frame, drawn as the window would (paintEvent) into an offscreen image.
double RenderFrame(TimelineView* timeline, QImage* image) {
  QElapsedTimer timer;
  timer.start();
  timeline->render(image);
  return Ms(timer);
}

// Opens TRACE for the bench as the window does: a directory (of ranks) merged, a big file's
// preview shown first (its first frame timed from `opening`). Null, having said why, when it
// cannot be read.
std::shared_ptr<const TraceDocument> OpenBenchTrace(MainWindow& window, const QString& trace_path,
                                                    const QElapsedTimer& opening) {
  // A directory (of ranks) is merged, as the window merges it.
  const auto files = trace::ResolveTracePaths({trace_path.toStdString()});
  if (!files.ok()) {
    PrintError(QString::fromStdString(files.status().message()));
    return nullptr;
  }
  // A big file shows a preview of its start first, as the window does.
  if (!QFileInfo(trace_path).isDir() && QFileInfo(trace_path).size() >= TraceLoader::kPreviewFileBytes) {
    auto preview = OpenDocument(trace_path.toStdString(), nullptr, {.preview_bytes = TraceLoader::kPreviewBytes});
    if (preview.ok()) {
      DocumentView* shown = window.AddDocument(*preview);
      QApplication::processEvents();
      QImage frame(shown->timeline()->size(), QImage::Format_RGB32);
      const double paint_ms = RenderFrame(shown->timeline(), &frame);
      Print(QStringLiteral("first frame of the preview (the first %1 MB, %2 slices): %3 ms after opening (paint %4 ms)  "
                           "target <= %5 ms: %6")
                .arg((*preview)->preview_bytes() >> 20)
                .arg((*preview)->trace().slices().size())
                .arg(Ms(opening), 0, 'f', 1)
                .arg(paint_ms, 0, 'f', 1)
                .arg(kPreviewFrameTargetMs, 0, 'f', 0)
                .arg(Ms(opening) <= kPreviewFrameTargetMs ? QStringLiteral("ok") : QStringLiteral("MISSED")));
    }
  }
  std::string merge_note;
  const bool dir = QFileInfo(trace_path).isDir();
  auto opened = dir && WantsOverview(*files, window.loader()->overview_policy())
                    ? OpenOverviewDocument(*files, trace_path.toStdString(), nullptr, nullptr, &merge_note,
                                           window.loader()->align(), window.loader()->overview_policy())
                : dir ? OpenMergedDocument(*files, trace_path.toStdString(), nullptr, nullptr, &merge_note,
                                           /*allow_truncated=*/false, window.loader()->align())
                      : OpenDocument(trace_path.toStdString());
  if (!merge_note.empty()) Print(QString::fromStdString(merge_note));
  if (!opened.ok()) {
    PrintError(QString::fromStdString(opened.status().message()));
    return nullptr;
  }
  return *opened;
}

// The process's peak resident size so far (getrusage), in bytes.
int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// `panes_analysed` false (--no-analyses): only what the timeline draws from the analyses, its counter
// tracks (from the memory timelines), is computed before the frames, so that the frames of a big
// trace are measured without waiting minutes for the panes' analyses; the frames draw the same.
int RunBench(const QString& trace_path, int64_t synthetic_slices, QSize size, int frames, bool log_frames,
             bool panes_analysed, analysis::AlignMethod align, const OverviewPolicy& overview) {
  MainWindow window(/*interactive=*/false);
  window.loader()->SetAlign(align);
  window.loader()->SetOverviewPolicy(overview);
  window.resize(size);
  window.show();
  QApplication::processEvents();
  ReleaseFreeMemory();
  const int64_t rss_before = ResidentBytes();

  QElapsedTimer opening;
  opening.start();
  std::shared_ptr<const TraceDocument> document;
  if (synthetic_slices > 0) {
    // With an allocator counter, so that a memory track is drawn too.
    document = std::make_shared<TraceDocument>(
        synthetic::MakeSyntheticTrace(synthetic_slices, 1, /*allocator=*/true),
        "synthetic:" + std::to_string(synthetic_slices));
  } else {
    document = OpenBenchTrace(window, trace_path, opening);
    if (document == nullptr) return 2;
  }
  const double load_ms = Ms(opening);
  DocumentView* view = window.AddDocument(document);
  QApplication::processEvents();
  TimelineView* timeline = view->timeline();
  QImage image(timeline->size(), QImage::Format_RGB32);
  const double first_paint_ms = RenderFrame(timeline, &image);
  const double first_frame_ms = Ms(opening);
  const double first_frame_cpu_s = CpuSeconds();
  const int64_t peak_first_frame = PeakResidentBytes();
  ReleaseFreeMemory();
  const int64_t rss_timeline = ResidentBytes();

  // Said now, before the analyses (minutes at 10^8 slices): the first frame's figures do not wait.
  const trace::Trace& trace = document->trace();
  auto verdict = [](bool ok) { return ok ? QStringLiteral("ok") : QStringLiteral("MISSED"); };
  Print(QStringLiteral("trace: %1 (%2 slices, %3 tracks, %4 flows)")
            .arg(QString::fromStdString(document->path()))
            .arg(trace.slices().size())
            .arg(trace.tracks().size())
            .arg(trace.flows().size()));
  Print(QStringLiteral("load: %1 ms (read + build + index%2)")
            .arg(load_ms, 0, 'f', 1)
            .arg(synthetic_slices > 0 ? QStringLiteral(", generated in memory") : QString()));
  Print(QStringLiteral("first frame: %1 ms after opening (paint %2 ms)  target <= %3 ms: %4")
            .arg(first_frame_ms, 0, 'f', 1)
            .arg(first_paint_ms, 0, 'f', 1)
            .arg(FirstFrameTargetMs(trace.slices().size()), 0, 'f', 0)
            .arg(verdict(first_frame_ms <= FirstFrameTargetMs(trace.slices().size()))));
  Print(QStringLiteral("peak resident at the first frame: %1 MB (process CPU time %2 s)")
            .arg(static_cast<double>(peak_first_frame) / 1e6, 0, 'f', 1)
            .arg(first_frame_cpu_s, 0, 'f', 2));
  std::fflush(stdout);

  QElapsedTimer analysing;
  analysing.start();
  std::shared_ptr<const CounterTracks> counter_tracks;
  if (panes_analysed) {
    view->SetAnalysis(AnalyseDocument(*document));
    counter_tracks = view->analysis()->counter_tracks;
  } else {
    counter_tracks = std::make_shared<const CounterTracks>(
        BuildCounterTracks(document->trace(), analysis::ComputeMemoryTimelines(document->trace())));
    timeline->SetCounterTracks(counter_tracks);
  }
  const double analysis_ms = Ms(analysing);
  QApplication::processEvents();
  ReleaseFreeMemory();
  const int64_t rss_analysed = ResidentBytes();

  // A fixed sequence: zoom in at the middle, pan across, zoom out at the left, then jump deep.
  TimeAxis* axis = view->axis();
  const double width = timeline->mapping().width_px();
  std::vector<double> frame_ms, frame_cpu_ms;
  std::vector<QString> over_target;  // the frames past kFrameTargetMs, to say which
  for (int i = 0; i < frames; ++i) {
    const int phase = i % 40;
    if (phase == 0) {
      axis->FitAll();
    } else if (phase < 12) {
      timeline->ZoomAtPx(width / 2, 1.6);
    } else if (phase < 22) {
      timeline->PanPx(width * 0.3);
    } else if (phase < 32) {
      timeline->ZoomAtPx(width * 0.1, 1 / 1.6);
    } else {
      timeline->PanPx(-width * 0.5);
    }
    const double cpu_before = ProcessCpuMs();
    frame_ms.push_back(RenderFrame(timeline, &image));
    frame_cpu_ms.push_back(ProcessCpuMs() - cpu_before);
    const QString frame = QStringLiteral("frame %1: view %2, %3 ms (%4 ms CPU)")
                              .arg(i)
                              .arg(QString::fromStdString(FormatDurationSignificant(axis->end_ns() - axis->begin_ns())))
                              .arg(frame_ms.back(), 0, 'f', 2)
                              .arg(frame_cpu_ms.back(), 0, 'f', 2);
    if (log_frames) Print(frame);
    if (frame_ms.back() > kFrameTargetMs) over_target.push_back(frame);
  }
  // A selection's flows are found by a scan of the flow table (TraceDocument::FlowsFrom).
  const auto& flows = document->trace().flows();
  QElapsedTimer scanning;
  scanning.start();
  const size_t selected_flows = flows.empty() ? 0 : document->FlowsFrom(flows[flows.size() / 2].from_slice).size();
  const double flows_ms = Ms(scanning);
  std::vector<double> sorted = frame_ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  const double worst = sorted.empty() ? 0 : sorted.back();
  std::sort(frame_cpu_ms.begin(), frame_cpu_ms.end());
  const double median_cpu = frame_cpu_ms.empty() ? 0 : frame_cpu_ms[frame_cpu_ms.size() / 2];
  const double worst_cpu = frame_cpu_ms.empty() ? 0 : frame_cpu_ms.back();

  const double slices = static_cast<double>(std::max<size_t>(1, trace.slices().size()));
  const double per_slice_timeline = static_cast<double>(rss_timeline - rss_before) / slices;
  const double per_slice_all = static_cast<double>(rss_analysed - rss_before) / slices;
  if (const Overview* summary = document->overview(); summary != nullptr) {
    Print(QStringLiteral("overview: %1 ranks read (%2 at once, %3 not read), summaries %4 KB (%5 bytes/rank), a merge "
                         "would take about %6 MB against a budget of %7 MB")
              .arg(summary->ranks.size())
              .arg(summary->threads)
              .arg(summary->unread.size())
              .arg(static_cast<double>(summary->summary_bytes()) / 1e3, 0, 'f', 1)
              .arg(summary->summary_bytes() / std::max<size_t>(1, summary->ranks.size()))
              .arg(summary->estimated_merge_bytes >> 20)
              .arg(summary->budget_bytes >> 20));
  }
  Print(QStringLiteral("analysis: %1 ms (%2, after the first frame)")
            .arg(analysis_ms, 0, 'f', 1)
            .arg(panes_analysed ? QStringLiteral("every pane's analyses")
                                : QStringLiteral("--no-analyses: the counter tracks only")));
  Print(QStringLiteral("frames: %1 at %2x%3, median %4 ms, max %5 ms  target <= %6 ms: %7")
            .arg(frame_ms.size())
            .arg(timeline->width())
            .arg(timeline->height())
            .arg(median, 0, 'f', 2)
            .arg(worst, 0, 'f', 2)
            .arg(kFrameTargetMs, 0, 'f', 0)
            .arg(verdict(worst <= kFrameTargetMs)));
  Print(QStringLiteral("frames' CPU time: median %1 ms, max %2 ms")
            .arg(median_cpu, 0, 'f', 2)
            .arg(worst_cpu, 0, 'f', 2));
  for (const QString& frame : over_target) Print(QStringLiteral("  over the target: ") + frame);
  Print(QStringLiteral("timeline index and colours: %1 MB (%2 bytes/slice)")
            .arg(static_cast<double>(document->extra_bytes()) / 1e6, 0, 'f', 1)
            .arg(static_cast<double>(document->extra_bytes()) / slices, 0, 'f', 1));
  const size_t counter_bytes = counter_tracks ? counter_tracks->bytes() : 0;
  Print(QStringLiteral("counter tracks: %1 MB (%2 bytes/slice)")
            .arg(static_cast<double>(counter_bytes) / 1e6, 0, 'f', 1)
            .arg(static_cast<double>(counter_bytes) / slices, 0, 'f', 2));
  Print(QStringLiteral("a selection's flows: %1 ms (%2 of %3 flows, found by a scan)")
            .arg(flows_ms, 0, 'f', 2)
            .arg(selected_flows)
            .arg(flows.size()));
  // Below this many slices the window's own fixed costs (fonts, glyph caches)
  // dominate and a per-slice figure says nothing.
  constexpr size_t kMinSlicesForPerSlice = 100'000;
  Print(QStringLiteral("resident: +%1 MB with the timeline (%2 bytes/slice), +%3 MB with the %4 "
                       "(%5 bytes/slice)  target <= %6 bytes/slice + %7 MB: %8")
            .arg(static_cast<double>(rss_timeline - rss_before) / 1e6, 0, 'f', 1)
            .arg(per_slice_timeline, 0, 'f', 1)
            .arg(static_cast<double>(rss_analysed - rss_before) / 1e6, 0, 'f', 1)
            .arg(panes_analysed ? QStringLiteral("analyses") : QStringLiteral("counter tracks"))
            .arg(per_slice_all, 0, 'f', 1)
            .arg(kBytesPerSliceTarget, 0, 'f', 0)
            .arg(kFixedResidentBytes / 1e6, 0, 'f', 0)
            .arg(trace.slices().size() < kMinSlicesForPerSlice
                     ? QStringLiteral("n/a below %1 slices").arg(kMinSlicesForPerSlice)
                     : verdict(static_cast<double>(rss_analysed - rss_before) <=
                               kBytesPerSliceTarget * slices + kFixedResidentBytes)));
  return 0;
}

// --synthetic N --write-synthetic OUT: the generated trace written to a file.
int WriteSynthetic(const QString& count, const QString& out_path) {
  bool ok = false;
  const int64_t slices = count.toLongLong(&ok);
  const std::string out = out_path.toStdString();
  const auto format = trace::OutputFormatFromPath(out);
  if (!ok || slices < 1 || !format) {
    PrintError("--write-synthetic OUT needs --synthetic N and OUT ending in .pb, .pbtxt, .json or .pftrace (.gz too)");
    return 2;
  }
  const Status status = trace::WriteTrace(synthetic::MakeSyntheticTrace(slices), out, *format);
  if (!status.ok()) {
    PrintError(QString::fromStdString(status.message()));
    return ExitCodeFor(status);
  }
  Print(QStringLiteral("wrote %1 (%2 slices)").arg(QString::fromStdString(out)).arg(slices));
  return 0;
}

// --bench TRACE | --bench --synthetic N: the flags checked, then RunBench.
int RunBenchFlags(const QStringList& traces, bool synthetic_set, const QString& synthetic, const QString& frames,
                  QSize size, bool log_frames, bool panes_analysed, analysis::AlignMethod align,
                  const OverviewPolicy& overview) {
  bool ok = true;
  const int frame_count = frames.toInt(&ok);
  if (!ok || frame_count < 1) {
    PrintError("--frames wants a positive number");
    return 2;
  }
  int64_t slices = 0;
  if (synthetic_set) {
    slices = synthetic.toLongLong(&ok);
    if (!ok || slices < 1 || slices > 200'000'000) {
      PrintError("--synthetic wants a number of slices between 1 and 200000000");
      return 2;
    }
  } else if (traces.size() != 1) {
    PrintError("--bench takes one TRACE, or --synthetic N");
    return 2;
  }
  return RunBench(slices > 0 ? QString() : traces.front(), slices, size, frame_count, log_frames, panes_analysed, align,
                  overview);
}

// The --pane names, in tab order.
QStringList PaneNames() {
  QStringList names;
  for (const PaneSpec& pane : PaneTable()) names << QString::fromLatin1(pane.name);
  return names;
}

// The offscreen platform reports what it cannot do (window size hints); in headless modes that
// is expected and would only bury the output.
void QuietOffscreenNotes(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (message.contains(QLatin1String("propagateSizeHints")) || message.contains(QLatin1String("XDG_RUNTIME_DIR"))) {
    return;
  }
  std::fprintf(stderr, "%s\n", message.toLocal8Bit().constData());
  if (type == QtFatalMsg) std::abort();
}

QCommandLineOption AlignOption() {
  return QCommandLineOption(
      "align", "How the clocks of merged ranks are aligned: collectives (their matched collectives' ends), barrier "
               "(the trainer's clock sync point), clock (as recorded), auto (default: the best available; the status "
               "bar and the Stragglers pane say which).",
      "METHOD", "auto");
}

// The method --align names, or none once it has said what is wrong.
std::optional<analysis::AlignMethod> AlignOf(const QCommandLineParser& parser, const QCommandLineOption& option) {
  const std::optional<analysis::AlignMethod> align = analysis::ParseAlignMethod(parser.value(option).toStdString());
  if (!align) PrintError("--align wants collectives, barrier, clock or auto, not '" + parser.value(option) + "'");
  return align;
}

}  // namespace

int RunViewer(int argc, char** argv) {
  // Parsed before any QApplication exists: a usage error or --help needs no display.
  QCommandLineParser parser;
  // The formats as the reader table has them (`stepscope formats` describes each).
  const QString formats = FormatsHelpLines();
  parser.setApplicationDescription("Timelines, memory charts, op statistics and search for stepscope traces, the format "
                                   "told from the content (a directory: its traces, or a profiler run as one):" + formats);
  parser.addHelpOption();
  const QCommandLineOption screenshot("screenshot", "Render the window offscreen to OUT.png and exit.", "OUT.png");
  const QCommandLineOption size_option("size", "Window size for --screenshot and --bench (default 1600x1000).",
                                       "WxH", "1600x1000");
  const QCommandLineOption bench("bench", "Time loading, the first frame and a fixed zoom/pan sequence.");
  const QCommandLineOption synthetic("synthetic", "With --bench: a generated trace of N slices instead of a file.", "N");
  const QCommandLineOption frames("frames", "With --bench: frames to render (default 200).", "N", "200");
  const QCommandLineOption write_synthetic(
      "write-synthetic", "With --synthetic N: write the generated trace to OUT (.pb, .pbtxt, .json, .pftrace; .gz too) and exit.",
      "OUT");
  const QCommandLineOption frame_log("frame-log", "With --bench: print the time of every frame.");
  const QCommandLineOption no_analyses(
      "no-analyses", "With --bench: skip the panes' analyses (minutes at 10^8 slices); the frames still draw the "
                     "counter tracks. The analyses' time is measured without it.");
  const QCommandLineOption merge("merge", "Merge all TRACEs into one timeline (a directory is always merged).");
  const QCommandLineOption step_option(
      "step", "With --vs: the step each side's timeline shows, by number: N, or A,B (default: each side's first).",
      "N[,N]");
  const QCommandLineOption allow_truncated(
      "allow-truncated", "Open a trace file cut short with what it holds (the title and a banner say TRUNCATED) instead of failing.");
  const QCommandLineOption align_option = AlignOption();
  const QCommandLineOption overview_option(
      "overview", "Open a directory of ranks as its overview (each rank summarised, one at a time; File > Open Ranks "
                  "in Detail reads ranks in full) even when merging it would fit the memory budget.");
  const QCommandLineOption no_overview_option(
      "no-overview", "Merge a directory of ranks in memory even when that exceeds the memory budget.");
  const QCommandLineOption budget_option(
      "memory-budget", "The memory a merge may take before a directory opens as its overview, in MB (default: a "
                       "quarter of physical memory).", "MB");
  const QCommandLineOption reset_layout(
      "reset-layout", "Open the window at its default size with every pane docked where it starts, forgetting the "
                      "layout saved when the window last closed.");
  const QStringList pane_names = PaneNames();
  const QString default_pane = QString::fromLatin1(PaneSpecOf(kDefaultPane).name);
  const QCommandLineOption pane("pane",
                                "With --screenshot: the pane below the timeline: " +
                                    pane_names.mid(0, pane_names.size() - 1).join(", ") + " or " + pane_names.last() +
                                    " (default " + default_pane + ").",
                                "NAME", default_pane);
  parser.addOptions({screenshot, size_option, bench, synthetic, write_synthetic, frames, frame_log, no_analyses, merge, pane, step_option, allow_truncated, reset_layout, align_option, overview_option, no_overview_option, budget_option});
  parser.addPositionalArgument("traces", "Trace files or directories of traces to open.", "[TRACE...]");
  parser.addPositionalArgument("--vs", "Compare: TRACE... --vs TRACE... shows the runs before and after --vs one above the "
                                       "other with the diff of `stepscope diff A... --vs B...`.", "[--vs TRACE...]");
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
  // `--vs` splits the positional arguments into the two sides of a comparison; the options may
  // stand on either side of it.
  const qsizetype vs_at = arguments.indexOf(QStringLiteral("--vs"));
  qsizetype side_a_count = -1;
  if (vs_at > 0) {
    QCommandLineParser before;
    before.addOptions({screenshot, size_option, bench, synthetic, write_synthetic, frames, frame_log, no_analyses, merge, pane, step_option, allow_truncated, reset_layout, align_option, overview_option, no_overview_option, budget_option});
    before.addHelpOption();
    if (before.parse(arguments.mid(0, vs_at))) side_a_count = before.positionalArguments().size();
    arguments.removeAt(vs_at);
    if (arguments.indexOf(QStringLiteral("--vs")) >= 0) {
      PrintError("--vs is given more than once");
      return 2;
    }
  }
  if (!parser.parse(arguments)) {
    PrintError(parser.errorText());
    return 2;
  }
  if (parser.isSet("help")) {
    // No application object exists yet, so Qt cannot name the executable itself.
    Print(parser.helpText().replace(QLatin1String("<executable_name>"), QLatin1String("stepscope-view")));
    return 0;
  }
  const QStringList traces = parser.positionalArguments();
  const auto size_match = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(size_option));
  if (!size_match.hasMatch()) {
    PrintError("--size wants WIDTHxHEIGHT, e.g. 1600x1000, not '" + parser.value(size_option) + "'");
    return 2;
  }
  const std::optional<analysis::AlignMethod> align = AlignOf(parser, align_option);
  if (!align) return 2;
  OverviewPolicy overview;
  if (parser.isSet(overview_option) && parser.isSet(no_overview_option)) {
    PrintError("--overview and --no-overview exclude each other");
    return 2;
  }
  if (parser.isSet(overview_option)) overview.mode = OverviewPolicy::Mode::kAlways;
  if (parser.isSet(no_overview_option)) overview.mode = OverviewPolicy::Mode::kNever;
  if (parser.isSet(budget_option)) {
    bool budget_ok = false;
    const int64_t mb = parser.value(budget_option).toLongLong(&budget_ok);
    if (!budget_ok || mb < 1) {
      PrintError("--memory-budget wants a positive number of MB, not '" + parser.value(budget_option) + "'");
      return 2;
    }
    overview.budget_bytes = mb << 20;
  }
  const QSize size(std::clamp(size_match.captured(1).toInt(), 400, 8000),
                   std::clamp(size_match.captured(2).toInt(), 300, 8000));

  QStringList side_b;
  QStringList traces_given = parser.positionalArguments();
  int64_t step_a = -1, step_b = -1;
  if (vs_at > 0) {
    side_b = traces_given.mid(std::max<qsizetype>(side_a_count, 0));
    traces_given = traces_given.mid(0, std::max<qsizetype>(side_a_count, 0));
    if (traces_given.isEmpty() || side_b.isEmpty()) {
      PrintError(traces_given.isEmpty() ? "--vs needs traces before it (side A)" : "--vs needs traces after it (side B)");
      return 2;
    }
    if (parser.isSet(bench) || parser.isSet(write_synthetic) || parser.isSet(merge)) {
      PrintError("--vs compares two runs; it does not go with --bench, --write-synthetic or --merge");
      return 2;
    }
  }
  if (parser.isSet(step_option)) {
    const auto match = QRegularExpression("^(\\d+)(?:,(\\d+))?$").match(parser.value(step_option));
    if (!match.hasMatch() || vs_at <= 0) {
      PrintError("--step wants N or A,B (step numbers) and goes with --vs, not '" + parser.value(step_option) + "'");
      return 2;
    }
    step_a = match.captured(1).toLongLong();
    step_b = match.captured(2).isEmpty() ? step_a : match.captured(2).toLongLong();
  }
  if (parser.isSet(screenshot) || parser.isSet(bench) || parser.isSet(write_synthetic)) {
    if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    qInstallMessageHandler(QuietOffscreenNotes);
  } else if (std::getenv("QT_QPA_PLATFORM") == nullptr && std::getenv("DISPLAY") == nullptr &&
             std::getenv("WAYLAND_DISPLAY") == nullptr) {
    PrintError("no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset); use "
               "--screenshot or --bench, which run offscreen, or set QT_QPA_PLATFORM");
    return 1;
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("stepscope");
  QApplication::setApplicationName("stepscope-view");

  if (parser.isSet(write_synthetic)) return WriteSynthetic(parser.value(synthetic), parser.value(write_synthetic));
  if (!side_b.isEmpty() && parser.isSet(screenshot)) {
    return RunCompareScreenshot(traces_given, side_b, step_a, step_b, parser.value(screenshot), size);
  }
  if (parser.isSet(screenshot)) {
    if (traces.isEmpty()) {
      PrintError("--screenshot needs a TRACE");
      return 2;
    }
    const PaneSpec* shown = FindPane(parser.value(pane).toStdString());
    if (shown == nullptr) {
      PrintError("--pane wants one of " + pane_names.join(", ") + ", not '" + parser.value(pane) + "'");
      return 2;
    }
    return RunScreenshot(traces, parser.isSet(merge), parser.isSet(allow_truncated), parser.value(screenshot), size, shown->id, *align,
                         overview);
  }
  if (parser.isSet(bench)) {
    return RunBenchFlags(traces, parser.isSet(synthetic), parser.value(synthetic), parser.value(frames), size,
                         parser.isSet(frame_log), !parser.isSet(no_analyses), *align, overview);
  }

  // Only the interactive window remembers its layout; headless modes draw the defaults.
  if (parser.isSet(reset_layout)) MainWindow::ForgetSavedLayout();
  ApplyTheme(SavedTheme(), /*save=*/false);  // the headless modes keep the default palette
  MainWindow window;
  window.SetRememberLayout(true);
  window.SetAllowTruncated(parser.isSet(allow_truncated));
  window.loader()->SetAlign(*align);
  window.loader()->SetOverviewPolicy(overview);
  InstallSessionProbe(window);  // STEPSCOPE_VIEW_PROBE only: the scripted session's test hook
  window.show();
  if (!side_b.isEmpty()) {
    window.Compare(traces_given, side_b, step_a, step_b);
  } else {
    window.Open(traces, parser.isSet(merge));
  }
  return QApplication::exec();
}

}  // namespace stepscope::viewer
