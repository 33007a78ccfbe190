// The timeline widget: a ruler, the track tree as rows (collapsible headers, one row per nesting
// level) and the slices of the visible window, drawn from the document's frozen index: per
// level a binary search for the window and sub-pixel runs folded (CollectBoxes), so a frame
// costs the same for a thousand slices or a million. A frame's boxes are collected on two cores.
//
// Navigation as in Perfetto: W/S zoom at the cursor, A/D pan, Ctrl+wheel zoom at the cursor,
// wheel scrolls rows, Shift+wheel pans, drag pans; a click selects a slice, a double-click or F
// fits it; Ctrl+click adds or removes a slice of a multi-selection; Shift+drag selects an area (a
// time range on the tracks of the rows dragged over; on the ruler, every track); Esc clears; L
// toggles flows. The multi-selection and the area live in a TimelineSelection (selection.h).
#pragma once

#include <QColor>
#include <QElapsedTimer>
#include <QFont>
#include <QStaticText>
#include <QWidget>
#include <functional>
#include <unordered_map>
#include <memory>
#include <optional>
#include <vector>

#include "viewer/load/document.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline_data/selection.h"
#include "viewer/timeline_data/timeline_index.h"
#include "viewer/timeline_data/track_layout.h"

class QScrollBar;

namespace stepscope::viewer {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRulerHeight = 26;
  static constexpr int kRowHeight = 18;

  TimelineView(std::shared_ptr<const TraceDocument> document, TimeAxis* axis, QWidget* parent = nullptr);
  ~TimelineView() override;

  TrackLayout& layout() { return layout_; }
  const TrackLayout& layout() const { return layout_; }
  int row_count() const { return static_cast<int>(layout_.rows().size()); }
  // Widget y of the top of a row (may be outside the widget when scrolled away).
  int RowTop(int row) const { return kRulerHeight + row * kRowHeight - scroll_y_; }
  // Where a slice is drawn: its box in widget coordinates (clipped to the time area), or an
  // empty rect when it is not on screen.
  QRect SliceRect(uint32_t slice) const;
  // The slice under a widget position (within two pixels), or -1.
  int64_t SliceAt(const QPoint& pos) const;
  TimeMapping mapping() const;

  int64_t selected_slice() const { return selected_; }
  std::optional<std::pair<int64_t, int64_t>> selected_range() const { return range_; }
  bool show_flows() const { return show_flows_; }
  // The slices Ctrl+clicked and the area Shift+dragged (its range is also selected_range()).
  const TimelineSelection& selection() const { return selection_; }
  // Selects an area as a Shift+drag does (tracks empty: every track), or adds/removes a slice of
  // the multi-selection as a Ctrl+click does; both emit selectionChanged.
  void SelectArea(SelectedArea area);
  void ToggleSelectedSlice(uint32_t slice);
  // Colours per slice (0xRRGGBB, indexed like trace().slices()) instead of the op type colours:
  // the comparison view tints slices by their change. Empty: the op type colours again.
  void SetSliceColors(std::vector<uint32_t> colors);
  uint32_t SliceColor(uint32_t slice) const;
  // Slices outlined besides the selection (all slices of an op the comparison jumped to); Esc
  // (ClearSelection) clears them.
  void SetHighlighted(std::vector<uint32_t> slices);
  const std::vector<uint32_t>& highlighted() const { return highlighted_; }
  // A path of slices (the critical path) outlined in its own colour and joined in order; Esc
  // keeps it. Empty: none.
  void SetPathSlices(std::vector<uint32_t> slices);
  const std::vector<uint32_t>& path_slices() const { return path_; }
  static constexpr QRgb kPathColor = 0xffd0187a;
  // A line added to the tooltip of a slice (the comparison's verdict for it); empty: none.
  void SetSliceNote(std::function<QString(uint32_t slice)> note) { slice_note_ = std::move(note); }
  // The tooltip at a widget position (HTML), empty where there is none.
  QString TooltipAt(const QPoint& pos) const;

