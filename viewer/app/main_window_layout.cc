// The main window's layout (main_window.h): the View menu's list of panes and Reset Layout, and
// the window geometry and dock layout kept in the user's settings across runs.
#include <QAction>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDockWidget>
#include <QMenu>
#include <QSettings>
#include <QTabWidget>

#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/tracks_pane.h"

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
  for (int i = 0; i < document_count(); ++i) SaveTrackOrder(document(i));
}

namespace {

// A trace's settings key: its path hashed (a path's slashes would make settings groups).
QString TrackOrderKey(const char* group, const DocumentView* view) {
  const QByteArray path = QByteArray::fromStdString(view->document().path());
  return QString::fromLatin1(group) + "/" + QString::fromLatin1(QCryptographicHash::hash(path, QCryptographicHash::Sha1).toHex());
}

// Each group's keys joined by a character no track name holds.
constexpr QChar kKeySeparator = QChar(0x1d);

}  // namespace

void MainWindow::SaveTrackOrder(const DocumentView* view) const {
  const SavedTrackOrder order = view->pane<TracksPane>()->SaveOrder();
  QSettings settings;
  const QString key = TrackOrderKey(kTrackOrderGroup, view);
  if (order.empty()) {
    settings.remove(key);  // back in the trace's own order
    return;
  }
  QStringList groups;
  for (const std::vector<std::string>& group : order) {
    QStringList keys;
    for (const std::string& name : group) keys << QString::fromStdString(name);
    groups << keys.join(kKeySeparator);
  }
  settings.setValue(key, groups);
}

void MainWindow::RestoreTrackOrder(DocumentView* view) const {
  const QStringList groups = QSettings().value(TrackOrderKey(kTrackOrderGroup, view)).toStringList();
  if (groups.isEmpty()) return;
  SavedTrackOrder order;
  for (const QString& group : groups) {
    std::vector<std::string>& keys = order.emplace_back();
    for (const QString& name : group.split(kKeySeparator)) keys.push_back(name.toStdString());
  }
  view->pane<TracksPane>()->RestoreOrder(order);
}

void MainWindow::ForgetSavedLayout() {
  QSettings settings;
  settings.remove(kGeometryKey);
  settings.remove(kDockLayoutKey);
  settings.remove(kTrackOrderGroup);
}

void MainWindow::ResetLayout() {
  ForgetSavedLayout();
  for (int i = 0; i < document_count(); ++i) document(i)->ResetLayout();
}

}  // namespace stepscope::viewer
