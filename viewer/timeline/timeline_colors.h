// The timeline's own colours (bands, ruler, grid, labels, the selection's outline) for a light
// and a dark window: the dark set is taken when the widget's palette is dark (View > Theme), so
// the timeline follows the theme without being told. Slice colours stay the op type's hues, light
// enough for black labels on either background.
#pragma once

#include <QColor>

class QPalette;

namespace stepscope::viewer {

struct TimelineColors {
  QColor background, stripe, header_band, ruler_band, grid;
  QColor ruler_text, header_text, lane_text, separator;
  QColor selection;    // the selected slice's outline
  QColor highlighted;  // outlines of the slices the comparison points at
};

// Dark when the palette's base (a view's background) is dark.
bool IsDarkPalette(const QPalette& palette);
const TimelineColors& TimelineColorsFor(const QPalette& palette);

}  // namespace stepscope::viewer
