// The memory pane of a document: one chart per allocator on the shared time axis (each at
// least MemoryChart::kMinHeight tall, scrolling when there are more than fit), and beside them
// the tensors live at the instant last clicked (the peak when the click was near it),
// largest first. Double-clicking a tensor jumps to the op that produced it.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "viewer/load/document.h"
#include "viewer/timeline/time_axis.h"

class QLabel;
class QScrollArea;
class QSplitter;
class QTableView;
class QVBoxLayout;

namespace stepscope::viewer {

class LiveTensorModel;
class MemoryChart;

class MemoryPanel : public QWidget {
  Q_OBJECT

 public:
  MemoryPanel(std::shared_ptr<const TraceDocument> document, TimeAxis* axis, QWidget* parent = nullptr);

  // One chart per allocator timeline; the charts refer into `timelines`, which the panel keeps.
  void SetTimelines(std::shared_ptr<const std::vector<analysis::AllocatorTimeline>> timelines);
  int chart_count() const { return static_cast<int>(charts_.size()); }
  MemoryChart* chart(int i) const { return charts_[static_cast<size_t>(i)]; }
  LiveTensorModel* live_model() const { return live_model_; }
  QString live_caption() const;
  // The area the charts scroll in.
  QScrollArea* charts_area() const { return charts_scroll_; }

 public slots:
  void ShowLiveAt(int chart, int64_t time_ns);

 signals:
  void sliceActivated(uint32_t slice);

 private:
  std::shared_ptr<const TraceDocument> document_;
  std::shared_ptr<const std::vector<analysis::AllocatorTimeline>> timelines_;
  // Into document_'s trace: declared after document_, so built after it and destroyed first.
  analysis::LiveTensorIndex live_tensors_{document_->trace()};
  TimeAxis* axis_;
  QVBoxLayout* charts_layout_;
  QLabel* placeholder_;
  std::vector<MemoryChart*> charts_;
  QLabel* live_caption_;
  LiveTensorModel* live_model_;
  QTableView* live_table_;
  QSplitter* splitter_;
  QScrollArea* charts_scroll_;
};

}  // namespace stepscope::viewer
