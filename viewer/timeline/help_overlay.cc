// HelpOverlay (help_overlay.h): the bindings table on a translucent panel over the timeline.
#include "viewer/timeline/help_overlay.h"

#include <QEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QVBoxLayout>

namespace stepscope::viewer {

QString KeyBindingsHtml() {
  return QObject::tr(
      "<table cellspacing='4'>"
      "<tr><td><b>W / S</b></td><td>zoom in / out at the cursor</td></tr>"
      "<tr><td><b>A / D</b>, arrows</td><td>pan left / right</td></tr>"
      "<tr><td><b>Ctrl+wheel</b></td><td>zoom at the cursor</td></tr>"
      "<tr><td><b>wheel</b>, Shift+wheel</td><td>scroll rows, pan</td></tr>"
      "<tr><td><b>drag</b></td><td>pan</td></tr>"
      "<tr><td><b>click</b></td><td>select a slice (Details pane)</td></tr>"
      "<tr><td><b>double-click</b>, F</td><td>fit the slice or range</td></tr>"
      "<tr><td><b>0</b>, Home</td><td>fit all</td></tr>"
      "<tr><td><b>Shift+drag</b>, drag on the ruler</td><td>select a time range (Range pane)</td></tr>"
      "<tr><td><b>L</b></td><td>flows of the selected slice on/off (to the edge when an end is off-screen)</td></tr>"
      "<tr><td><b>M</b></td><td>marker at the selected slice or the cursor (Markers pane)</td></tr>"
      "<tr><td><b>Esc</b></td><td>clear the selection; in the search box: back to the timeline</td></tr>"
      "<tr><td><b>Ctrl+F</b></td><td>search slice names and op types</td></tr>"
      "<tr><td><b>Enter</b> / Shift+Enter, <b>n</b> / Shift+N, F3 / Shift+F3</td><td>next / previous match</td></tr>"
      "<tr><td><b>click</b> on the match strip</td><td>go to the match there</td></tr>"
      "<tr><td><b>?</b>, F1</td><td>this help; Esc closes it</td></tr>"
      "</table>");
}

HelpOverlay::HelpOverlay(QWidget* timeline) : QWidget(timeline), label_(new QLabel(this)) {
  setObjectName(QStringLiteral("help_overlay"));
  label_->setText(QObject::tr("<h3>Keys and mouse</h3>") + KeyBindingsHtml() +
                  QObject::tr("<p>Esc, ? or a click closes this.</p>"));
  label_->setTextFormat(Qt::RichText);
  label_->setStyleSheet(QStringLiteral("QLabel { color: #f0f2f6; }"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(label_, 0, Qt::AlignCenter);
  timeline->installEventFilter(this);
  setGeometry(timeline->rect());
  hide();
}

QString HelpOverlay::text() const { return label_->text(); }

bool HelpOverlay::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() && event->type() == QEvent::Resize) setGeometry(parentWidget()->rect());
  return false;
}

void HelpOverlay::paintEvent(QPaintEvent*) {
  // Dark and translucent in either theme: the timeline shows through, the text stays legible.
  QPainter painter(this);
  painter.fillRect(rect(), QColor(0x10, 0x12, 0x18, 0xd8));
}

void HelpOverlay::mousePressEvent(QMouseEvent* event) {
  hide();
  event->accept();
}

}  // namespace stepscope::viewer
