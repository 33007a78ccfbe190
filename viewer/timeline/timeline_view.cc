// The timeline widget (timeline_view.h): input, layout of rows, and frames drawn from the
// document's frozen index.
#include "base/display_names.h"
#include "base/units.h"
#include "viewer/timeline/elide_text.h"
#include "viewer/timeline/timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <algorithm>
#include <iterator>
#include <cmath>
#include <future>

#include "viewer/timeline/flow_painter.h"
#include "viewer/timeline/help_overlay.h"
#include "viewer/timeline/timeline_colors.h"
#include "viewer/timeline/marker_painter.h"

namespace stepscope::viewer {
namespace {

constexpr double kZoomStep = 1.25;    // per W/S press
constexpr double kPanStep = 0.1;      // of the width per A/D press
constexpr int kIndentPx = 12;
const QColor kFoldedColor(0x9a, 0xa0, 0xb0);
const QColor kActivityColor(0x7d, 0x8f, 0xb3);  // a collapsed subtree's work
const QColor kDataflowColor(0x1f, 0x4e, 0xa8);
const QColor kLaunchColor(0xc0, 0x5a, 0x00);
const QColor kRangeFill(0x46, 0x82, 0xdc, 0x38);
const QColor kRangeEdge(0x46, 0x82, 0xdc);
const QColor kMultiSelected(0xe0, 0x6c, 0x00);  // Ctrl+clicked slices

}  // namespace

TimelineView::TimelineView(std::shared_ptr<const TraceDocument> document, TimeAxis* axis, QWidget* parent)
    : QWidget(parent), document_(std::move(document)), axis_(axis),
      layout_(document_->trace(), document_->index()), scroll_bar_(new QScrollBar(Qt::Vertical, this)) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(kTimeAreaLeft + 200, kRulerHeight + 4 * kRowHeight);
  label_font_ = font();
  label_font_.setPointSizeF(8);
  connect(axis_, &TimeAxis::changed, this, qOverload<>(&QWidget::update));
  connect(scroll_bar_, &QScrollBar::valueChanged, this, [this](int value) {
    scroll_y_ = value;
    update();
  });
  UpdateScrollBar();
}

TimelineView::~TimelineView() = default;

double TimelineView::time_width() const {
  return std::max(1, width() - kTimeAreaLeft - kTimeAreaRight);
}

TimeMapping TimelineView::mapping() const { return axis_->MappingFor(time_width()); }

int TimelineView::RowAt(int y) const {
  if (y < kRulerHeight) return -1;
  const int pinned_bottom = kRulerHeight + layout_.pinned_row_count() * kRowHeight;
  const int row = (y - kRulerHeight + (y < pinned_bottom ? 0 : scroll_y_)) / kRowHeight;
  return row < row_count() ? row : -1;
}

void TimelineView::UpdateScrollBar() {
  const int content = row_count() * kRowHeight;
  const int visible = std::max(0, height() - kRulerHeight);
  scroll_bar_->setGeometry(width() - kTimeAreaRight, kRulerHeight, kTimeAreaRight, visible);
  scroll_bar_->setRange(0, std::max(0, content - visible));
  scroll_bar_->setPageStep(visible);
  scroll_bar_->setSingleStep(kRowHeight);
  scroll_y_ = scroll_bar_->value();
}

void TimelineView::ScrollTo(int y) { scroll_bar_->setValue(y); }

void TimelineView::EnsureRowVisible(int row) {
  const int pinned = layout_.pinned_row_count();
  if (row < pinned) return;
  const int top = (row - pinned) * kRowHeight;
  const int visible = height() - kRulerHeight - pinned * kRowHeight;
  if (top < scroll_y_) {
    ScrollTo(top);
  } else if (top + kRowHeight > scroll_y_ + visible) {
    ScrollTo(top + kRowHeight - visible + kRowHeight);
  }
}

QRect TimelineView::SliceRect(uint32_t slice) const {
  const int row = layout_.RowOfSlice(slice);
  if (row < 0) return {};
  const int top = RowTop(row);
  if (top + kRowHeight <= kRulerHeight || top >= height()) return {};
  const TimeMapping map = mapping();
  const trace::Slice& s = document_->trace().slices()[slice];
  double x0 = map.NsToPx(static_cast<double>(s.start_ns));
  double x1 = map.NsToPx(static_cast<double>(s.end_ns()));
  if (x1 < 0 || x0 > map.width_px()) return {};
  x0 = std::max(0.0, x0);
  x1 = std::min(map.width_px(), std::max(x1, x0 + 1));
  return QRect(kTimeAreaLeft + static_cast<int>(std::floor(x0)), top + 1,
               std::max(1, static_cast<int>(std::ceil(x1 - x0))), kRowHeight - 2);
}

int64_t TimelineView::SliceAt(const QPoint& pos) const {
  const int row = RowAt(pos.y());
  if (row < 0 || pos.x() < kTimeAreaLeft || pos.x() >= width() - kTimeAreaRight) return -1;
  const TimelineRow& info = layout_.rows()[static_cast<size_t>(row)];
  if (info.kind != TimelineRow::Kind::kSlices) return -1;
  const uint32_t track = info.track;
  if (info.depth >= document_->index().depth_count(track)) return -1;
  const TimeMapping map = mapping();
  const double t = map.PxToNs(pos.x() - kTimeAreaLeft);
  const double tolerance = 2 * map.ns_per_px();
  const auto level = document_->index().level(track, info.depth);
  const auto [first, last] = document_->index().VisibleRange(track, info.depth, t - tolerance, t + tolerance);
  const auto& slices = document_->trace().slices();
  int64_t best = -1;
  double best_distance = tolerance + 1;
  for (size_t i = first; i < last; ++i) {
    const trace::Slice& s = slices[level[i]];
    const double start = static_cast<double>(s.start_ns);
    const double end = static_cast<double>(s.end_ns());
    const double distance = t < start ? start - t : t > end ? t - end : 0;
    if (distance < best_distance) {
      best_distance = distance;
      best = level[i];
    }
  }
  return best;
}

