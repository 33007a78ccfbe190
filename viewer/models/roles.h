// Item roles shared by the viewer's models, so views, proxies and the CSV export agree.
#pragma once

#include <Qt>

namespace stepscope::viewer {

enum ItemRole : int {
  kSortRole = Qt::UserRole + 1,  // raw value for sorting and CSV (numbers as numbers)
  kSliceRole,                    // slice index to jump to (uint), invalid when none
  kTrackRole,                    // track index (uint)
  kTimeRole,                     // trace time in ns (qint64)
};

}  // namespace stepscope::viewer
