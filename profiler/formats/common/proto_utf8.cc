// Repairing invalid UTF-8 in the string fields of imported step stats messages, text or binary
// (proto_utf8.h).
#include "profiler/formats/common/proto_utf8.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <unordered_map>
#include <vector>

#include "profiler/formats/common/utf8.h"
#include "profiler/formats/common/varint.h"

namespace stepscope::trace {
namespace {

namespace pb = google::protobuf;

// protobuf's own default recursion limit: deeper input is refused by its parser anyway.
constexpr int kMaxDepth = 100;

// Whether messages of a type can hold a string field at any depth (most NodeExecStats parts,
// e.g. MemoryStats and AllocationRecord, cannot: the walk skips them). Recursive types count as
// able to.
class StringReach {
 public:
  bool CanHoldStrings(const pb::Descriptor* type) {
    auto [it, inserted] = reach_.try_emplace(type, true);  // true while in progress: cycles
    if (!inserted) return it->second;
    bool reach = false;
    for (int f = 0; f < type->field_count() && !reach; ++f) {
      const pb::FieldDescriptor* field = type->field(f);
      if (field->type() == pb::FieldDescriptor::TYPE_STRING) reach = true;
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) reach = CanHoldStrings(field->message_type());
    }
    reach_[type] = reach;
    return reach;
  }

 private:
  std::unordered_map<const pb::Descriptor*, bool> reach_;
};

class MessageRepairer {
 public:
  // Counts the invalid strings of `message` without changing it.
  int64_t CountInvalid(const pb::Message& message, int depth) {
    const pb::Descriptor* type = message.GetDescriptor();
    if (depth > kMaxDepth || !reach_.CanHoldStrings(type)) return 0;
    const pb::Reflection* reflection = message.GetReflection();
    std::vector<const pb::FieldDescriptor*> fields;
    reflection->ListFields(message, &fields);
    int64_t invalid = 0;
    std::string scratch;
    for (const pb::FieldDescriptor* field : fields) {
      if (field->type() == pb::FieldDescriptor::TYPE_STRING) {
        if (field->is_repeated()) {
          for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
            invalid += !IsValidUtf8(reflection->GetRepeatedStringReference(message, field, i, &scratch));
          }
        } else {
          invalid += !IsValidUtf8(reflection->GetStringReference(message, field, &scratch));
        }
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (!reach_.CanHoldStrings(field->message_type())) continue;
        if (field->is_repeated()) {
          for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
            invalid += CountInvalid(reflection->GetRepeatedMessage(message, field, i), depth + 1);
          }
        } else {
          invalid += CountInvalid(reflection->GetMessage(message, field), depth + 1);
        }
      }
    }
    return invalid;
  }

  // Repairs `message`; mutable access only where something is invalid (taking a map field
  // mutable, for one, rebuilds its repeated view).
  int64_t Repair(pb::Message& message, int depth) {
    if (depth > kMaxDepth || !reach_.CanHoldStrings(message.GetDescriptor())) return 0;
    const pb::Reflection* reflection = message.GetReflection();
    std::vector<const pb::FieldDescriptor*> fields;
    reflection->ListFields(message, &fields);
    int64_t repaired = 0;
    std::string scratch;
    for (const pb::FieldDescriptor* field : fields) {
      if (field->type() == pb::FieldDescriptor::TYPE_STRING) {
        if (field->is_repeated()) {
          for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
            const std::string& text = reflection->GetRepeatedStringReference(message, field, i, &scratch);
            if (IsValidUtf8(text)) continue;
            reflection->SetRepeatedString(&message, field, i, RepairUtf8(text));
            ++repaired;
          }
        } else {
          const std::string& text = reflection->GetStringReference(message, field, &scratch);
          if (IsValidUtf8(text)) continue;
          reflection->SetString(&message, field, RepairUtf8(text));
          ++repaired;
        }
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (!reach_.CanHoldStrings(field->message_type())) continue;
        if (field->is_repeated()) {
          for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
            if (CountInvalid(reflection->GetRepeatedMessage(message, field, i), depth + 1) == 0) continue;
            repaired += Repair(*reflection->MutableRepeatedMessage(&message, field, i), depth + 1);
          }
        } else {
          if (CountInvalid(reflection->GetMessage(message, field), depth + 1) == 0) continue;
          repaired += Repair(*reflection->MutableMessage(&message, field), depth + 1);
        }
      }
    }
    return repaired;
  }

 private:
  StringReach reach_;
};