void TimelineView::SelectSlice(int64_t slice) {
  if (slice == selected_) return;
  selected_ = slice;
  update();
  emit sliceSelected(slice);
}

void TimelineView::RevealSlice(uint32_t slice) {
  const trace::Trace& trace = document_->trace();
  if (slice >= trace.slices().size()) return;
  for (int32_t t = static_cast<int32_t>(trace.slices()[slice].track); t >= 0; t = trace.tracks()[t].parent) {
    layout_.SetCollapsed(static_cast<uint32_t>(t), false);
  }
  UpdateScrollBar();
  const int row = layout_.RowOfSlice(slice);
  if (row >= 0) EnsureRowVisible(row);
  SelectSlice(slice);
  update();
}

void TimelineView::SetSliceColors(std::vector<uint32_t> colors) {
  slice_colors_ = colors.size() == document_->trace().slices().size() ? std::move(colors) : std::vector<uint32_t>();
  update();
}

uint32_t TimelineView::SliceColor(uint32_t slice) const {
  return slice < slice_colors_.size() ? slice_colors_[slice] : document_->ColorOf(document_->trace().slices()[slice]);
}

void TimelineView::FocusSlice(uint32_t slice) {
  const trace::Trace& trace = document_->trace();
  const trace::Slice& s = trace.slices()[slice];
  RevealSlice(slice);
  // Keep the zoom when the slice is comfortably visible; otherwise show it at a fifth of the view.
  const TimeMapping map = mapping();
  const double start = static_cast<double>(s.start_ns);
  const double end = static_cast<double>(s.end_ns());
  const double px = (end - start) / map.ns_per_px();
  if (px < 3 || end - start > map.span_ns()) {
    const double span = std::max(5 * (end - start), 1000.0);
    axis_->SetRange((start + end) / 2 - span / 2, (start + end) / 2 + span / 2);
  } else if (end < map.begin_ns() || start > map.end_ns()) {
    axis_->SetRange((start + end) / 2 - map.span_ns() / 2, (start + end) / 2 + map.span_ns() / 2);
  }
  SelectSlice(slice);
  update();
}

void TimelineView::ClearSelection() {
  range_.reset();
  highlighted_.clear();
  const bool had_selection = !selection_.empty();
  selection_.Clear();
  area_tracks_.clear();
  SelectSlice(-1);
  update();
  if (had_selection) emit selectionChanged();
}

void TimelineView::SelectArea(SelectedArea area) {
  // An area and a multi-selection are two ways of choosing: the newer replaces the other.
  selection_.ClearSlices();
  selection_.SetArea(std::move(area));
  const SelectedArea& set = *selection_.area();
  range_ = std::make_pair(set.begin_ns, set.end_ns);
  area_tracks_ = set.tracks.empty() ? std::vector<char>() : TracksOfArea(document_->trace(), set);
  update();
  emit selectionChanged();
  emit rangeSelected(set.begin_ns, set.end_ns);
}

void TimelineView::ToggleSelectedSlice(uint32_t slice) {
  if (slice >= document_->trace().slices().size()) return;
  // The first Ctrl+click keeps the slice selected before it in the set.
  if (selection_.slices().empty() && selected_ >= 0 && static_cast<uint32_t>(selected_) != slice) {
    selection_.Toggle(static_cast<uint32_t>(selected_));
  }
  const bool added = selection_.Toggle(slice);
  selection_.ClearArea();
  range_.reset();
  area_tracks_.clear();
  update();
  if (added) SelectSlice(slice);
  emit selectionChanged();
}

SelectedArea TimelineView::DraggedArea(const QPoint& pos) const {
  const double t = mapping().PxToNs(pos.x() - kTimeAreaLeft);
  SelectedArea area;
  area.begin_ns = static_cast<int64_t>(std::llround(std::min(t, range_anchor_ns_)));
  area.end_ns = static_cast<int64_t>(std::llround(std::max(t, range_anchor_ns_)));
  if (range_on_ruler_) return area;
  // The rows between the press and here (clamped to the rows there are): their tracks.
  const int last_row = row_count() - 1;
  const int a = std::clamp(RowAt(std::max(press_pos_.y(), kRulerHeight)), 0, std::max(0, last_row));
  int b = RowAt(std::max(pos.y(), kRulerHeight));
  if (b < 0) b = pos.y() < kRulerHeight ? 0 : last_row;
  for (int row = std::min(a, b); row <= std::max(a, b) && row <= last_row; ++row) {
    area.tracks.push_back(layout_.rows()[static_cast<size_t>(row)].track);
  }
  return area;
}

void TimelineView::SetHighlighted(std::vector<uint32_t> slices) {
  std::erase_if(slices, [this](uint32_t s) { return s >= document_->trace().slices().size(); });
  highlighted_ = std::move(slices);
  update();
}

void TimelineView::SetPathSlices(std::vector<uint32_t> slices, std::vector<size_t> rank_jumps) {
  const size_t count = slices.size();
  std::erase_if(slices, [this](uint32_t s) { return s >= document_->trace().slices().size(); });
  path_ = std::move(slices);
  // Positions stay right only when no slice was dropped (the pane gives slices of this document).
  path_jumps_.clear();
  if (path_.size() == count) std::copy_if(rank_jumps.begin(), rank_jumps.end(), std::back_inserter(path_jumps_),
                                          [this](size_t j) { return j > 0 && j < path_.size(); });
  update();
}

