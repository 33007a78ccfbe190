// Tables and cells shared by the panes (pane_widgets.h).
#include "viewer/panes/pane_widgets.h"

#include <QHeaderView>
#include <QTableView>
#include <QTableWidget>

#include "base/units.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {

QTableView* MakeModelTable(QAbstractItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->setSortingEnabled(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  table->verticalHeader()->setDefaultSectionSize(20);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table->horizontalHeader()->setDefaultSectionSize(90);
  return table;
}

QTableWidget* MakeTable(const QStringList& headers, QWidget* parent) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  table->setHorizontalHeaderLabels(headers);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setAlternatingRowColors(true);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(20);
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

QString DurationText(int64_t ns) { return QString::fromStdString(FormatDuration(ns)); }
QString DurationText(double ns) { return QString::fromStdString(FormatDuration(ns)); }

QTableWidgetItem* DurationItem(int64_t ns) {
  auto* item = new QTableWidgetItem(DurationText(ns));
  item->setData(kSortRole, QVariant::fromValue<qint64>(ns));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QTableWidgetItem* CountItem(int64_t count) {
  auto* item = new QTableWidgetItem(QString::number(count));
  item->setData(kSortRole, QVariant::fromValue<qint64>(count));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

}  // namespace stepscope::viewer
