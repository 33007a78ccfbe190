// The timeline widget: a ruler, the track tree as rows (collapsible headers, one row per nesting
// level) and the slices of the visible window, drawn from the document's frozen index: per
// level a binary search for the window and sub-pixel runs folded (CollectBoxes), so a frame
// costs the same for a thousand slices or a million. A frame's boxes are collected on two cores.
//
// Navigation as in Perfetto: W/S zoom at the cursor, A/D pan, Ctrl+wheel zoom at the cursor,
// wheel scrolls rows, Shift+wheel pans, drag pans; a click selects a slice, a double-click or F
// fits it; Ctrl+click adds or removes a slice of a multi-selection; Shift+drag selects an area (a
// time range on the tracks of the rows dragged over; on the ruler, every track); Esc clears; L
// toggles flows; n / Shift+N (or Enter / Shift+Enter) step through the search matches, marked on
// the timeline; ? or F1 shows the bindings over it. A track's label dragged up or down moves the
// track among its siblings (TrackLayout::DropAt, MoveTrackTo: the order the Tracks pane gives). The multi-selection and the area live in a
// TimelineSelection (selection.h).
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
#include "viewer/timeline/counter_painter.h"
#include "viewer/timeline/search_marks.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline_data/selection.h"
#include "viewer/timeline_data/timeline_index.h"
#include "viewer/timeline_data/markers.h"
#include "viewer/timeline_data/track_layout.h"

class QMenu;
class QScrollBar;

namespace stepscope::viewer {
class HelpOverlay;
}

namespace stepscope::viewer {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRulerHeight = 26;
  static constexpr int kRowHeight = 18;

  TimelineView(std::shared_ptr<const TraceDocument> document, TimeAxis* axis, QWidget* parent = nullptr);
  ~TimelineView() override;

  const TraceDocument& document() const { return *document_; }
  TrackLayout& layout() { return layout_; }
  const TrackLayout& layout() const { return layout_; }
  int row_count() const { return static_cast<int>(layout_.rows().size()); }
  // Widget y of the top of a row (may be outside the widget when scrolled away).
  // Pinned rows (TrackLayout::pinned_row_count) stay at the top; the others scroll under them.
  int RowTop(int row) const {
    return kRulerHeight + row * kRowHeight - (row < layout_.pinned_row_count() ? 0 : scroll_y_);
  }
  // The row at a widget y, or -1.
  int RowAt(int y) const;
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
  // `rank_jumps`: positions in `slices` where a path across ranks moves to another rank, each
  // joined to the slice before it by a link (drawn as a flow is, in the path's colour).
  void SetPathSlices(std::vector<uint32_t> slices, std::vector<size_t> rank_jumps = {});
  const std::vector<uint32_t>& path_slices() const { return path_; }
  const std::vector<size_t>& path_jumps() const { return path_jumps_; }
  static constexpr QRgb kPathColor = 0xffd0187a;
  // The search matches, marked on every row they are on (SearchMarks); empty: none.
  void SetSearchMatches(std::vector<uint32_t> slices);
  const SearchMarks& search_marks() const { return search_marks_; }
  // The bindings over the timeline (HelpOverlay): ? or F1 toggles, Esc closes.
  void ShowHelp(bool show);
  bool help_shown() const;
  // A line added to the tooltip of a slice (the comparison's verdict for it); empty: none.
  void SetSliceNote(std::function<QString(uint32_t slice)> note) { slice_note_ = std::move(note); }
  // Counter tracks (memory, GPU utilisation, launch delay, queue, the trace's counters), each
  // drawn under its device's header; they arrive with the analyses. Null: none.
  void SetCounterTracks(std::shared_ptr<const CounterTracks> counters);
  const CounterTracks* counter_tracks() const { return counters_.get(); }
  void SetCounterHidden(uint32_t counter, bool hidden);
  // The context menu of a counter's label (hide it, hide or show them all); null elsewhere.
  // The caller owns it.
  QMenu* CounterMenu(const QPoint& pos);
  // The tooltip at a widget position (HTML), empty where there is none.
  QString TooltipAt(const QPoint& pos) const;
  // This document's markers; after changing them from outside call MarkersEdited.
  MarkerSet& markers() { return markers_; }
  const MarkerSet& markers() const { return markers_; }
  void MarkersEdited();
  // Where M drops a marker: the selected slice's start, else the time under the cursor, else the
  // middle of the window.
  int64_t MarkerTime() const;

