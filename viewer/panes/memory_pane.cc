// The memory pane (memory_pane.h): analysis::ComputeMemoryTimelines shown by MemoryPanel.
#include "viewer/panes/memory_pane.h"

#include <QTabWidget>

#include "viewer/load/document.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/panes/document_analysis.h"

namespace stepscope::viewer {

MemoryPane::MemoryPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  memory_panel_ = new MemoryPanel(host.shared_document(), host.axis(), host.panes());
  connect(memory_panel_, &MemoryPanel::sliceActivated, this, [this](uint32_t slice) { this->host().JumpToSlice(slice); });
  set_widget(memory_panel_);
}

void MemoryPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  into.memory = analysis::ComputeMemoryTimelines(document.trace());
}

void MemoryPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  // The charts share the analysis (the pointer aliases its memory field).
  memory_panel_->SetTimelines(std::shared_ptr<const std::vector<analysis::AllocatorTimeline>>(result, &result->memory));
}

}  // namespace stepscope::viewer
