// The building blocks the panes share: tables set up alike, and cells that show a duration or a
// count and sort by its exact value (kSortRole).
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>

class QAbstractItemModel;
class QTableView;
class QTableWidget;
class QTableWidgetItem;
class QWidget;

namespace stepscope::viewer {

// A sortable table over a model: rows selected whole, alternating colours, no row header.
QTableView* MakeModelTable(QAbstractItemModel* model, QWidget* parent);
// A read-only table with these column headers, one row selected at a time, the last column
// stretched.
QTableWidget* MakeTable(const QStringList& headers, QWidget* parent);

// A duration as the CLI's reports print it (FormatDuration, base/units.h): "1.234 ms"; a double
// is rounded to the nearest ns.
QString DurationText(int64_t ns);
QString DurationText(double ns);
// A cell holding a duration: its text, and the exact ns under kSortRole.
QTableWidgetItem* DurationItem(int64_t ns);
// A cell holding a count, sorted as a number.
QTableWidgetItem* CountItem(int64_t count);

}  // namespace stepscope::viewer