void TimelineView::SetSearchMatches(std::vector<uint32_t> slices) {
  search_marks_.Set(document_->trace(), std::move(slices));
  update();
  emit searchMatchesChanged();
}

void TimelineView::PaintSearchMarks(QPainter& painter, const TimeMapping& map) {
  if (search_marks_.empty()) return;
  painter.setClipRect(kTimeAreaLeft, kRulerHeight, static_cast<int>(map.width_px()), height() - kRulerHeight);
  const int first = std::max(0, scroll_y_ / kRowHeight);
  const int last = std::min(row_count(), (scroll_y_ + height() - kRulerHeight) / kRowHeight + 1);
  for (int r = first; r < last; ++r) {
    const TimelineRow& row = layout_.rows()[static_cast<size_t>(r)];
    if (row.kind != TimelineRow::Kind::kSlices) continue;
    search_marks_.PaintRow(painter, document_->trace(), map, row.track, row.depth, kTimeAreaLeft, RowTop(r) + 1, kRowHeight - 2);
  }
  painter.setClipping(false);
}

void TimelineView::ShowHelp(bool show) {
  if (help_ == nullptr && show) help_ = new HelpOverlay(this);
  if (help_ != nullptr) help_->setVisible(show);
  if (show) help_->raise();
}

bool TimelineView::help_shown() const { return help_ != nullptr && help_->isVisible(); }

void TimelineView::SetShowFlows(bool show) {
  show_flows_ = show;
  update();
}

void TimelineView::ZoomAtPx(double px, double factor) {
  TimeMapping map = mapping();
  map.ZoomAt(px, factor);
  axis_->Apply(map);
}

void TimelineView::PanPx(double dx) {
  TimeMapping map = mapping();
  map.PanPx(dx);
  axis_->Apply(map);
}

void TimelineView::FitSelection() {
  if (range_) {
    TimeMapping map = mapping();
    map.Fit(static_cast<double>(range_->first), static_cast<double>(range_->second));
    axis_->Apply(map);
  } else if (selected_ >= 0) {
    const trace::Slice& s = document_->trace().slices()[static_cast<size_t>(selected_)];
    TimeMapping map = mapping();
    map.Fit(static_cast<double>(s.start_ns), static_cast<double>(s.end_ns()), 0.1);
    axis_->Apply(map);
  } else {
    axis_->FitAll();
  }
}

void TimelineView::SetTrackHidden(uint32_t track, bool hidden) {
  layout_.SetHidden(track, hidden);
  UpdateScrollBar();
  update();
}

void TimelineView::SetTrackCollapsed(uint32_t track, bool collapsed) {
  layout_.SetCollapsed(track, collapsed);
  UpdateScrollBar();
  update();
}

void TimelineView::LayoutChanged() {
  UpdateScrollBar();
  update();
}

void TimelineView::resizeEvent(QResizeEvent*) { UpdateScrollBar(); }

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), TimelineColorsFor(palette()).background);
  const TimeMapping map = mapping();
  PaintRows(painter, map);
  PaintSearchMarks(painter, map);
  PaintSelection(painter, map);
  PaintFlows(painter, map);
  PaintRuler(painter, map);
  PaintMarkers(painter, map, markers_, 0, height(), kRulerHeight);
  PaintTrackDrop(painter);
}

TrackLayout::SiblingDrop TimelineView::TrackDropAt(int y) const {
  if (row_count() == 0 || y < kRulerHeight) return {};
  const int row = RowAt(y);
  // Below the last row: its lower half.
  if (row < 0) return layout_.DropAt(dragged_track_, row_count() - 0.01);
  return layout_.DropAt(dragged_track_, row + static_cast<double>(y - RowTop(row)) / kRowHeight);
}

void TimelineView::PaintTrackDrop(QPainter& painter) {
  if (drag_ != Drag::kTrack || track_drop_.line_row < 0) return;
  const int y = track_drop_.line_row < row_count() ? RowTop(track_drop_.line_row)
                                                   : RowTop(row_count() - 1) + kRowHeight;
  painter.setClipping(false);
  painter.fillRect(0, y - 1, width() - kTimeAreaRight, 3, palette().color(QPalette::Highlight));
}

int64_t TimelineView::MarkerTime() const {
  if (selected_ >= 0) return document_->trace().slices()[static_cast<size_t>(selected_)].start_ns;
  const TimeMapping map = mapping();
  const bool in_area = cursor_pos_.x() >= kTimeAreaLeft && cursor_pos_.x() < kTimeAreaLeft + map.width_px();
  return std::llround(map.PxToNs(in_area ? cursor_pos_.x() - kTimeAreaLeft : map.width_px() / 2));
}

int64_t TimelineView::DropMarker() {
  const int64_t id = markers_.Add(MarkerTime()).id;
  MarkersEdited();
  return id;
}

void TimelineView::MarkersEdited() {
  update();
  emit markersChanged();
}

