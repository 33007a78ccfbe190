// The pane table: for each pane docked around the timeline its id, its name on the command
// line, its dock's title, how it is created and, for a pane that shows an analysis, how that is
// computed. The docks (DocumentView), the analyses the loader runs (AnalyseDocument) and stepscope-view's
// --pane all read it, so a new pane is one entry here (plus its class, pane.h).
#pragma once

#include <QObject>
#include <QString>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "viewer/panes/document_analysis.h"
#include "viewer/panes/pane.h"

namespace stepscope::viewer {

struct PaneSpec {
  PaneId id;
  const char* name;   // on the command line: --pane NAME
  const char* title;  // on its dock's tab (translated)
  Pane* (*create)(PaneHost& host, QObject* parent);
  // Only for a pane that shows an analysis: computes it into its field (off the UI thread);
  // the pane's ShowAnalysis shows it once it has arrived.
  void (*analyse)(const TraceDocument& document, DocumentAnalysis& into) = nullptr;
  // Whether it means something on an overview of ranks (viewer/load/overview.h), which holds per
  // rank only summary slices (busy runs, steps, collectives, longest slices): a pane that reads
  // every slice (statistics, memory, call tree, ...) is not analysed there and says how to open
  // ranks in full instead.
  bool on_overview = false;
};

// What a pane that is not shown on an overview of `ranks` ranks says in its place.
QString OverviewPaneHint(const QString& title, size_t ranks);

// In tab order.
std::span<const PaneSpec> PaneTable();
const PaneSpec& PaneSpecOf(PaneId id);
// By its name on the command line; null when no pane has that name.
const PaneSpec* FindPane(std::string_view name);

// Runs every pane's analysis on `document` (off the UI thread: the loader calls it).
std::shared_ptr<const DocumentAnalysis> AnalyseDocument(const TraceDocument& document);

}  // namespace stepscope::viewer
