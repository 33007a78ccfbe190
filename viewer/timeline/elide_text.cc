// ElideMiddleToWidth (elide_text.h): a binary search over ElideMiddle's character budget.
#include "viewer/timeline/elide_text.h"

#include <string>

#include "base/display_names.h"

namespace stepscope::viewer {

QString ElideMiddleToWidth(const QFontMetrics& metrics, const QString& text, int width_px) {
  if (metrics.horizontalAdvance(text) <= width_px) return text;
  const std::string utf8 = text.toStdString();
  // Widths grow with the budget: the largest budget that fits, between 1 and the text's length.
  size_t low = 1, high = Utf8Length(utf8);
  QString best = QString::fromStdString(ElideMiddle(utf8, 1));
  while (low < high) {
    const size_t mid = (low + high) / 2;
    QString candidate = QString::fromStdString(ElideMiddle(utf8, mid));
    if (metrics.horizontalAdvance(candidate) <= width_px) {
      best = std::move(candidate);
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return best;
}

}  // namespace stepscope::viewer
