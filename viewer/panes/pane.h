// A pane beside the timeline (a dock of the document view): one class per pane (viewer/panes/<name>_pane.h/.cc), listed once
// in the pane table (pane_table.cc). A pane builds its widget when it is created, reaches the
// rest of the document view only through PaneHost, and, if it shows an analysis, is handed the
// document's DocumentAnalysis once the loader has computed it (ShowAnalysis).
//
// A new pane: copy a neighbour (details_pane.* has no analysis, steps_pane.* has one), give it
// a PaneId, add one entry to the table; an analysis adds its result's field to DocumentAnalysis.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>

class QWidget;

namespace stepscope::viewer {

struct DocumentAnalysis;
class TimeAxis;
class TimelineView;
class TraceDocument;

// Every pane, in tab order (the table's order).
enum PaneId {
  kDetailsPane,
  kStatsPane,
  kRangePane,
  kCallTreePane,
  kMemoryPane,
  kStepsPane,
  kGpuPane,
  kCriticalPathPane,
  kAttributionPane,
  kStragglersPane,
  kRooflinePane,
  kSearchPane,
  kTracksPane,
  kMarkersPane
};
inline constexpr PaneId kDefaultPane = kStatsPane;  // shown first, and --pane's default

// What a pane may use of the view that holds it: the document, the timeline and its axis, the
// parent for its widget, and the view's few actions (the document view implements it).
class PaneHost {
 public:
  virtual ~PaneHost() = default;
  virtual const TraceDocument& document() const = 0;
  virtual std::shared_ptr<const TraceDocument> shared_document() const = 0;
  virtual TimeAxis* axis() const = 0;
  virtual TimelineView* timeline() const = 0;
  // The parent of the panes' widgets (each is moved into its dock).
  virtual QWidget* panes() const = 0;
  // Brings a pane to the front (shown, and its tab the current one of its dock group).
  virtual void ShowPane(PaneId pane) = 0;
  // Whether the pane is on screen now: shown and not behind another pane's tab.
  virtual bool PaneInFront(PaneId pane) const = 0;
  // Selects the slice on the timeline and scrolls to it; the pane in front stays in front.
  virtual void JumpToSlice(uint32_t slice) = 0;
  // A line for the window's status bar.
  virtual void ShowStatus(const QString& message) = 0;
};

class Pane : public QObject {
  Q_OBJECT

 public:
  Pane(PaneHost& host, QObject* parent) : QObject(parent), host_(host) {}
  // The widget in the pane's dock (owned by the dock once added).
  QWidget* widget() const { return widget_; }
  // For a pane whose table entry has an `analyse`: its result arrived (on the UI thread).
  virtual void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& /*analysis*/) {}
  // The pane came on screen (its dock shown, or its tab made the current one).
  virtual void Shown() {}

 protected:
  PaneHost& host() const { return host_; }
  void set_widget(QWidget* widget) { widget_ = widget; }

 private:
  PaneHost& host_;
  QWidget* widget_ = nullptr;
};

}  // namespace stepscope::viewer
