// A line of grey text centred over an item view while its model has no rows, saying what would
// fill it ("Click a slice on the timeline to see its details here"): a pane never shows a bare
// empty table.
#pragma once

#include <QAbstractItemModel>
#include <QLabel>
#include <QObject>
#include <QPointer>
#include <QString>

class QAbstractItemView;

namespace stepscope::viewer {

class EmptyHint : public QObject {
 public:
  // Attaches to `view` (owned by it); follows its model's resets, inserts and removals.
  EmptyHint(QAbstractItemView* view, const QString& text);
  void SetText(const QString& text);
  QString text() const;
  // Whether the hint is up (the model has no rows).
  bool shown() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Update();

  // Guarded: while the view is destroyed, its model may still signal after the label is gone.
  QPointer<QLabel> label_;
  QPointer<QAbstractItemModel> model_;
};

// The hint attached to `view` by EmptyHint, or null.
EmptyHint* EmptyHintOf(const QAbstractItemView* view);

}  // namespace stepscope::viewer
