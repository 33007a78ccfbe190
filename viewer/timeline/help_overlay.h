// The keyboard and mouse bindings shown over the timeline (? or F1; Esc, ? or a click closes):
// a translucent panel covering the timeline, so the bindings are read next to what they act on.
// KeyBindingsHtml() is the one list, also shown by Help > Keys and Mouse.
#pragma once

#include <QWidget>

class QLabel;

namespace stepscope::viewer {

QString KeyBindingsHtml();

class HelpOverlay : public QWidget {
 public:
  // Covers `timeline` (and follows its size); starts hidden.
  explicit HelpOverlay(QWidget* timeline);
  QString text() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QLabel* label_;
};

}  // namespace stepscope::viewer
