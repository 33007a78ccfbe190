// The session probe (session_probe.h): on SIGUSR1 the window describes what it shows as JSON,
// for the scripted real-window session of tests/viewer/session. The signal handler only writes a
// byte to a socket pair; the description is made on the UI thread when Qt sees that byte.
#include "viewer/app/session_probe.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QSaveFile>
#include <QSocketNotifier>
#include <QStatusBar>
#include <QTabBar>
#include <QTimer>
#include <QToolBar>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/panes/call_tree_pane.h"
#include "viewer/panes/markers_pane.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/tracks_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/counter_tracks.h"
#include "viewer/timeline_data/markers.h"

namespace stepscope::viewer {
namespace {

// Slices listed per description at most: the sessions' traces show a few thousand at once; the
// count of all visible ones is given besides.
constexpr int kMaxSlices = 5000;

int signal_fds[2] = {-1, -1};  // written by the signal handler, read on the UI thread

void OnSignal(int) {
  const char byte = 1;
  // Nothing else is async-signal-safe here; a full pipe only drops a repeated request.
  [[maybe_unused]] const ssize_t written = ::write(signal_fds[0], &byte, 1);
}

QJsonObject Rect(const QWidget* widget, const QRect& local) {
  const QPoint global = widget->mapToGlobal(local.topLeft());
  return QJsonObject{{"x", global.x()}, {"y", global.y()}, {"w", local.width()}, {"h", local.height()}};
}

QJsonObject WidgetRect(const QWidget* widget) { return Rect(widget, widget->rect()); }

QString Describe(const QWidget* widget) {
  if (widget == nullptr) return {};
  QString text = QString::fromLatin1(widget->metaObject()->className());
  if (!widget->objectName().isEmpty()) text += '#' + widget->objectName();
  return text;
}

QJsonArray MenuItems(const QMenu* menu) {
  QJsonArray items;
  for (QAction* action : menu->actions()) {
    if (action->isSeparator() || !action->isVisible()) continue;
    QJsonObject item = Rect(menu, menu->actionGeometry(action));
    item["text"] = QString(action->text()).remove('&');
    item["enabled"] = action->isEnabled();
    item["active"] = menu->activeAction() == action;
    items.append(item);
  }
  return items;
}

QJsonObject DescribeTimeline(const DocumentView& view) {
  const TimelineView* timeline = view.timeline();
  const trace::Trace& trace = view.document().trace();
  QJsonObject out = WidgetRect(timeline);
  out["time_left"] = timeline->mapToGlobal(QPoint(kTimeAreaLeft, 0)).x();
  out["time_width"] = timeline->mapping().width_px();
  out["ruler_height"] = TimelineView::kRulerHeight;
  out["help_shown"] = timeline->help_shown();  // the key bindings over the timeline (? or F1)
  out["begin_ns"] = view.axis()->begin_ns();
  out["end_ns"] = view.axis()->end_ns();
  out["limit_begin_ns"] = view.axis()->limit_begin_ns();
  out["limit_end_ns"] = view.axis()->limit_end_ns();

  QJsonArray rows;
  const auto& layout_rows = timeline->layout().rows();
  for (int r = 0; r < timeline->row_count(); ++r) {
    const int top = timeline->RowTop(r);
    if (top + TimelineView::kRowHeight <= TimelineView::kRulerHeight || top >= timeline->height()) continue;
    const TimelineRow& row = layout_rows[static_cast<size_t>(r)];
    QJsonObject item = Rect(timeline, QRect(0, top, kTimeAreaLeft, TimelineView::kRowHeight));
    item["track"] = QString::fromUtf8(trace.str(trace.tracks()[row.track].name));
    item["header"] = row.kind == TimelineRow::Kind::kHeader;
    item["counter"] = row.kind == TimelineRow::Kind::kCounter;
    item["depth"] = row.depth;
    item["labelled"] = row.kind == TimelineRow::Kind::kHeader || row.first_of_track;
    if (row.kind == TimelineRow::Kind::kCounter && row.depth == 0 && timeline->counter_tracks() != nullptr) {
      // A counter's name and where its chart is drawn (its rows' time area).
      item["counter_name"] = QString::fromStdString(timeline->counter_tracks()->tracks()[row.counter].name);
      item["area"] = Rect(timeline, QRect(kTimeAreaLeft, top, timeline->mapping().width_px(),
                                          TrackLayout::kCounterRows * TimelineView::kRowHeight));
    }
    rows.append(item);
  }
  out["rows"] = rows;

  QJsonArray slices;
  int visible = 0;
  const QRect area = timeline->rect();
  for (uint32_t s = 0; s < trace.slices().size(); ++s) {
    const QRect rect = timeline->SliceRect(s).intersected(area);
    if (rect.isEmpty()) continue;
    ++visible;
    if (slices.size() >= kMaxSlices) continue;
    QJsonObject item = Rect(timeline, rect);
    item["index"] = static_cast<qint64>(s);
    item["name"] = QString::fromUtf8(trace.str(trace.slice_name(trace.slices()[s])));
    item["color"] = static_cast<qint64>(timeline->SliceColor(s) & 0xffffff);
    slices.append(item);
  }
  out["slices"] = slices;
  out["visible_slices"] = visible;

  const int64_t selected = timeline->selected_slice();
  if (selected >= 0) {
    QJsonObject item = Rect(timeline, timeline->SliceRect(static_cast<uint32_t>(selected)));
    item["index"] = static_cast<qint64>(selected);
    item["name"] = QString::fromUtf8(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(selected)])));
    out["selected"] = item;
  }
  // Outlined slices (the critical path) are drawn over by their outline when narrow.
  QJsonArray path;
  for (const uint32_t slice : timeline->path_slices()) path.append(static_cast<qint64>(slice));
  out["path"] = path;
  QJsonArray picked;  // Ctrl+clicked
  for (const uint32_t slice : timeline->selection().slices()) picked.append(static_cast<qint64>(slice));
  out["picked"] = picked;
  QJsonArray markers;
  for (const Marker& marker : timeline->markers().markers()) {
    const double x = timeline->mapping().NsToPx(static_cast<double>(marker.time_ns));
    markers.append(QJsonObject{{"label", QString::fromStdString(marker.label)},
                               {"time_ns", static_cast<qint64>(marker.time_ns)},
                               {"x", timeline->mapToGlobal(QPoint(kTimeAreaLeft + static_cast<int>(std::lround(x)), 0)).x()}});
  }
  out["markers"] = markers;
  if (const auto range = timeline->selected_range()) {
    out["range"] = QJsonArray{static_cast<qint64>(range->first), static_cast<qint64>(range->second)};
  }
  return out;
}

