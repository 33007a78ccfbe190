// The window set-up the viewer's window tests share: settings kept in a temporary directory (never
// the user's), a main window opened offscreen on one trace as `stepscope-view TRACE` opens it,
// and a track found by its name.
#pragma once

#include <QApplication>
#include <QCoreApplication>
#include <QSettings>
#include <QSize>
#include <QString>
#include <QTemporaryDir>
#include <cstdint>
#include <memory>
#include <string_view>

#include "profiler/trace/trace.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"

namespace stepscope::testing {

// Every QSettings of this process reads and writes a file in `dir`, under `application`'s name.
// False when that did not take (the test must not touch the user's settings then).
inline bool UseTemporarySettings(const QTemporaryDir& dir, const char* application) {
  if (!dir.isValid()) return false;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  QCoreApplication::setOrganizationName("stepscope-test");
  QCoreApplication::setApplicationName(application);
  return QSettings().fileName().startsWith(dir.path());
}

struct WindowOptions {
  QSize size{1400, 800};
  // Whether the window saves its layout (docks, track order) when it closes and restores it
  // when it opens a trace.
  bool remember_layout = false;
};

// A window showing `trace_path`, loaded and laid out, with the events its load posted handled.
inline std::unique_ptr<viewer::MainWindow> OpenTraceWindow(const QString& trace_path, const WindowOptions& options = {}) {
  auto window = std::make_unique<viewer::MainWindow>(/*interactive=*/false);
  window->SetRememberLayout(options.remember_layout);
  window->resize(options.size);
  window->show();
  window->Open({trace_path});
  window->loader()->WaitForIdle();
  QApplication::processEvents();
  return window;
}

// The first track named `name` (its short name: "stream:15", "ops"), or -1.
inline int64_t TrackNamed(const trace::Trace& trace, std::string_view name) {
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace.str(trace.tracks()[t].name) == name) return t;
  }
  return -1;
}

}  // namespace stepscope::testing
