// Checks the image `stepscope-view --screenshot` wrote (ctest viewer_screenshot_image, after
// viewer_screenshot_cli): it has the requested size, and where the timeline draws a slice of the
// trace the image shows that slice's colour. The slice rectangles come from laying out the same
// window offscreen at the same size, as the screenshot mode does.
//   viewer_screenshot_check IMAGE.png TRACE WIDTHxHEIGHT
// Exit 0 when the image passes, 1 (with the reasons) when it does not, 2 on bad arguments.
#include <QApplication>
#include <QImage>
#include <QRegularExpression>
#include <cstdio>
#include <cstdlib>

#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/document.h"
#include "viewer/load/trace_loader.h"
#include "viewer/timeline/timeline_view.h"

namespace {

using stepscope::viewer::DocumentView;
using stepscope::viewer::MainWindow;
using stepscope::viewer::TimelineView;

// Slices narrower than this are drawn folded or share pixels with neighbours: not checked.
constexpr int kMinCheckedWidthPx = 3;
// A screenshot of the sample shows hundreds of such slices; a handful means the layout broke.
constexpr int kMinCheckedSlices = 20;

int Fail(const QString& message) {
  std::fprintf(stderr, "viewer_screenshot_check: %s\n", message.toLocal8Bit().constData());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: viewer_screenshot_check IMAGE.png TRACE WIDTHxHEIGHT\n");
    return 2;
  }
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("stepscope");
  QApplication::setApplicationName("stepscope-view");
  const QString image_path = QString::fromLocal8Bit(argv[1]);
  const QString trace_path = QString::fromLocal8Bit(argv[2]);
  const auto size_match = QRegularExpression("^(\\d+)x(\\d+)$").match(QString::fromLocal8Bit(argv[3]));
  if (!size_match.hasMatch()) {
    std::fprintf(stderr, "viewer_screenshot_check: size wants WIDTHxHEIGHT\n");
    return 2;
  }
  const QSize size(size_match.captured(1).toInt(), size_match.captured(2).toInt());

  const QImage image(image_path);
  if (image.isNull()) return Fail(image_path + ": not a readable image");
  if (image.size() != size) {
    return Fail(QStringLiteral("%1 is %2x%3, expected %4x%5")
                    .arg(image_path)
                    .arg(image.width())
                    .arg(image.height())
                    .arg(size.width())
                    .arg(size.height()));
  }

  // The window as --screenshot lays it out.
  MainWindow window(/*interactive=*/false);
  window.resize(size);
  window.show();
  window.Open({trace_path}, /*merge=*/false);
  window.loader()->WaitForIdle();
  if (window.document_count() == 0) return Fail(trace_path + ": could not be opened");
  DocumentView* document = window.current_document();
  document->ShowPane(stepscope::viewer::kDefaultPane);
  QApplication::processEvents();
  const TimelineView* timeline = document->timeline();
  const auto& slices = document->document().trace().slices();

  int checked = 0;
  int missing = 0;
  QString first_missing;
  const QRect visible = timeline->rect();
  for (uint32_t s = 0; s < slices.size(); ++s) {
    const QRect rect = timeline->SliceRect(s).intersected(visible);
    if (rect.width() < kMinCheckedWidthPx || rect.height() < 3) continue;
    const QRect in_image(timeline->mapTo(&window, rect.topLeft()), rect.size());
    const QRgb expected = document->document().ColorOf(slices[s]) & 0xffffff;
    bool found = false;
    for (int y = in_image.top(); y <= in_image.bottom() && !found; ++y) {
      for (int x = in_image.left(); x <= in_image.right() && !found; ++x) {
        found = (image.pixel(x, y) & 0xffffff) == expected;
      }
    }
    ++checked;
    if (!found) {
      if (missing++ == 0) {
        first_missing = QStringLiteral("slice %1 at (%2,%3) %4x%5 has none of its colour #%6")
                            .arg(s)
                            .arg(in_image.x())
                            .arg(in_image.y())
                            .arg(in_image.width())
                            .arg(in_image.height())
                            .arg(expected, 6, 16, QLatin1Char('0'));
      }
    }
  }
  if (checked < kMinCheckedSlices) {
    return Fail(QStringLiteral("only %1 slices are wide enough to check (want >= %2)")
                    .arg(checked)
                    .arg(kMinCheckedSlices));
  }
  if (missing > 0) {
    return Fail(QStringLiteral("%1 of %2 slices missing from %3; first: %4")
                    .arg(missing)
                    .arg(checked)
                    .arg(image_path)
                    .arg(first_missing));
  }
  std::printf("%s: %dx%d, %d slices drawn where the timeline lays them out\n",
              image_path.toLocal8Bit().constData(), image.width(), image.height(), checked);
  return 0;
}