// The panes are docks, tabbed with their neighbours: each with whether it is in front (its tab
// the current one: DocumentView::PaneInFront), its page, the tab to click to bring it there and
// the group of tabs it is in (none when it has no neighbour or is closed).
QJsonObject DescribePanes(const DocumentView& view) {
  struct Tab {
    QString title;
    QJsonObject rect;
    int group;  // the tab bar, in the order found
  };
  std::vector<Tab> tabs;
  int groups = 0;
  for (const QTabBar* bar : view.findChildren<QTabBar*>()) {
    if (bar->parentWidget() != &view || !bar->isVisible()) continue;  // the main window's dock tabs
    for (int i = 0; i < bar->count(); ++i) tabs.push_back({bar->tabText(i), Rect(bar, bar->tabRect(i)), groups});
    ++groups;
  }
  QJsonArray docks;
  QJsonArray in_front;
  for (const PaneSpec& spec : PaneTable()) {
    const QDockWidget* dock = view.dock(spec.id);
    QJsonObject item{{"title", dock->windowTitle()}, {"name", QString::fromLatin1(spec.name)},
                     {"front", view.PaneInFront(spec.id)}, {"closed", !dock->toggleViewAction()->isChecked()}};
    if (view.PaneInFront(spec.id)) {
      item["page"] = WidgetRect(dock);
      in_front.append(dock->windowTitle());
    }
    for (const Tab& tab : tabs) {
      if (tab.title != dock->windowTitle()) continue;
      item["tab"] = tab.rect;
      item["group"] = tab.group;
    }
    docks.append(item);
  }
  return QJsonObject{{"docks", docks}, {"front", in_front}};
}

