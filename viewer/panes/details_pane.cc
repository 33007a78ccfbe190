// The details pane (details_pane.h): follows the timeline's selection.
#include "viewer/panes/details_pane.h"

#include <QAction>
#include <QDockWidget>
#include <QHeaderView>
#include <QTabWidget>
#include <QTreeView>

#include "base/display_names.h"
#include "base/units.h"
#include "viewer/load/document.h"
#include "viewer/models/roles.h"
#include "viewer/models/slice_details_model.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

// Whether the dock holding `widget` is open, in front or behind another's tab (its View > Panes
// entry is checked): not closed by the user. Outside a dock, open.
bool DockOpen(const QWidget* widget) {
  for (; widget != nullptr; widget = widget->parentWidget()) {
    if (const auto* dock = qobject_cast<const QDockWidget*>(widget)) return dock->toggleViewAction()->isChecked();
  }
  return true;
}

}  // namespace

DetailsPane::DetailsPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  details_model_ = new SliceDetailsModel(this);
  details_view_ = new QTreeView(host.panes());
  details_view_->setModel(details_model_);
  details_view_->setAlternatingRowColors(true);
  details_view_->header()->setDefaultSectionSize(220);
  connect(details_view_, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) this->host().JumpToSlice(slice.toUInt());
  });
  connect(host.timeline(), &TimelineView::sliceSelected, this, &DetailsPane::ShowDetails);
  new EmptyHint(details_view_, tr("Click a slice on the timeline (or double-click a row of another pane) to see its "
                                   "name, times, place, arguments and flows here."));
  set_widget(details_view_);
}

void DetailsPane::ShowDetails(int64_t slice) {
  if (slice < 0) {
    details_model_->ShowNothing();
    return;
  }
  const TraceDocument& document = host().document();
  details_model_->ShowSlice(document, static_cast<uint32_t>(slice));
  details_view_->expandToDepth(0);
  // To the front of its tab group, but not reopened once the user closed it.
  if (DockOpen(details_view_)) host().ShowPane(kId);
  const trace::Trace& trace = document.trace();
  const trace::Slice& s = trace.slices()[static_cast<size_t>(slice)];
  const std::string_view name = trace.str(trace.slice_name(s));
  host().ShowStatus(tr("%1 (%2), %3")
                        .arg(QString::fromStdString(host().timeline()->full_names() ? std::string(name)
                                                                                    : ShortKernelName(name)),
                             QString::fromUtf8(trace.str(trace.slice_op_type(s))),
                             QString::fromStdString(FormatDurationSignificant(static_cast<double>(s.dur_ns)))));
}

}  // namespace stepscope::viewer
