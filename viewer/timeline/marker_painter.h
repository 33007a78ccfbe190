// The markers on the timeline: a vertical line per marker across the rows, its label in a flag
// on the ruler (MarkerSet, viewer/timeline_data/markers.h).
#pragma once

#include <QColor>

#include "viewer/timeline_data/markers.h"
#include "viewer/timeline_data/time_mapping.h"

class QPainter;

namespace stepscope::viewer {

inline constexpr QRgb kMarkerColor = 0xff7b2fbe;

// Paints the markers inside the time area [kTimeAreaLeft, kTimeAreaLeft + width_px) from the
// ruler's top (`top`) to `bottom`; markers outside the window are skipped.
void PaintMarkers(QPainter& painter, const TimeMapping& mapping, const MarkerSet& markers, int top, int bottom,
                  int ruler_height);

}  // namespace stepscope::viewer