enum WireType : uint64_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

class WireRepairer {
 public:
  // Rewrites the fields of one message (`type` null: unknown content, copied) until the end of
  // `bytes`, or, inside a group, until the END_GROUP tag of `group_number` (then `pos` is past it).
  bool Message(std::string_view bytes, size_t& pos, const pb::Descriptor* type, int depth, uint64_t group_number,
               std::string& out) {
    if (depth > kMaxDepth) return false;
    while (pos < bytes.size()) {
      const size_t tag_start = pos;
      uint64_t tag = 0;
      if (!ReadVarint(bytes, pos, tag)) return false;
      const uint64_t number = tag >> 3;
      const uint64_t wire = tag & 7;
      if (number == 0 || number > 536870911u) return false;
      out.append(bytes.substr(tag_start, pos - tag_start));
      if (wire == kEndGroup) return number == group_number;
      const pb::FieldDescriptor* field =
          type == nullptr ? nullptr : type->FindFieldByNumber(static_cast<int>(number));
      const size_t value_start = pos;
      switch (wire) {
        case kVarint: {
          uint64_t ignored = 0;
          if (!ReadVarint(bytes, pos, ignored)) return false;
          out.append(bytes.substr(value_start, pos - value_start));
          break;
        }
        case kFixed64:
        case kFixed32: {
          const size_t size = wire == kFixed64 ? 8 : 4;
          if (bytes.size() - pos < size) return false;
          out.append(bytes.substr(pos, size));
          pos += size;
          break;
        }
        case kLengthDelimited: {
          uint64_t length = 0;
          if (!ReadVarint(bytes, pos, length) || length > bytes.size() - pos) return false;
          const std::string_view payload = bytes.substr(pos, static_cast<size_t>(length));
          pos += static_cast<size_t>(length);
          if (field != nullptr && field->type() == pb::FieldDescriptor::TYPE_STRING && !IsValidUtf8(payload)) {
            const std::string text = RepairUtf8(payload);
            AppendVarint(out, text.size());
            out.append(text);
            ++repaired_;
          } else if (field != nullptr && field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
            std::string inner;
            size_t inner_pos = 0;
            if (!Message(payload, inner_pos, field->message_type(), depth + 1, 0, inner)) return false;
            AppendVarint(out, inner.size());
            out.append(inner);
          } else {
            out.append(bytes.substr(value_start, pos - value_start));
          }
          break;
        }
        case kStartGroup: {
          const pb::Descriptor* group_type =
              field != nullptr && field->type() == pb::FieldDescriptor::TYPE_GROUP ? field->message_type() : nullptr;
          if (!Message(bytes, pos, group_type, depth + 1, number, out)) return false;
          break;
        }
        default:
          return false;
      }
    }
    return group_number == 0;  // a group must end with its END_GROUP tag
  }

  int64_t repaired() const { return repaired_; }

 private:
  int64_t repaired_ = 0;
};

}  // namespace

int64_t RepairInvalidUtf8Strings(pb::Message& message) {
  MessageRepairer repairer;
  return repairer.Repair(message, 0);
}

bool RepairInvalidUtf8InWireFormat(std::string_view bytes, const pb::Descriptor& type, std::string* out,
                                   int64_t* repaired) {
  out->clear();
  out->reserve(bytes.size() + 64);
  WireRepairer repairer;
  size_t pos = 0;
  const bool ok = repairer.Message(bytes, pos, &type, 0, 0, *out);
  *repaired = repairer.repaired();
  return ok;
}

}  // namespace stepscope::trace
