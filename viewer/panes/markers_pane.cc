// The markers pane (markers_pane.h): the timeline's MarkerSet as an editable list.
#include "viewer/panes/markers_pane.h"

#include <QHBoxLayout>
#include <QAction>
#include <QListWidget>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

#include "base/units.h"
#include "viewer/load/document.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

namespace {
constexpr int kIdRole = Qt::UserRole + 1;
}  // namespace

MarkersPane::MarkersPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  list_ = new QListWidget(pane);
  list_->setToolTip(tr("M on the timeline drops a marker; double-click jumps to it, F2 renames, Delete removes"));
  new EmptyHint(list_, tr("No markers yet: press M on the timeline to drop one at the selected slice or the cursor."));
  auto* jump = new QPushButton(tr("Jump"), pane);
  auto* remove = new QPushButton(tr("Delete"), pane);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(jump);
  buttons->addWidget(remove);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(list_);
  layout->addLayout(buttons);
  connect(list_, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) { JumpTo(list_->row(item)); });
  connect(jump, &QPushButton::clicked, this, [this] { JumpTo(list_->currentRow()); });
  connect(remove, &QPushButton::clicked, this, [this] { Delete(list_->currentRow()); });
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    if (!refilling_) Rename(list_->row(item), item->text().section(QStringLiteral("  @ "), 0, 0));
  });
  auto* del = new QAction(list_);
  del->setShortcut(QKeySequence::Delete);
  del->setShortcutContext(Qt::WidgetShortcut);
  connect(del, &QAction::triggered, this, [this] { Delete(list_->currentRow()); });
  list_->addAction(del);
  connect(host.timeline(), &TimelineView::markersChanged, this, &MarkersPane::Refill);
  set_widget(pane);
  Refill();
}

void MarkersPane::Refill() {
  refilling_ = true;
  list_->clear();
  const int64_t base = host().document().trace().span_begin_ns();
  for (const Marker& m : host().timeline()->markers().markers()) {
    // The time after the label is shown, not edited: a rename keeps what is before "  @ ".
    const std::string at = FormatDurationSignificant(static_cast<double>(m.time_ns - base));
    auto* item = new QListWidgetItem(QString::fromStdString(m.label) + "  @ +" + QString::fromStdString(at));
    item->setData(kIdRole, QVariant::fromValue<qlonglong>(m.id));
    item->setFlags(item->flags() | Qt::ItemIsEditable);
    list_->addItem(item);
  }
  refilling_ = false;
}

int64_t MarkersPane::IdOf(int row) const {
  const QListWidgetItem* item = row >= 0 ? list_->item(row) : nullptr;
  return item != nullptr ? item->data(kIdRole).toLongLong() : -1;
}

void MarkersPane::JumpTo(int row) {
  const Marker* m = host().timeline()->markers().Find(IdOf(row));
  if (m == nullptr) return;
  TimeAxis* axis = host().axis();
  const double half = (axis->end_ns() - axis->begin_ns()) / 2;
  axis->SetRange(static_cast<double>(m->time_ns) - half, static_cast<double>(m->time_ns) + half);
  host().ShowStatus(tr("marker %1").arg(QString::fromStdString(m->label)));
}

void MarkersPane::Rename(int row, const QString& label) {
  if (label.trimmed().isEmpty()) return;
  if (host().timeline()->markers().Rename(IdOf(row), label.trimmed().toStdString())) host().timeline()->MarkersEdited();
}

void MarkersPane::Delete(int row) {
  if (host().timeline()->markers().Remove(IdOf(row))) host().timeline()->MarkersEdited();
}

}  // namespace stepscope::viewer
