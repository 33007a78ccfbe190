// View > Theme: light, dark, or the system's palette, for the whole application (the timeline
// follows the palette, timeline_colors.h), remembered across runs in QSettings under kThemeKey.
#pragma once

#include <QString>

class QMenu;

namespace stepscope::viewer {

enum class Theme { kSystem, kLight, kDark };
inline constexpr char kThemeKey[] = "view/theme";

QString ThemeName(Theme theme);  // "system", "light", "dark"
// The theme saved last (kSystem when none or unknown).
Theme SavedTheme();
// Sets the application's palette (and the Fusion style, which honours it); saves the choice
// when `save`.
void ApplyTheme(Theme theme, bool save = true);
// Adds the Theme submenu (exclusive light / dark / system) to `view`, checked as saved.
QMenu* AddThemeMenu(QMenu* view);

}  // namespace stepscope::viewer