void TimelineView::PaintRuler(QPainter& painter, const TimeMapping& map) {
  painter.setClipping(false);
  const TimelineColors& colors = TimelineColorsFor(palette());
  painter.fillRect(0, 0, width(), kRulerHeight, colors.ruler_band);
  painter.setPen(colors.ruler_text);
  painter.drawLine(0, kRulerHeight - 1, width(), kRulerHeight - 1);
  QFont font = painter.font();
  font.setPointSizeF(8);
  painter.setFont(font);
  painter.drawText(QRect(6, 0, kTimeAreaLeft - 12, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   tr("view %1").arg(QString::fromStdString(FormatDurationSignificant(map.span_ns()))));
  painter.setClipRect(kTimeAreaLeft, 0, static_cast<int>(map.width_px()), kRulerHeight);
  for (const RulerTick& tick : RulerTicks(map)) {
    const int x = kTimeAreaLeft + static_cast<int>(std::lround(tick.px));
    painter.drawLine(x, kRulerHeight - (tick.major ? 10 : 4), x, kRulerHeight - 1);
    if (tick.major) painter.drawText(x + 3, kRulerHeight - 12, QString::fromStdString(tick.label));
  }
  if (range_) {
    const double x0 = map.NsToPx(static_cast<double>(range_->first));
    const double x1 = map.NsToPx(static_cast<double>(range_->second));
    const QString text = QString::fromStdString(FormatDurationSignificant(static_cast<double>(range_->second - range_->first)));
    const QRectF band(kTimeAreaLeft + x0, 2, std::max(1.0, x1 - x0), kRulerHeight - 4);
    painter.fillRect(band, QColor(0x46, 0x82, 0xdc, 0x90));
    painter.setPen(Qt::white);
    painter.drawText(band, Qt::AlignCenter, text);
  }
  painter.setClipping(false);
}

void TimelineView::PaintRows(QPainter& painter, const TimeMapping& map) {
  const int pinned = std::min(layout_.pinned_row_count(), row_count());
  const int pinned_bottom = kRulerHeight + pinned * kRowHeight;
  PaintRowRange(painter, map, pinned + std::max(0, scroll_y_ / kRowHeight),
                std::min(row_count(), (scroll_y_ + height() - kRulerHeight) / kRowHeight + 1), pinned_bottom, height());
  if (pinned == 0) return;
  PaintRowRange(painter, map, 0, pinned, kRulerHeight, pinned_bottom);
  painter.setPen(QColor(0x60, 0x64, 0x70));
  painter.drawLine(0, pinned_bottom - 1, width(), pinned_bottom - 1);
}

void TimelineView::PaintRowRange(QPainter& painter, const TimeMapping& map, int first, int last, int clip_top,
                                 int clip_bottom) {
  if (first >= last) return;
  const auto& rows = layout_.rows();
  const auto& trace = document_->trace();
  const auto& slices = trace.slices();
  const int time_right = kTimeAreaLeft + static_cast<int>(map.width_px());
  const QFont font = label_font_;
  painter.setFont(font);
  const QFontMetricsF metrics(font);
  const double char_width = std::max(1.0, metrics.averageCharWidth());
  const double text_top = (kRowHeight - metrics.height()) / 2;

  const TimelineColors& colors = TimelineColorsFor(palette());
  // Bands and the label column.
  painter.setClipRect(0, clip_top, width(), clip_bottom - clip_top);
  for (int r = first; r < last; ++r) {
    const TimelineRow& row = rows[static_cast<size_t>(r)];
    const int y = RowTop(r);
    const QColor band = row.kind == TimelineRow::Kind::kHeader ? colors.header_band
                        : (row.track % 2 == 0)                 ? colors.background
                                                               : colors.stripe;
    painter.fillRect(0, y, time_right, kRowHeight, band);
    if (row.kind == TimelineRow::Kind::kCounter) {
      const int x = 6 + row.indent * kIndentPx;
      CounterPainter::PaintLabel(painter, counters_->tracks()[row.counter], row.depth, QRect(x, y, kTimeAreaLeft - x - 4, kRowHeight));
      if (row.depth == 0) {
        painter.setPen(colors.grid);
        painter.drawLine(0, y, time_right, y);
      }
    } else if (row.kind == TimelineRow::Kind::kHeader || row.first_of_track) {
      const int x = 6 + row.indent * kIndentPx;
      QString label = QString::fromUtf8(trace.str(trace.tracks()[row.track].name));
      if (row.kind == TimelineRow::Kind::kHeader) {
        label = (layout_.collapsed(row.track) ? QStringLiteral("\u25B8 ") : QStringLiteral("\u25BE ")) + label;
      }
      painter.setPen(row.kind == TimelineRow::Kind::kHeader ? colors.header_text : colors.lane_text);
      QFont label_font = font;
      label_font.setBold(row.kind == TimelineRow::Kind::kHeader);
      painter.setFont(label_font);
      painter.drawText(QRect(x, y, kTimeAreaLeft - x - 4, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                       ElideMiddleToWidth(QFontMetrics(label_font), label, kTimeAreaLeft - x - 4));
      painter.setFont(font);
      painter.setPen(colors.grid);
      painter.drawLine(0, y, time_right, y);
    }
  }
  painter.setPen(colors.separator);
  painter.drawLine(kTimeAreaLeft - 1, kRulerHeight, kTimeAreaLeft - 1, height());

  // Slices, clipped to the time area.
  painter.setClipRect(kTimeAreaLeft, clip_top, static_cast<int>(map.width_px()), clip_bottom - clip_top);
  painter.setPen(colors.grid);
  for (const RulerTick& tick : RulerTicks(map)) {
    if (!tick.major) continue;
    const int x = kTimeAreaLeft + static_cast<int>(std::lround(tick.px));
    painter.drawLine(x, kRulerHeight, x, height());
  }
  painter.setPen(Qt::black);
  const double right = map.width_px() + 1;
  CollectRowBoxes(map, first, last);
  for (int r = first; r < last; ++r) {
    const TimelineRow& row = rows[static_cast<size_t>(r)];
    if (row.kind == TimelineRow::Kind::kHeader && layout_.collapsed(row.track)) {
      PaintActivity(painter, map, row.track, RowTop(r));
      continue;
    }
    if (row.kind == TimelineRow::Kind::kCounter && (row.depth == 0 || r == first)) {
      // The whole counter from its first row, which may be scrolled just above the view.
      CounterPainter::Paint(painter, counters_->tracks()[row.counter], row_columns_[static_cast<size_t>(r - first)],
                             QRect(kTimeAreaLeft, RowTop(r - row.depth) + 2, static_cast<int>(std::ceil(map.width_px())),
                                   TrackLayout::kCounterRows * kRowHeight - 3));
    }
    if (row.kind != TimelineRow::Kind::kSlices || row.depth >= document_->index().depth_count(row.track)) continue;
    const int y = RowTop(r);
    // Adjacent folded runs are painted as one rectangle: a zoomed-out dense row is a handful
    // of fills, not one per pixel.
    double fold_x0 = 0, fold_x1 = -1e9;
    auto flush_fold = [&] {
      if (fold_x1 > fold_x0) {
        painter.fillRect(QRectF(kTimeAreaLeft + fold_x0, y + 1, fold_x1 - fold_x0, kRowHeight - 2), kFoldedColor);
      }
      fold_x1 = -1e9;
    };
    for (const DrawBox& box : row_boxes_[static_cast<size_t>(r - first)]) {
      const double x0 = std::max<double>(box.x0, -1.0);
      const double x1 = std::max(x0 + 1, std::min<double>(box.x1, right));
      if (box.folded()) {
        if (x0 > fold_x1 + 0.5) {
          flush_fold();
          fold_x0 = x0;
        }
        fold_x1 = std::max(fold_x1, x1);
        continue;
      }
      flush_fold();
      const QRectF area(kTimeAreaLeft + x0, y + 1, x1 - x0, kRowHeight - 2);
      const trace::Slice& s = slices[box.slice];
      painter.fillRect(area, QColor::fromRgb(slice_colors_.empty() ? document_->ColorOf(s) : slice_colors_[box.slice]));
      if (area.width() > 3 * char_width + 4) {
        const auto fit = static_cast<uint32_t>((area.width() - 4) / char_width);
        painter.drawStaticText(QPointF(area.left() + 2, y + text_top), Label(trace.slice_name(s), fit));
      }
    }
    flush_fold();
  }
  painter.setClipping(false);
}

void TimelineView::CollectRowBoxes(const TimeMapping& map, int first, int last) {
  const auto& rows = layout_.rows();
  const TimelineIndex& index = document_->index();
  row_boxes_.resize(static_cast<size_t>(std::max(0, last - first)));
  row_columns_.resize(row_boxes_.size());
  // Rows alternate between this thread and a helper: on a wide view of a dense trace, finding
  // each pixel's fold is most of the frame, and a dense counter's columns the rest. Both only
  // read the frozen index and counters.
  auto collect = [&](int parity) {
    for (int r = first + parity; r < last; r += 2) {
      std::vector<DrawBox>& boxes = row_boxes_[static_cast<size_t>(r - first)];
      boxes.clear();
      const TimelineRow& row = rows[static_cast<size_t>(r)];
      if (row.kind == TimelineRow::Kind::kCounter && (row.depth == 0 || r == first)) {
        counters_->tracks()[row.counter].Columns(map, &row_columns_[static_cast<size_t>(r - first)]);
        continue;
      }
      if (row.kind != TimelineRow::Kind::kSlices || row.depth >= index.depth_count(row.track)) continue;
      CollectBoxes(index, row.track, row.depth, map, &boxes);
    }
  };
  if (last - first < 2) return collect(0);
  auto helper = std::async(std::launch::async, collect, 1);
  collect(0);
  helper.get();
}

const std::vector<uint32_t>& TimelineView::LanesBelow(uint32_t track) {
  const size_t tracks = document_->trace().tracks().size();
  if (lanes_below_.size() != tracks) {
    lanes_below_.assign(tracks, {});
    lanes_below_known_.assign(tracks, false);
  }
  if (!lanes_below_known_[track]) {
    std::vector<uint32_t> pending = {track};
    while (!pending.empty()) {
      const uint32_t t = pending.back();
      pending.pop_back();
      if (document_->index().depth_count(t) > 0) lanes_below_[track].push_back(t);
      for (uint32_t child : layout_.children(static_cast<int32_t>(t))) pending.push_back(child);
    }
    lanes_below_known_[track] = true;
  }
  return lanes_below_[track];
}

void TimelineView::PaintActivity(QPainter& painter, const TimeMapping& map, uint32_t track, int y) {
  const int width = static_cast<int>(map.width_px()) + 2;
  covered_.assign(static_cast<size_t>(width), 0);
  bool any = false;
  for (uint32_t lane : LanesBelow(track)) {
    boxes_.clear();
    CollectBoxes(document_->index(), lane, 0, map, &boxes_);
    for (const DrawBox& box : boxes_) {
      const int x0 = std::clamp(static_cast<int>(std::floor(box.x0)), 0, width - 1);
      const int x1 = std::clamp(static_cast<int>(std::ceil(box.x1)), x0 + 1, width);
      std::fill(covered_.begin() + x0, covered_.begin() + x1, uint8_t{1});
      any = true;
    }
  }
  if (!any) return;
  for (int x = 0; x < width;) {
    if (covered_[static_cast<size_t>(x)] == 0) {
      ++x;
      continue;
    }
    int end = x;
    while (end < width && covered_[static_cast<size_t>(end)] != 0) ++end;
    painter.fillRect(QRectF(kTimeAreaLeft + x, y + 4, end - x, kRowHeight - 8), kActivityColor);
    x = end;
  }
}

void TimelineView::PaintSelection(QPainter& painter, const TimeMapping& map) {
  painter.setClipRect(kTimeAreaLeft, kRulerHeight, static_cast<int>(map.width_px()), height() - kRulerHeight);
  PaintArea(painter, map);
  if (!path_.empty()) {
    // Each slice of the path outlined; consecutive ones on screen joined end to start.
    const QColor color = QColor::fromRgba(kPathColor);
    painter.setBrush(Qt::NoBrush);
    // A path of 10^5 slices costs a frame no more than its visible part: slices outside the window
    // are skipped before laying them out, and a box drawn just before (sub-pixel slices in a row)
    // is not drawn again.
    const auto& slices = document_->trace().slices();
    QRect previous;
    size_t next_jump = 0;  // into path_jumps_: those joins are drawn as links (PaintFlows)
    for (size_t k = 0; k < path_.size(); ++k) {
      const uint32_t slice = path_[k];
      const bool jump = next_jump < path_jumps_.size() && path_jumps_[next_jump] == k;
      if (jump) ++next_jump;
      const trace::Slice& s = slices[slice];
      const QRect box = static_cast<double>(s.end_ns()) < map.begin_ns() || static_cast<double>(s.start_ns) > map.end_ns()
                            ? QRect()
                            : SliceRect(slice);
      if (box.isEmpty()) {
        previous = QRect();
        continue;
      }
      if (box == previous) continue;
      painter.setPen(QPen(color, 2));
      painter.drawRect(box.adjusted(0, 0, -1, -1));
      if (!jump && !previous.isEmpty() && box.left() - previous.right() > 2) {
        painter.setPen(QPen(color, 1, Qt::DotLine));
        painter.drawLine(QPoint(previous.right(), previous.center().y()), QPoint(box.left(), box.center().y()));
      }
      previous = box;
    }
  }
  if (!highlighted_.empty()) {
    painter.setPen(QPen(TimelineColorsFor(palette()).highlighted, 1, Qt::DashLine));
    painter.setBrush(Qt::NoBrush);
    for (uint32_t slice : highlighted_) {
      const QRect box = SliceRect(slice);
      if (!box.isEmpty()) painter.drawRect(box.adjusted(0, 0, -1, -1));
    }
  }
  if (!selection_.slices().empty()) {
    painter.setPen(QPen(kMultiSelected, 2));
    painter.setBrush(Qt::NoBrush);
    for (uint32_t slice : selection_.slices()) {
      const QRect box = SliceRect(slice);
      if (!box.isEmpty()) painter.drawRect(box.adjusted(0, 0, -1, -1));
    }
  }
  if (selected_ >= 0) {
    const QRect box = SliceRect(static_cast<uint32_t>(selected_));
    if (!box.isEmpty()) {
      painter.setPen(QPen(TimelineColorsFor(palette()).selection, 2));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(box.adjusted(0, 0, -1, -1));
    }
  }
  painter.setClipping(false);
}

// The selected range shaded: over every row, or over the rows of the area's tracks only.
void TimelineView::PaintArea(QPainter& painter, const TimeMapping& map) {
  if (!range_) return;
  const double x0 = kTimeAreaLeft + map.NsToPx(static_cast<double>(range_->first));
  const double x1 = kTimeAreaLeft + map.NsToPx(static_cast<double>(range_->second));
  const double width = std::max(1.0, x1 - x0);
  painter.setPen(kRangeEdge);
  if (area_tracks_.empty()) {
    painter.fillRect(QRectF(x0, kRulerHeight, width, height()), kRangeFill);
    painter.drawLine(QPointF(x0, kRulerHeight), QPointF(x0, height()));
    painter.drawLine(QPointF(x1, kRulerHeight), QPointF(x1, height()));
    return;
  }
  const int first = std::max(0, scroll_y_ / kRowHeight);
  for (int row = first; row < row_count() && RowTop(row) < height(); ++row) {
    const uint32_t track = layout_.rows()[static_cast<size_t>(row)].track;
    if (track >= area_tracks_.size() || !area_tracks_[track]) continue;
    const int y = RowTop(row);
    painter.fillRect(QRectF(x0, y, width, kRowHeight), kRangeFill);
    painter.drawLine(QPointF(x0, y), QPointF(x0, y + kRowHeight));
    painter.drawLine(QPointF(x1, y), QPointF(x1, y + kRowHeight));
  }
}

void TimelineView::PaintFlows(QPainter& painter, const TimeMapping& map) {
  const bool flows = show_flows_ && selected_ >= 0;
  if (!flows && path_jumps_.empty()) return;
  const auto& trace = document_->trace();
  const auto& rows = layout_.rows();
  // A slice's row, or the header of the collapsed track hiding it; -1 when none is shown.
  auto row_of = [&](uint32_t s) {
    const int row = layout_.RowOfSlice(s);
    if (row >= 0) return row;
    for (int32_t t = trace.tracks()[trace.slices()[s].track].parent; t >= 0; t = trace.tracks()[t].parent) {
      for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].kind == TimelineRow::Kind::kHeader && rows[r].track == static_cast<uint32_t>(t)) return static_cast<int>(r);
      }
    }
    return -1;
  };
  auto anchor = [&](uint32_t s, bool at_end) -> std::optional<QPointF> {
    const int row = row_of(s);
    if (row < 0) return std::nullopt;
    const trace::Slice& info = trace.slices()[s];
    const double t = static_cast<double>(at_end ? info.end_ns() : info.start_ns);
    return QPointF(kTimeAreaLeft + map.NsToPx(t), RowTop(row) + kRowHeight / 2.0);
  };
  std::vector<FlowEnds> ends;
  auto add = [&](const trace::Flow& flow) {
    const auto from = anchor(flow.from_slice, true);
    const auto to = anchor(flow.to_slice, false);
    if (from && to) ends.push_back({*from, *to, flow.kind == trace::FlowKind::kLaunch ? kLaunchColor : kDataflowColor});
  };
  if (flows) {
    for (uint32_t f : document_->FlowsFrom(static_cast<uint32_t>(selected_))) add(trace.flows()[f]);
    for (uint32_t f : document_->FlowsTo(static_cast<uint32_t>(selected_))) add(trace.flows()[f]);
  }
  // The cross-rank path's jumps: from the last slice on the rank waited for to the first on the
  // rank that waited, to the edge when an end is off-screen, as a flow is.
  for (const size_t j : path_jumps_) {
    const auto from = anchor(path_[j - 1], true);
    const auto to = anchor(path_[j], false);
    if (from && to) ends.push_back({*from, *to, QColor::fromRgba(kPathColor)});
  }
  viewer::PaintFlows(painter, QRectF(kTimeAreaLeft, kRulerHeight, map.width_px(), height() - kRulerHeight), ends);
}

