// Everything known about one slice, as a tree of key/value items for the details pane: name,
// op type, kind, track, times, memcpy details, flows in and out, and then every field of the
// source record (StepStats NodeExecStats: outputs with shapes and allocation descriptions,
// memory per allocator with allocation records, kernel launch parameters, ...) listed by
// protobuf reflection, so no field the input had is left out.
#pragma once

#include <QStandardItemModel>
#include <string>
#include <vector>

#include "viewer/load/document.h"

namespace stepscope::viewer {

struct DetailItem {
  std::string key;
  std::string value;
  std::vector<DetailItem> children;
  uint32_t slice = UINT32_MAX;  // a slice this item links to (flows), UINT32_MAX for none
};

std::vector<DetailItem> DescribeSlice(const TraceDocument& document, uint32_t slice);

// A two-column (Field, Value) tree model of DescribeSlice(); kSliceRole on linked items.
class SliceDetailsModel : public QStandardItemModel {
  Q_OBJECT

 public:
  explicit SliceDetailsModel(QObject* parent = nullptr);
  void ShowSlice(const TraceDocument& document, uint32_t slice);
  void ShowNothing();
};

}  // namespace stepscope::viewer
