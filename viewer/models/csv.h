// CSV of what a table view shows (after sorting and filtering): the header row, then each row
// with raw values where the model offers them (kSortRole) so numbers stay numbers. RFC 4180
// quoting.
#pragma once

#include <QAbstractItemModel>
#include <QString>

namespace stepscope::viewer {

QString TableToCsv(const QAbstractItemModel& model);

}  // namespace stepscope::viewer
