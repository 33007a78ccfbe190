// Search over slice names and op types, by case-insensitive text or by regular expression.
// Each distinct string is matched once (names are interned), then slices are picked by id, so
// a search over a million slices costs one pass over integers. Matches are listed in time
// order; the model also keeps the current match for next/previous. Repeats (slices flagged
// duplicate: TensorFlow's /stream:all and /memcpy lanes record each kernel and copy again) are
// not matches, so a kernel is found once; repeats() says how many were left out.
#pragma once

#include <QAbstractListModel>
#include <QString>
#include <memory>
#include <vector>

#include "viewer/load/document.h"

namespace stepscope::viewer {

class SearchModel : public QAbstractListModel {
  Q_OBJECT

 public:
  explicit SearchModel(std::shared_ptr<const TraceDocument> document, QObject* parent = nullptr);

  // Replaces the matches. Returns an empty string, or what is wrong with the regular
  // expression (the matches are then empty). An empty pattern clears the search.
  QString SetQuery(const QString& pattern, bool regex);
  const std::vector<uint32_t>& matches() const { return matches_; }
  int64_t repeats() const { return repeats_; }  // matching repeats left out

  // The current match moves forward/back (wrapping) and is returned as a slice index, -1 when
  // there is none. Next() after a new query goes to the first match.
  int64_t Next();
  int64_t Previous();
  int current() const { return current_; }  // row of the current match, -1 before the first
  void SetCurrent(int row);
  // Matches name C++ kernels whole instead of short (ShortKernelName); the tooltip always does.
  void SetFullNames(bool full);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const TraceDocument> document_;
  std::vector<uint32_t> matches_;
  int64_t repeats_ = 0;
  int current_ = -1;
  bool full_names_ = false;
};

}  // namespace stepscope::viewer
