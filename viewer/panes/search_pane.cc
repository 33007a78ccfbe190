// The search pane (search_pane.h): SearchModel's matches in a list.
#include "viewer/panes/search_pane.h"

#include <QListView>
#include <QTabWidget>

#include "viewer/models/roles.h"
#include "viewer/models/search_model.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/panes/empty_hint.h"

namespace stepscope::viewer {

SearchPane::SearchPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  search_model_ = new SearchModel(host.shared_document(), this);
  search_view_ = new QListView(host.panes());
  search_view_->setModel(search_model_);
  search_view_->setUniformItemSizes(true);
  connect(search_view_, &QListView::activated, this, [this](const QModelIndex& index) {
    search_model_->SetCurrent(index.row());
    this->host().JumpToSlice(index.data(kSliceRole).toUInt());
  });
  hint_ = new EmptyHint(search_view_, tr("Type in the search box above (Ctrl+F) to list the slices whose name or op "
                                          "type matches; Enter or n / Shift+N step through them on the timeline."));
  set_widget(search_view_);
}

QString SearchPane::Search(const QString& pattern, bool regex) {
  const QString error = search_model_->SetQuery(pattern, regex);
  hint_->SetText(!error.isEmpty()      ? error
                 : pattern.isEmpty()   ? tr("Type in the search box above (Ctrl+F) to list the slices whose name or op "
                                            "type matches; Enter or n / Shift+N step through them on the timeline.")
                                       : tr("No slice name or op type matches \u201c%1\u201d.").arg(pattern));
  host().timeline()->SetSearchMatches(search_model_->matches());
  if (error.isEmpty() && !pattern.isEmpty()) host().ShowPane(kId);
  return error;
}

void SearchPane::SearchNext() { JumpToCurrent(search_model_->Next()); }

void SearchPane::SearchPrevious() { JumpToCurrent(search_model_->Previous()); }

void SearchPane::JumpToCurrent(int64_t slice) {
  if (slice < 0) return;
  search_view_->setCurrentIndex(search_model_->index(search_model_->current()));
  host().JumpToSlice(static_cast<uint32_t>(slice));
}

QString SearchPane::search_status() const {
  const int count = search_model_->rowCount();
  // Repeats on TensorFlow's aggregate lanes are no matches of their own: said, not listed.
  const QString repeats = search_model_->repeats() > 0
                              ? tr(" (%1 repeats on aggregate lanes not listed)").arg(search_model_->repeats())
                              : QString();
  if (count == 0) return tr("no matches") + repeats;
  if (search_model_->current() < 0) return tr("%1 matches").arg(count) + repeats;
  return tr("%1 of %2").arg(search_model_->current() + 1).arg(count) + repeats;
}

}  // namespace stepscope::viewer
