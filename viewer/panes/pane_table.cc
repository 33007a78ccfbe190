// The pane table (pane_table.h): one entry per pane, in tab order.
#include "viewer/panes/pane_table.h"

#include <QCoreApplication>
#include <algorithm>

#include "base/check.h"
#include "viewer/load/document.h"
#include "viewer/panes/attribution_pane.h"
#include "viewer/panes/call_tree_pane.h"
#include "viewer/panes/critical_path_pane.h"
#include "viewer/panes/details_pane.h"
#include "viewer/panes/gpu_pane.h"
#include "viewer/panes/markers_pane.h"
#include "viewer/panes/memory_pane.h"
#include "viewer/panes/range_pane.h"
#include "viewer/panes/roofline_pane.h"
#include "viewer/panes/search_pane.h"
#include "viewer/panes/stats_pane.h"
#include "viewer/panes/steps_pane.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/panes/tracks_pane.h"

namespace stepscope::viewer {
namespace {

template <class P>
Pane* Create(PaneHost& host, QObject* parent) {
  return new P(host, parent);
}

}  // namespace

std::span<const PaneSpec> PaneTable() {
  static constexpr PaneSpec kPanes[] = {
      {DetailsPane::kId, "details", QT_TRANSLATE_NOOP("DocumentView", "Details"), &Create<DetailsPane>, nullptr, true},
      {StatsPane::kId, "stats", QT_TRANSLATE_NOOP("DocumentView", "Statistics"), &Create<StatsPane>, &StatsPane::Analyse},
      {RangePane::kId, "range", QT_TRANSLATE_NOOP("DocumentView", "Range"), &Create<RangePane>},
      // Computed for the timeline's selection when shown (call_tree_pane.h), not by the loader.
      {CallTreePane::kId, "call-tree", QT_TRANSLATE_NOOP("DocumentView", "Call tree"), &Create<CallTreePane>},
      {MemoryPane::kId, "memory", QT_TRANSLATE_NOOP("DocumentView", "Memory"), &Create<MemoryPane>, &MemoryPane::Analyse},
      {StepsPane::kId, "steps", QT_TRANSLATE_NOOP("DocumentView", "Steps"), &Create<StepsPane>, &StepsPane::Analyse},
      {GpuPane::kId, "gpu", QT_TRANSLATE_NOOP("DocumentView", "GPU"), &Create<GpuPane>, &GpuPane::Analyse},
      {CriticalPathPane::kId, "critical-path", QT_TRANSLATE_NOOP("DocumentView", "Critical path"),
       &Create<CriticalPathPane>, &CriticalPathPane::Analyse},
      {AttributionPane::kId, "attribution", QT_TRANSLATE_NOOP("DocumentView", "GPU attribution"),
       &Create<AttributionPane>, &AttributionPane::Analyse},
      // Computed from the inputs by the loader before it merged them (TraceDocument::rank_merge).
      {StragglersPane::kId, "stragglers", QT_TRANSLATE_NOOP("DocumentView", "Stragglers"), &Create<StragglersPane>, nullptr,
       true},
      {RooflinePane::kId, "roofline", QT_TRANSLATE_NOOP("DocumentView", "Roofline"), &Create<RooflinePane>,
       &RooflinePane::Analyse},
      {SearchPane::kId, "search", QT_TRANSLATE_NOOP("DocumentView", "Search"), &Create<SearchPane>, nullptr, true},
      {TracksPane::kId, "tracks", QT_TRANSLATE_NOOP("DocumentView", "Tracks"), &Create<TracksPane>, nullptr, true},
      {MarkersPane::kId, "markers", QT_TRANSLATE_NOOP("DocumentView", "Markers"), &Create<MarkersPane>, nullptr, true},
  };
  return kPanes;
}

const PaneSpec& PaneSpecOf(PaneId id) {
  const auto panes = PaneTable();
  const auto it = std::find_if(panes.begin(), panes.end(), [id](const PaneSpec& pane) { return pane.id == id; });
  STEPSCOPE_CHECK(it != panes.end());  // every PaneId has its entry
  return *it;
}

const PaneSpec* FindPane(std::string_view name) {
  for (const PaneSpec& pane : PaneTable()) {
    if (name == pane.name) return &pane;
  }
  return nullptr;
}

QString OverviewPaneHint(const QString& title, size_t ranks) {
  return QCoreApplication::translate("DocumentView",
                                     "%1 needs every slice of a rank. This overview of %2 ranks holds per rank its busy "
                                     "time, steps, collectives and longest slices.\n\nOpen ranks in full with File > Open "
                                     "Ranks in Detail (Ctrl+Shift+D) or a double-click on a rank's header.")
      .arg(title)
      .arg(ranks);
}

std::shared_ptr<const DocumentAnalysis> AnalyseDocument(const TraceDocument& document) {
  auto result = std::make_shared<DocumentAnalysis>();
  const bool overview = document.overview() != nullptr;
  for (const PaneSpec& pane : PaneTable()) {
    if (pane.analyse != nullptr && (!overview || pane.on_overview)) pane.analyse(document, *result);
  }
  result->counter_tracks = std::make_shared<const CounterTracks>(BuildCounterTracks(document.trace(), result->memory));
  return result;
}

}  // namespace stepscope::viewer
