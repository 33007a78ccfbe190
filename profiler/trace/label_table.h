// A slice's name and op type as one 32-bit label: a trace repeats the same few thousand pairs
// (every step runs the same ops), so a slice names both in 4 bytes instead of 8.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "profiler/trace/string_table.h"

namespace stepscope::trace {

using LabelId = uint32_t;

struct SliceLabel {
  StringId name = 0;     // node or event name
  StringId op_type = 0;  // op type ("MatMul", "MEMCPYHtoD"); "unknown" when not derivable
};

class LabelTable {
 public:
  LabelTable();  // label 0 is {empty name, empty op type}, a default slice's

  // Most names come with one op type: their label is found by the name's id alone, and only the
  // rare names seen with a second op type go through a hash map.
  LabelId Intern(StringId name, StringId op_type) {
    if (name < first_by_name_.size()) {
      const LabelId first = first_by_name_[name];
      if (first != kNone && labels_[first].op_type == op_type) return first;
    }
    return InternSlow(name, op_type);
  }
  const SliceLabel& operator[](LabelId id) const { return labels_[id]; }
  size_t size() const { return labels_.size(); }

 private:
  static constexpr LabelId kNone = 0xffffffffu;
  LabelId InternSlow(StringId name, StringId op_type);

  std::vector<SliceLabel> labels_;
  std::vector<LabelId> first_by_name_;  // by name id: the first label with that name, or kNone
  std::unordered_map<uint64_t, LabelId> more_;  // (name, op type) of a name's further labels
};

}  // namespace stepscope::trace
