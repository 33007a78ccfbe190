// A test hook for driving the real window from outside (tests/viewer/session): with
// STEPSCOPE_VIEW_PROBE=FILE in the environment, each SIGUSR1 makes the window write FILE, a JSON
// description of what it shows, in screen coordinates: the window, the focus, the open menu or
// dialog with the rectangles of its items, the timeline's time window, rows, selection and the
// slices drawn with their colours, the pane tabs and the search bar. A script finds where to
// click from it (never a hard-coded pixel) and checks a screenshot against it. Without the
// variable nothing is installed.
#pragma once

namespace stepscope::viewer {

class MainWindow;

// Installs the probe on `window` when STEPSCOPE_VIEW_PROBE is set; otherwise does nothing.
void InstallSessionProbe(MainWindow& window);

}  // namespace stepscope::viewer