const QStaticText& TimelineView::Label(trace::StringId name, uint32_t max_chars) {
  // The name as shown (a kernel's short name), worked out once per name.
  auto shown = shown_names_.find(name);
  if (shown == shown_names_.end()) {
    if (shown_names_.size() > 100000) shown_names_.clear();
    const std::string_view full = document_->trace().str(name);
    std::string text = full_names_ ? std::string(full) : ShortKernelName(full);
    const auto length = static_cast<uint32_t>(Utf8Length(text));
    shown = shown_names_.emplace(name, ShownName{std::move(text), length}).first;
  }
  const std::string& text = shown->second.text;
  const uint32_t chars = std::min(shown->second.chars, max_chars);
  const uint64_t key = static_cast<uint64_t>(name) << 32 | chars;
  auto it = label_cache_.find(key);
  if (it != label_cache_.end()) return it->second;
  // Laid out once and reused while zooming: drawing prepared text is several times cheaper.
  if (label_cache_.size() > 20000) label_cache_.clear();
  // Cut in the middle: a scope keeps its op type, a kernel the end of its name.
  const std::string elided = ElideMiddle(text, chars);
  QString label = QString::fromUtf8(elided.data(), static_cast<qsizetype>(elided.size()));
  QStaticText prepared(label);
  prepared.setTextFormat(Qt::PlainText);
  prepared.setPerformanceHint(QStaticText::AggressiveCaching);
  prepared.prepare(QTransform(), label_font_);
  return label_cache_.emplace(key, std::move(prepared)).first->second;
}

