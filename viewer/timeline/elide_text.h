// Text cut to a width in pixels by leaving out its middle the way ElideMiddle (base/display_names.h)
// does: a lane keeps its device and stream, an op its type. Qt's own Qt::ElideMiddle cuts at the
// centre, which loses the end that tells slices and lanes apart.
#pragma once

#include <QFontMetrics>
#include <QString>

namespace stepscope::viewer {

// The longest ElideMiddle form of `text` whose width under `metrics` is at most `width_px`
// ("…" when not even that fits).
QString ElideMiddleToWidth(const QFontMetrics& metrics, const QString& text, int width_px);

}  // namespace stepscope::viewer
