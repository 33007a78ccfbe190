// The memory pane: each allocator's bytes in use over time, synced to the timeline
// (MemoryPanel); activating a point jumps to the allocation's op.
#pragma once

#include "viewer/panes/pane.h"

namespace stepscope::viewer {

class MemoryPanel;

class MemoryPane : public Pane {
 public:
  static constexpr PaneId kId = kMemoryPane;
  MemoryPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  MemoryPanel* memory_panel() const { return memory_panel_; }

 private:
  MemoryPanel* memory_panel_;
};

}  // namespace stepscope::viewer