QString TimelineView::TooltipAt(const QPoint& pos) const {
  const int row = RowAt(pos.y());
  if (row < 0) return {};
  const TimelineRow& info = layout_.rows()[static_cast<size_t>(row)];
  const auto& trace = document_->trace();
  if (info.kind == TimelineRow::Kind::kCounter) {
    const CounterTrack& counter = counters_->tracks()[info.counter];
    if (pos.x() < kTimeAreaLeft) {
      return QString::fromStdString(trace.TrackPath(info.track) + " / " + counter.name).toHtmlEscaped();
    }
    return CounterPainter::Tooltip(mapping(), counter, pos.x() - kTimeAreaLeft);
  }
  if (pos.x() < kTimeAreaLeft) return QString::fromStdString(trace.TrackPath(info.track));
  if (info.kind != TimelineRow::Kind::kSlices || info.depth >= document_->index().depth_count(info.track)) return {};
  // A folded run says so instead of naming one of its slices.
  std::vector<DrawBox> boxes;
  const TimeMapping map = mapping();
  CollectBoxes(document_->index(), info.track, info.depth, map, &boxes);
  const double x = pos.x() - kTimeAreaLeft;
  for (const DrawBox& box : boxes) {
    if (x >= box.x0 - 1 && x <= box.x1 + 1 && box.folded()) {
      return tr("%1 slices, too narrow to tell apart: zoom in").arg(box.count);
    }
  }
  const int64_t slice = SliceAt(pos);
  if (slice < 0) return {};
  const trace::Slice& s = trace.slices()[static_cast<size_t>(slice)];
  const QString note = slice_note_ ? slice_note_(static_cast<uint32_t>(slice)) : QString();
  return QStringLiteral("<b>%1</b><br>%2 &middot; %3<br>start %4, duration <b>%5</b><br>%6")
             .arg(QString::fromUtf8(trace.str(trace.slice_name(s))).toHtmlEscaped(),
                  QString::fromUtf8(trace.str(trace.slice_op_type(s))).toHtmlEscaped(),
                  QString::fromUtf8(trace::SliceKindName(s.kind)),
                  QString::fromStdString(FormatDurationSignificant(static_cast<double>(s.start_ns))),
                  QString::fromStdString(FormatDurationSignificant(static_cast<double>(s.dur_ns))),
                  QString::fromStdString(trace.TrackPath(s.track)).toHtmlEscaped()) +
         (note.isEmpty() ? QString() : QStringLiteral("<br>") + note);
}

