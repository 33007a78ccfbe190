// The main window's layout (main_window.h): the View menu's list of panes and Reset Layout, and
// the window geometry and dock layout kept in the user's settings across runs.
#include <QAction>
#include <QCoreApplication>
#include <QDockWidget>
#include <QMenu>
#include <QSettings>
#include <QTabWidget>

#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/panes/pane_table.h"

namespace stepscope::viewer {

void MainWindow::BuildLayoutMenu(QMenu* view) {
  view->addSeparator();
  // The current trace's docks, each with its check box (shown or hidden); rebuilt when opened,
  // since each trace has docks of its own.
  QMenu* panes = view->addMenu(tr("&Panes"));
  connect(panes, &QMenu::aboutToShow, this, [this, panes] {
    panes->clear();
    DocumentView* doc = current_document();
    for (const PaneSpec& spec : PaneTable()) {
      if (doc == nullptr) {
        panes->addAction(QCoreApplication::translate("DocumentView", spec.title))->setEnabled(false);
      } else {
        panes->addAction(doc->dock(spec.id)->toggleViewAction());
      }
    }
  });
  view->addAction(tr("&Reset Layout"), this, &MainWindow::ResetLayout);
}

void MainWindow::SetRememberLayout(bool remember) {
  remember_layout_ = remember;
  if (!remember) return;
  const QByteArray geometry = QSettings().value(kGeometryKey).toByteArray();
  if (!geometry.isEmpty()) restoreGeometry(geometry);
}

void MainWindow::SaveLayout() {
  QSettings settings;
  settings.setValue(kGeometryKey, saveGeometry());
  // With no trace open there are no docks to save: the last saved layout stays.
  if (const DocumentView* doc = current_document()) settings.setValue(kDockLayoutKey, doc->SaveLayout());
}

void MainWindow::ForgetSavedLayout() {
  QSettings settings;
  settings.remove(kGeometryKey);
  settings.remove(kDockLayoutKey);
}

void MainWindow::ResetLayout() {
  ForgetSavedLayout();
  for (int i = 0; i < document_count(); ++i) document(i)->ResetLayout();
}

}  // namespace stepscope::viewer
