// A slice's name and op type as one 32-bit label (label_table.h).
#include "profiler/trace/label_table.h"

namespace stepscope::trace {

LabelTable::LabelTable() : labels_{SliceLabel{}}, first_by_name_{0} {}

LabelId LabelTable::InternSlow(StringId name, StringId op_type) {
  if (name >= first_by_name_.size()) first_by_name_.resize(size_t{name} + 1, kNone);
  LabelId& first = first_by_name_[name];
  const auto add = [&] {
    labels_.push_back(SliceLabel{name, op_type});
    return static_cast<LabelId>(labels_.size() - 1);
  };
  if (first == kNone) return first = add();
  const uint64_t key = (uint64_t{name} << 32) | op_type;
  auto [it, inserted] = more_.try_emplace(key, 0);
  if (inserted) it->second = add();
  return it->second;
}

}  // namespace stepscope::trace