bool TimelineView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = TooltipAt(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const double anchor = cursor_pos_.x() >= kTimeAreaLeft && cursor_pos_.x() < width() - kTimeAreaRight
                            ? cursor_pos_.x() - kTimeAreaLeft
                            : time_width() / 2;
  switch (event->key()) {
    case Qt::Key_W: ZoomAtPx(anchor, kZoomStep); break;
    case Qt::Key_S: ZoomAtPx(anchor, 1 / kZoomStep); break;
    case Qt::Key_A:
    case Qt::Key_Left: PanPx(-kPanStep * time_width()); break;
    case Qt::Key_D:
    case Qt::Key_Right: PanPx(kPanStep * time_width()); break;
    case Qt::Key_F: FitSelection(); break;
    case Qt::Key_0:
    case Qt::Key_Home: axis_->FitAll(); break;
    case Qt::Key_L: SetShowFlows(!show_flows_); break;
    case Qt::Key_N:
    case Qt::Key_Return:
    case Qt::Key_Enter: emit searchStepRequested(!(event->modifiers() & Qt::ShiftModifier)); break;
    case Qt::Key_Escape: help_shown() ? ShowHelp(false) : ClearSelection(); break;
    case Qt::Key_Question:
    case Qt::Key_F1: ShowHelp(!help_shown()); break;
    case Qt::Key_M: DropMarker(); break;
    case Qt::Key_Up: ScrollTo(scroll_y_ - kRowHeight); break;
    case Qt::Key_Down: ScrollTo(scroll_y_ + kRowHeight); break;
    case Qt::Key_PageUp: ScrollTo(scroll_y_ - (height() - kRulerHeight)); break;
    case Qt::Key_PageDown: ScrollTo(scroll_y_ + (height() - kRulerHeight)); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const QPoint delta = event->angleDelta();
  const double x = event->position().x() - kTimeAreaLeft;
  if (event->modifiers() & Qt::ControlModifier) {
    ZoomAtPx(std::clamp(x, 0.0, time_width()), std::pow(1.0015, delta.y()));
  } else if (delta.x() != 0 || (event->modifiers() & Qt::ShiftModifier)) {
    PanPx(-(delta.x() != 0 ? delta.x() : delta.y()) * time_width() / 1200.0);
  } else {
    ScrollTo(scroll_y_ - delta.y() / 2);
  }
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  setFocus();
  if (event->button() != Qt::LeftButton) return;
  press_pos_ = last_pos_ = event->position().toPoint();
  const TimeMapping map = mapping();
  if (press_pos_.x() >= kTimeAreaLeft &&
      (press_pos_.y() < kRulerHeight || (event->modifiers() & Qt::ShiftModifier))) {
    drag_ = Drag::kRange;
    range_on_ruler_ = press_pos_.y() < kRulerHeight;
    range_anchor_ns_ = map.PxToNs(press_pos_.x() - kTimeAreaLeft);
    return;
  }
  if (press_pos_.x() < kTimeAreaLeft) {
    // A track's label: a click toggles a header, a drag moves the track (mouseReleaseEvent).
    const int row = RowAt(press_pos_.y());
    drag_ = Drag::kNone;
    if (row >= 0 && layout_.rows()[static_cast<size_t>(row)].kind != TimelineRow::Kind::kCounter) {
      drag_ = Drag::kLabel;
      dragged_track_ = layout_.rows()[static_cast<size_t>(row)].track;
    }
    return;
  }
  drag_ = Drag::kPending;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  cursor_pos_ = pos;
  if (drag_ == Drag::kPending && (pos - press_pos_).manhattanLength() > 3) drag_ = Drag::kPan;
  if (drag_ == Drag::kLabel && (pos - press_pos_).manhattanLength() > 3) drag_ = Drag::kTrack;
  if (drag_ == Drag::kTrack) {
    track_drop_ = TrackDropAt(pos.y());
    setCursor(track_drop_.place >= 0 ? Qt::ClosedHandCursor : Qt::ForbiddenCursor);
    update();
  } else if (drag_ == Drag::kPan) {
    PanPx(-(pos.x() - last_pos_.x()));
    ScrollTo(scroll_y_ - (pos.y() - last_pos_.y()));
  } else if (drag_ == Drag::kRange) {
    // Shown as it is dragged; selected (and announced) on release.
    const SelectedArea area = DraggedArea(pos);
    range_ = std::make_pair(area.begin_ns, area.end_ns);
    area_tracks_ = area.tracks.empty() ? std::vector<char>() : TracksOfArea(document_->trace(), area);
    update();
  }
  last_pos_ = pos;
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (drag_ == Drag::kPending) {
    const int64_t slice = SliceAt(pos);
    if ((event->modifiers() & Qt::ControlModifier) && slice >= 0) {
      ToggleSelectedSlice(static_cast<uint32_t>(slice));
    } else {
      if (!selection_.slices().empty()) {
        selection_.ClearSlices();
        emit selectionChanged();
      }
      SelectSlice(slice);
    }
  } else if (drag_ == Drag::kLabel) {
    const TimelineRow* row = RowAt(pos.y()) >= 0 ? &layout_.rows()[static_cast<size_t>(RowAt(pos.y()))] : nullptr;
    if (row != nullptr && row->kind == TimelineRow::Kind::kHeader && row->track == dragged_track_) {
      SetTrackCollapsed(row->track, !layout_.collapsed(row->track));
    }
  } else if (drag_ == Drag::kTrack) {
    // Among its siblings only, as the Tracks pane's drop; elsewhere nothing moves.
    const TrackLayout::SiblingDrop drop = TrackDropAt(pos.y());
    drag_ = Drag::kNone;
    unsetCursor();
    if (drop.place >= 0 && layout_.MoveTrackTo(dragged_track_, drop.place)) {
      LayoutChanged();
      emit trackMoved(dragged_track_);
    }
    update();
  } else if (drag_ == Drag::kRange) {
    if (std::abs(pos.x() - press_pos_.x()) > 2 && range_) {
      SelectArea(DraggedArea(pos));
    } else {
      range_.reset();
      area_tracks_.clear();
      if (selection_.area()) {
        selection_.ClearArea();
        emit selectionChanged();
      }
      update();
    }
  }
  drag_ = Drag::kNone;
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
  const int64_t slice = SliceAt(event->position().toPoint());
  if (slice >= 0) {
    range_.reset();
    area_tracks_.clear();
    if (selection_.area()) {
      selection_.ClearArea();
      emit selectionChanged();
    }
    SelectSlice(slice);
    FitSelection();
  } else if (event->position().x() >= kTimeAreaLeft) {
    axis_->FitAll();
  }
}

}  // namespace stepscope::viewer
