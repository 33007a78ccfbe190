// The search model (search_model.h): each interned string matched once, then slices by id.
#include "viewer/models/search_model.h"

#include <QRegularExpression>
#include <algorithm>
#include <cctype>

#include "base/display_names.h"
#include "base/units.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {
namespace {

bool ContainsIgnoringCase(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  auto equal = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(), equal) != text.end();
}

}  // namespace

SearchModel::SearchModel(std::shared_ptr<const TraceDocument> document, QObject* parent)
    : QAbstractListModel(parent), document_(std::move(document)) {}

QString SearchModel::SetQuery(const QString& pattern, bool regex) {
  beginResetModel();
  matches_.clear();
  repeats_ = 0;
  current_ = -1;
  QString error;
  if (!pattern.isEmpty()) {
    const trace::Trace& trace = document_->trace();
    const trace::StringTable& strings = trace.strings();
    std::vector<bool> matched(strings.size(), false);
    if (regex) {
      const QRegularExpression expression(pattern, QRegularExpression::CaseInsensitiveOption);
      if (!expression.isValid()) {
        error = tr("invalid regular expression at offset %1: %2")
                    .arg(expression.patternErrorOffset())
                    .arg(expression.errorString());
      } else {
        for (size_t id = 1; id < strings.size(); ++id) {
          const std::string_view text = strings.Get(static_cast<trace::StringId>(id));
          matched[id] = expression.match(QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())))
                            .hasMatch();
        }
      }
    } else {
      const std::string needle = pattern.toStdString();
      for (size_t id = 1; id < strings.size(); ++id) {
        matched[id] = ContainsIgnoringCase(strings.Get(static_cast<trace::StringId>(id)), needle);
      }
    }
    // A label matches when its name or op type does.
    const trace::LabelTable& labels = trace.labels();
    std::vector<bool> label_matched(labels.size());
    for (trace::LabelId id = 0; id < labels.size(); ++id) {
      label_matched[id] = matched[labels[id].name] || matched[labels[id].op_type];
    }
    const auto& slices = trace.slices();
    for (uint32_t i = 0; i < slices.size(); ++i) {
      if (!label_matched[slices[i].label]) continue;
      if (slices[i].duplicate()) {
        ++repeats_;
      } else {
        matches_.push_back(i);
      }
    }
    std::stable_sort(matches_.begin(), matches_.end(), [&](uint32_t a, uint32_t b) {
      return slices[a].start_ns < slices[b].start_ns;
    });
  }
  endResetModel();
  return error;
}

int64_t SearchModel::Next() {
  if (matches_.empty()) return -1;
  SetCurrent(current_ < 0 ? 0 : (current_ + 1) % static_cast<int>(matches_.size()));
  return matches_[static_cast<size_t>(current_)];
}

int64_t SearchModel::Previous() {
  if (matches_.empty()) return -1;
  const int count = static_cast<int>(matches_.size());
  SetCurrent(current_ <= 0 ? count - 1 : current_ - 1);
  return matches_[static_cast<size_t>(current_)];
}

void SearchModel::SetCurrent(int row) {
  if (row < -1 || row >= static_cast<int>(matches_.size())) return;
  current_ = row;
}

int SearchModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(matches_.size());
}

QVariant SearchModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const uint32_t slice_index = matches_[static_cast<size_t>(index.row())];
  const trace::Trace& trace = document_->trace();
  const trace::Slice& slice = trace.slices()[slice_index];
  switch (role) {
    case Qt::DisplayRole: {
      const std::string_view name = trace.str(trace.slice_name(slice));
      return QStringLiteral("%1  [%2]  %3 @ %4")
          .arg(QString::fromStdString(full_names_ ? std::string(name) : ShortKernelName(name)),
               QString::fromUtf8(trace.str(trace.slice_op_type(slice))),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(slice.dur_ns))),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(slice.start_ns))));
    }
    case Qt::ToolTipRole:
      return QString::fromUtf8(trace.str(trace.slice_name(slice))) + QLatin1Char('\n') +
             QString::fromStdString(trace.TrackPath(slice.track));
    case kSliceRole: return QVariant::fromValue(slice_index);
    case kTimeRole: return QVariant::fromValue<qint64>(slice.start_ns);
    case kSortRole: return QVariant::fromValue<qint64>(slice.start_ns);
    default: return {};
  }
}

void SearchModel::SetFullNames(bool full) {
  if (full == full_names_) return;
  full_names_ = full;
  if (!matches_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, 0), {Qt::DisplayRole});
}

}  // namespace stepscope::viewer
