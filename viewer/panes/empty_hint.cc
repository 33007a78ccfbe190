// EmptyHint (empty_hint.h): a label on the view's viewport, shown while the model is empty.
#include "viewer/panes/empty_hint.h"

#include <QAbstractItemView>
#include <QEvent>
#include <QLabel>

namespace stepscope::viewer {

EmptyHint::EmptyHint(QAbstractItemView* view, const QString& text)
    : QObject(view), label_(new QLabel(text, view->viewport())) {
  setObjectName(QStringLiteral("empty_hint"));
  label_->setAlignment(Qt::AlignCenter);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::NoTextInteraction);
  label_->setAttribute(Qt::WA_TransparentForMouseEvents);
  label_->setForegroundRole(QPalette::PlaceholderText);
  view->viewport()->installEventFilter(this);
  QAbstractItemModel* model = view->model();
  model_ = model;
  if (model != nullptr) {
    connect(model, &QAbstractItemModel::modelReset, this, &EmptyHint::Update);
    connect(model, &QAbstractItemModel::layoutChanged, this, &EmptyHint::Update);
    connect(model, &QAbstractItemModel::rowsInserted, this, &EmptyHint::Update);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &EmptyHint::Update);
  }
  Update();
}

void EmptyHint::SetText(const QString& text) {
  if (label_ != nullptr) label_->setText(text);
}
QString EmptyHint::text() const { return label_ != nullptr ? label_->text() : QString(); }
bool EmptyHint::shown() const { return label_ != nullptr && !label_->isHidden(); }

bool EmptyHint::eventFilter(QObject* watched, QEvent* event) {
  if (label_ != nullptr && watched == label_->parent() && event->type() == QEvent::Resize) {
    label_->setGeometry(label_->parentWidget()->rect().adjusted(12, 8, -12, -8));
  }
  return false;
}

void EmptyHint::Update() {
  if (label_ == nullptr) return;
  const bool empty = model_ == nullptr || model_->rowCount() == 0;
  label_->setGeometry(label_->parentWidget()->rect().adjusted(12, 8, -12, -8));
  label_->setVisible(empty);
}

EmptyHint* EmptyHintOf(const QAbstractItemView* view) {
  return view == nullptr ? nullptr : view->findChild<EmptyHint*>(QStringLiteral("empty_hint"), Qt::FindDirectChildrenOnly);
}

}  // namespace stepscope::viewer
