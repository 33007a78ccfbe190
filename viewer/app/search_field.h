// The search box: a line edit that hands the keyboard back to the timeline. Enter asks for the
// next match and Shift+Enter for the previous one, Esc for nothing more; the window then
// returns the focus to the timeline, so 0, W/S and n / Shift+N act there at once.
#pragma once

#include <QLineEdit>

namespace stepscope::viewer {

class SearchField : public QLineEdit {
  Q_OBJECT

 public:
  using QLineEdit::QLineEdit;

 signals:
  void stepRequested(bool forward);
  void leaveRequested();

 protected:
  void keyPressEvent(QKeyEvent* event) override;
};

}  // namespace stepscope::viewer