 public slots:
  void SelectSlice(int64_t slice);  // -1 clears
  // Selects a slice and brings it into view: expands what hides it, scrolls to its row and
  // zooms in when it is too narrow to see.
  void FocusSlice(uint32_t slice);
  // Selects a slice and scrolls (expanding what hides it) to its row; the time window stays.
  void RevealSlice(uint32_t slice);
  void ClearSelection();
  void SetShowFlows(bool show);
  void ZoomAtPx(double px, double factor);  // px within the time area
  void PanPx(double dx);
  void FitSelection();  // the selected slice or range, else everything
  void SetTrackHidden(uint32_t track, bool hidden);
  void SetTrackCollapsed(uint32_t track, bool collapsed);

 signals:
  void sliceSelected(int64_t slice);
  void rangeSelected(int64_t begin_ns, int64_t end_ns);
  // The multi-selection or the area changed (cleared included).
  void selectionChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  double time_width() const;
  int RowAt(int y) const;
  void ScrollTo(int y);
  void UpdateScrollBar();
  void EnsureRowVisible(int row);
  void PaintRuler(QPainter& painter, const TimeMapping& mapping);
  void PaintRows(QPainter& painter, const TimeMapping& mapping);
  void PaintFlows(QPainter& painter, const TimeMapping& mapping);
  void PaintSelection(QPainter& painter, const TimeMapping& mapping);
  void PaintArea(QPainter& painter, const TimeMapping& mapping);
  // The area of a Shift+drag from the press to `pos`: the tracks of the rows between.
  SelectedArea DraggedArea(const QPoint& pos) const;
  // A collapsed header's row: where any lane below it has work (top-level slices), as runs of
  // covered pixels, so a merge of many ranks collapsed to a row per rank still shows activity.
  void PaintActivity(QPainter& painter, const TimeMapping& mapping, uint32_t track, int y);
  // The boxes of the visible slice rows [first, last) into row_boxes_, on two cores.
  void CollectRowBoxes(const TimeMapping& mapping, int first, int last);
  const std::vector<uint32_t>& LanesBelow(uint32_t track);

  std::shared_ptr<const TraceDocument> document_;
  TimeAxis* axis_;
  TrackLayout layout_;
  std::vector<std::vector<uint32_t>> lanes_below_;  // per track, the tracks with slices in its subtree (built on use)
  std::vector<bool> lanes_below_known_;
  std::vector<uint8_t> covered_;                    // per pixel, for PaintActivity
  QScrollBar* scroll_bar_;
  int scroll_y_ = 0;
  int64_t selected_ = -1;
  std::optional<std::pair<int64_t, int64_t>> range_;
  TimelineSelection selection_;
  std::vector<char> area_tracks_;  // per track, whether the area's tracks hold it (for painting)
  bool range_on_ruler_ = false;    // the drag started on the ruler: every track
  bool show_flows_ = true;

  enum class Drag { kNone, kPending, kPan, kRange };
  Drag drag_ = Drag::kNone;
  QPoint press_pos_;
  QPoint last_pos_;
  double range_anchor_ns_ = 0;
  QPoint cursor_pos_{-1, -1};

  const QStaticText& Label(trace::StringId name, uint32_t max_chars);

  std::vector<uint32_t> slice_colors_;  // overrides the op type colours when not empty
  std::vector<uint32_t> highlighted_;
  std::vector<uint32_t> path_;
  std::function<QString(uint32_t)> slice_note_;
  std::vector<DrawBox> boxes_;  // reused between frames
  std::vector<std::vector<DrawBox>> row_boxes_;  // per visible row, reused between frames
  QFont label_font_;
  std::unordered_map<uint64_t, QStaticText> label_cache_;  // (name, chars) -> laid-out label
};

}  // namespace stepscope::viewer