QJsonObject DescribeWindow(MainWindow& window) {
  QJsonObject out;
  out["window"] = WidgetRect(&window);
  out["title"] = window.windowTitle();
  out["active"] = window.isActiveWindow();
  const QWidget* focus = QApplication::focusWidget();
  out["focus"] = Describe(focus);
  out["focus_in_timeline"] = focus != nullptr && qobject_cast<const TimelineView*>(focus) != nullptr;
  out["status"] = window.statusBar()->currentMessage();
  out["window_lightness"] = window.palette().color(QPalette::Window).lightness();  // the theme

  out["errors"] = QJsonArray::fromStringList(window.errors());

  QJsonArray menubar;
  for (QAction* action : window.menuBar()->actions()) {
    QJsonObject item = Rect(window.menuBar(), window.menuBar()->actionGeometry(action));
    item["text"] = QString(action->text()).remove('&');
    menubar.append(item);
  }
  out["menubar"] = menubar;
  if (const auto* menu = qobject_cast<const QMenu*>(QApplication::activePopupWidget())) {
    out["menu"] = QJsonObject{{"title", QString(menu->title()).remove('&')}, {"items", MenuItems(menu)}};
  }
  if (const QWidget* modal = QApplication::activeModalWidget()) {
    QJsonObject dialog = WidgetRect(modal);
    dialog["class"] = Describe(modal);
    dialog["title"] = modal->windowTitle();
    out["dialog"] = dialog;
  }

  for (QToolBar* bar : window.findChildren<QToolBar*>()) {
    const auto* field = bar->findChild<QLineEdit*>();
    if (field == nullptr) continue;
    QJsonObject search = WidgetRect(field);
    search["text"] = field->text();
    search["focused"] = field->hasFocus();
    QStringList labels;
    for (const QLabel* label : bar->findChildren<QLabel*>()) labels << label->text();
    search["status"] = labels.join(' ').trimmed();
    out["search"] = search;
  }

  out["documents"] = window.document_count();
  if (const DocumentView* view = window.current_document()) {
    out["trace"] = QString::fromStdString(view->document().path());
    out["analysed"] = view->analysed();
    out["timeline"] = DescribeTimeline(*view);
    out["panes"] = DescribePanes(*view);
    QJsonArray listed;  // the Markers pane's rows
    const QListWidget* list = view->pane<MarkersPane>()->list();
    for (int i = 0; i < list->count(); ++i) listed.append(list->item(i)->text());
    out["markers_listed"] = listed;
    const CallTreePane* call_tree = view->pane<CallTreePane>();
    QJsonObject tree{{"caption", call_tree->caption()}, {"pending", call_tree->pending()}};
    if (const auto top_down = call_tree->top_down()) {
      QJsonArray top;  // the top-level names, largest first
      for (const uint32_t node : top_down->children_of(0)) top.append(QString::fromStdString(top_down->name(node)));
      tree["top"] = top;
      tree["slices"] = static_cast<qint64>(top_down->slices);
    }
    out["call_tree"] = tree;
    const QLineEdit* filter = view->pane<TracksPane>()->filter_box();
    QJsonObject tracks_filter = WidgetRect(filter);
    tracks_filter["text"] = filter->text();
    tracks_filter["visible"] = filter->isVisible();
    out["tracks_filter"] = tracks_filter;
  }
  return out;
}

void WriteDescription(MainWindow& window, const QString& path) {
  static int sequence = 0;
  QJsonObject description = DescribeWindow(window);
  description["sequence"] = ++sequence;
  // Written whole or not at all: the script waits for the file to appear.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(description).toJson()) < 0 || !file.commit()) {
    std::fprintf(stderr, "stepscope-view: session probe: cannot write %s\n", path.toLocal8Bit().constData());
  }
}

}  // namespace

void InstallSessionProbe(MainWindow& window) {
  const char* path = std::getenv("STEPSCOPE_VIEW_PROBE");
  if (path == nullptr || *path == '\0') return;
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, signal_fds) != 0) {
    std::perror("stepscope-view: session probe: socketpair");
    return;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
  auto* notifier = new QSocketNotifier(signal_fds[1], QSocketNotifier::Read, &window);
  const QString out = QString::fromLocal8Bit(path);
  QObject::connect(notifier, &QSocketNotifier::activated, &window, [&window, out] {
    char bytes[64];
    [[maybe_unused]] const ssize_t got = ::read(signal_fds[1], bytes, sizeof(bytes));
    // Input already delivered by the X server is handled first, so the description shows its
    // effect (the script also waits for the state it expects).
    QApplication::processEvents();
    WriteDescription(window, out);
  });
  // A first description once the event loop runs says the probe is installed: a SIGUSR1 sent
  // before this would end the process.
  QTimer::singleShot(0, &window, [&window, out] { WriteDescription(window, out); });
}

}  // namespace stepscope::viewer
