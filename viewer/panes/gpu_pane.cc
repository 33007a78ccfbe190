// The GPU pane (gpu_pane.h): analysis::ComputeGpuBreakdown, ComputeIdle and ComputeLaunches laid
// out in GpuBars, LaunchDelayChart and a table. The figures are the analyses' own.
#include "viewer/panes/gpu_pane.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "viewer/load/document.h"
#include "viewer/panes/document_analysis.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/gpu_bars.h"
#include "viewer/panes/launch_delay_chart.h"
#include "viewer/panes/pane_widgets.h"

namespace stepscope::viewer {
namespace {

QString GpuLabel(int32_t rank, const std::string& device) {
  const QString name = QString::fromStdString(device);
  return rank >= 0 ? QStringLiteral("rank %1 / %2").arg(rank).arg(name) : name;
}

}  // namespace

GpuPane::GpuPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  // In a scroll area without scroll bars: on a small window bars, the delay chart and the table
  // keep their heights and the table is cut at the bottom (never drawn over each other); no
  // vertical bar narrows the delay chart, so its time axis stays under the timeline's.
  auto* scroll = new QScrollArea(host.panes());
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidgetResizable(true);
  scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* pane = new QWidget(scroll);
  launches_caption_ = new QLabel(tr("The GPU breakdown is computed after loading"), pane);
  launches_caption_->setWordWrap(true);
  launches_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* without_idle = new QCheckBox(tr("Bars without idle (share of busy)"), pane);
  gpu_bars_ = new GpuBars(pane);
  launch_delay_chart_ = new LaunchDelayChart(host.axis(), pane);
  gpu_table_ = MakeTable({tr("GPU / stream"), tr("Work"), tr("Span"), tr("Busy"), tr("Idle"), tr("Compute"),
                          tr("Communication"), tr("Memory"), tr("Compute ∩ comm"), tr("Idle: host wait"),
                          tr("Idle: kernel wait"), tr("Idle: other")},
                         pane);
  new EmptyHint(gpu_table_, tr("The GPU breakdown is computed after loading."));
  // What each figure is, where it could be misread as a sum over streams.
  const std::pair<int, QString> tips[] = {
      {kGpuSpan, tr("First start to last end of the work")},
      {kGpuBusy, tr("Time at least one piece of work runs (a GPU's row: on any of its streams)")},
      {kGpuIdle, tr("Span - busy: a GPU's row, the time none of its streams runs work")},
      {kGpuHostWait, tr("Idle gaps whose next work's launch call ended after the gap began. A GPU's row: "
                        "its own idle time (no stream busy), not its streams' waits summed")},
      {kGpuKernelWait, tr("Idle gaps whose next work was already launched (queued). A GPU's row: its own idle time")},
      {kGpuOtherIdle, tr("Idle gaps whose next work has no known launch. A GPU's row: its own idle time")}};
  for (const auto& [column, tip] : tips) gpu_table_->horizontalHeaderItem(column)->setToolTip(tip);
  connect(without_idle, &QCheckBox::toggled, gpu_bars_, &GpuBars::SetWithoutIdle);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 0, 4, 0);
  bar->addWidget(launches_caption_, 1);
  bar->addWidget(without_idle);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 4, 0, 4);  // no side margins: the delay chart lines up with the timeline
  layout->addLayout(bar);
  layout->addWidget(gpu_bars_);
  layout->addWidget(launch_delay_chart_);
  layout->addWidget(gpu_table_, 1);
  gpu_table_->setMinimumHeight(110);
  scroll->setWidget(pane);
  set_widget(scroll);
}

void GpuPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  const std::vector<analysis::GpuInput> inputs = {{&document.trace(), {}}};
  into.gpu = analysis::ComputeGpuBreakdown(inputs);
  // The reports are copied before the originals go: the copies land in memory the
  // analyses freed, not on top of it, so that memory goes back to the system
  // (retaining the originals kept 100 bytes per slice of a 10^6-slice trace).
  {
    const analysis::IdleReport idle = analysis::ComputeIdle(inputs);
    into.idle = idle;
  }
  {
    // The pane shows the statistics, the outliers and each launch's delay (16 bytes a
    // launch), not every launch's record (a big trace has millions) nor the rows per
    // op and kernel (a 10^7-slice trace's held 100 MB).
    analysis::LaunchReport launches =
        analysis::ComputeLaunches(inputs, {.keep_delays = true, .by_op = false});
    into.launch_delays.reserve(launches.delays.size());
    for (const auto& d : launches.delays) into.launch_delays.push_back({d.gpu_start_ns, d.delay_ns});
    std::stable_sort(into.launch_delays.begin(), into.launch_delays.end(),
                     [](const LaunchDelayPoint& a, const LaunchDelayPoint& b) { return a.time_ns < b.time_ns; });
    std::vector<analysis::LaunchReport::Delay>().swap(launches.delays);
    into.launches = launches;
  }
}

void GpuPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  analysis_ = result;
  const DocumentAnalysis& a = *analysis_;
  std::vector<GpuBars::Row> bars;
  gpu_table_->setRowCount(0);
  if (EmptyHint* hint = EmptyHintOf(gpu_table_)) {
    hint->SetText(tr("No GPU work in this trace: kernels, copies and memsets on GPU streams would be broken down here."));
  }
  auto add_row = [this](const QString& label, bool gpu, const analysis::GpuTime& t, const int64_t idle_ns[3]) {
    const int row = gpu_table_->rowCount();
    gpu_table_->insertRow(row);
    auto* name = new QTableWidgetItem(label);
    if (gpu) {
      QFont font = name->font();
      font.setBold(true);
      name->setFont(font);
    }
    gpu_table_->setItem(row, kGpuName, name);
    gpu_table_->setItem(row, kGpuWork, CountItem(t.slices));
    const int64_t values[] = {t.span_ns,   t.busy_ns,          t.idle_ns,  t.compute_ns,
                              t.communication_ns, t.memory_ns, t.compute_communication_overlap_ns};
    for (int i = 0; i < 7; ++i) gpu_table_->setItem(row, kGpuSpan + i, DurationItem(values[i]));
    for (int i = 0; i < 3; ++i) gpu_table_->setItem(row, kGpuHostWait + i, DurationItem(idle_ns[i]));
  };
  for (const analysis::GpuBreakdown& g : a.gpu) {
    // Idle causes of a stream (ComputeIdle lists them per rank, device and stream).
    auto idle_of = [&](const std::string& stream, int64_t out[3]) {
      for (const analysis::StreamIdle& s : a.idle.streams) {
        if (s.rank != g.rank || s.device != g.device || s.stream != stream) continue;
        for (int c = 0; c < 3; ++c) out[c] += s.by_cause[c].total_ns;
      }
    };
    // The GPU's own: time no stream of it runs work, never its streams' waits summed (streams
    // wait at the same time: the sum can be several spans).
    int64_t gpu_idle[3] = {0, 0, 0};
    for (const analysis::GpuIdle& gi : a.idle.gpus) {
      if (gi.rank != g.rank || gi.device != g.device) continue;
      for (int c = 0; c < 3; ++c) gpu_idle[c] += gi.by_cause[c].total_ns;
    }
    const QString label = GpuLabel(g.rank, g.device);
    add_row(label, true, g.time, gpu_idle);
    bars.push_back({label, true, g.time});
    for (const analysis::GpuStreamTime& s : g.streams) {
      int64_t stream_idle[3] = {0, 0, 0};
      idle_of(s.stream, stream_idle);
      const QString stream = QString::fromStdString(s.stream);
      add_row(QStringLiteral("    ") + stream, false, s.time, stream_idle);
      bars.push_back({QStringLiteral("    ") + stream, false, s.time});
    }
  }
  gpu_table_->resizeColumnsToContents();
  gpu_bars_->SetRows(std::move(bars));
  launch_delay_chart_->SetPoints(&a.launch_delays);
  launch_delay_chart_->setVisible(!a.launch_delays.empty());
  gpu_bars_->setFixedHeight(gpu_bars_->sizeHint().height());

  const analysis::LaunchReport& l = a.launches;
  if (a.gpu.empty()) {
    launches_caption_->setText(tr("No GPU work in this trace (kernels, copies, memsets on GPU streams)."));
    return;
  }
  // Each GPU's idle time (no stream busy) by cause, summed over the GPUs.
  analysis::IntervalStats causes[3];
  for (const analysis::GpuIdle& gi : a.idle.gpus) {
    for (int c = 0; c < 3; ++c) {
      causes[c].total_ns += gi.by_cause[c].total_ns;
      causes[c].count += gi.by_cause[c].count;
    }
  }
  launches_caption_->setText(
      tr("<b>GPU idle</b> (no stream of the GPU busy) by the work after each gap: host wait %1 (%2), "
         "kernel wait %3 (%4), other %5 (%6)%19.<br>"
         "<b>Launches</b>: %7 of %8 pieces of work linked to their runtime call; launch delay p50 %9, p95 %10, "
         "max %11; runtime call p50 %12, p95 %13, max %14; %15 calls over %16, %17 delays over %18.")
          .arg(DurationText(causes[0].total_ns)).arg(causes[0].count)
          .arg(DurationText(causes[1].total_ns)).arg(causes[1].count)
          .arg(DurationText(causes[2].total_ns)).arg(causes[2].count)
          .arg(l.work - l.unlinked).arg(l.work)
          .arg(DurationText(l.delay.p50_ns), DurationText(l.delay.p95_ns), DurationText(l.delay.max_ns), DurationText(l.cpu.p50_ns),
               DurationText(l.cpu.p95_ns), DurationText(l.cpu.max_ns))
          .arg(l.long_runtime_count)
          .arg(DurationText(l.runtime_cutoff_ns))
          .arg(l.long_delay_count)
          .arg(DurationText(l.delay_cutoff_ns))
          .arg(a.idle.gpus.size() > 1 ? tr(", summed over %1 GPUs").arg(a.idle.gpus.size()) : QString()));
}

QString GpuPane::launches_caption() const { return launches_caption_->text(); }

}  // namespace stepscope::viewer
