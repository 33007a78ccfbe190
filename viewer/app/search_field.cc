// SearchField (search_field.h): Enter, Shift+Enter and Esc turned into requests.
#include "viewer/app/search_field.h"

#include <QKeyEvent>

namespace stepscope::viewer {

void SearchField::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Return:
    case Qt::Key_Enter:
      emit stepRequested(!(event->modifiers() & Qt::ShiftModifier));
      event->accept();
      return;
    case Qt::Key_Escape:
      emit leaveRequested();
      event->accept();
      return;
    default: QLineEdit::keyPressEvent(event);
  }
}

}  // namespace stepscope::viewer