 public slots:
  void SelectSlice(int64_t slice);  // -1 clears
  // Selects a slice and brings it into view: expands what hides it, scrolls to its row and
  // zooms in when it is too narrow to see.
  void FocusSlice(uint32_t slice);
  // Selects a slice and scrolls (expanding what hides it) to its row; the time window stays.
  void RevealSlice(uint32_t slice);
  void ClearSelection();
  void SetShowFlows(bool show);
  // Slice labels with C++ kernel names whole instead of short (ShortKernelName); the tooltip
  // always holds the whole name.
  void SetFullNames(bool full) {
    full_names_ = full;
    label_cache_.clear();
    shown_names_.clear();
    update();
  }
  bool full_names() const { return full_names_; }
  // The text a slice named `name` shows in a box `max_chars` average characters wide.
  QString SliceLabel(trace::StringId name, uint32_t max_chars) { return Label(name, max_chars).text(); }
  void ZoomAtPx(double px, double factor);  // px within the time area
  void PanPx(double dx);
  void FitSelection();  // the selected slice or range, else everything
  void SetTrackHidden(uint32_t track, bool hidden);
  void SetTrackCollapsed(uint32_t track, bool collapsed);
  // After layout() was changed from outside (filter, pin, order): rows and scroll bar again.
  void LayoutChanged();
  // Adds a marker at MarkerTime() (M); returns its id.
  int64_t DropMarker();

 signals:
  void markersChanged();
  void sliceSelected(int64_t slice);
  void rangeSelected(int64_t begin_ns, int64_t end_ns);
  void searchMatchesChanged();
  // n / Shift+N, Enter / Shift+Enter: the next (forward) or previous search match is asked for.
  void searchStepRequested(bool forward);
  // The multi-selection or the area changed (cleared included).
  void selectionChanged();
  // A track's label was dragged to another place among its siblings; the layout has moved it.
  void trackMoved(uint32_t track);

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
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  double time_width() const;
  void ScrollTo(int y);
  void UpdateScrollBar();
  void EnsureRowVisible(int row);
  void PaintRuler(QPainter& painter, const TimeMapping& mapping);
  void PaintRows(QPainter& painter, const TimeMapping& mapping);
  // Rows [first, last), clipped to [clip_top, clip_bottom).
  void PaintRowRange(QPainter& painter, const TimeMapping& mapping, int first, int last, int clip_top, int clip_bottom);
  void PaintFlows(QPainter& painter, const TimeMapping& mapping);
  void PaintSelection(QPainter& painter, const TimeMapping& mapping);
  void PaintSearchMarks(QPainter& painter, const TimeMapping& mapping);
  void PaintArea(QPainter& painter, const TimeMapping& mapping);
  // The area of a Shift+drag from the press to `pos`: the tracks of the rows between.
  SelectedArea DraggedArea(const QPoint& pos) const;
  // A collapsed header's row: where any lane below it has work (top-level slices), as runs of
  // covered pixels, so a merge of many ranks collapsed to a row per rank still shows activity.
  void PaintActivity(QPainter& painter, const TimeMapping& mapping, uint32_t track, int y);
  // The boxes of the visible slice rows [first, last) into row_boxes_, and the columns of the
  // counters drawn from those rows into row_columns_, on two cores.
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

  // kLabel: pressed on a track's label (a click toggles a header); kTrack: that label dragged.
  enum class Drag { kNone, kPending, kPan, kRange, kLabel, kTrack };
  Drag drag_ = Drag::kNone;
  uint32_t dragged_track_ = 0;
  TrackLayout::SiblingDrop track_drop_;  // where the dragged track would go
  // Where a label dragged to widget y would put the dragged track (TrackLayout::DropAt).
  TrackLayout::SiblingDrop TrackDropAt(int y) const;
  void PaintTrackDrop(QPainter& painter);
  QPoint press_pos_;
  QPoint last_pos_;
  double range_anchor_ns_ = 0;
  QPoint cursor_pos_{-1, -1};

  const QStaticText& Label(trace::StringId name, uint32_t max_chars);

  std::vector<uint32_t> slice_colors_;  // overrides the op type colours when not empty
  std::vector<uint32_t> highlighted_;
  std::vector<uint32_t> path_;
  std::vector<size_t> path_jumps_;  // into path_, ascending
  SearchMarks search_marks_;
  HelpOverlay* help_ = nullptr;  // made when first shown
  MarkerSet markers_;
  std::function<QString(uint32_t)> slice_note_;
  std::vector<DrawBox> boxes_;  // reused between frames
  std::vector<std::vector<DrawBox>> row_boxes_;  // per visible row, reused between frames
  std::vector<std::vector<CounterColumn>> row_columns_;  // the same, for a counter's rows
  QFont label_font_;
  std::unordered_map<uint64_t, QStaticText> label_cache_;  // (name, chars) -> laid-out label
  bool full_names_ = false;
  struct ShownName {
    std::string text;  // the short form (or the whole name)
    uint32_t chars;    // its length in code points
  };
  std::unordered_map<trace::StringId, ShownName> shown_names_;
  std::shared_ptr<const CounterTracks> counters_;
};

}  // namespace stepscope::viewer
