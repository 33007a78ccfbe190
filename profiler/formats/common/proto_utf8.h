// Invalid UTF-8 in the string fields of imported protobuf messages (step stats), repaired with
// the rule of utf8.h. proto3 `string` fields must hold UTF-8: the text parser accepts any bytes
// (`node_name: "a\377b"`), but then the message cannot be parsed back from its binary form, and
// the binary parser refuses such input outright. Both entry points repair every string field the
// descriptor reaches (nested messages, repeated fields, map keys and values), so fields added to
// the schema later are covered without a change here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace google::protobuf {
class Descriptor;
class Message;
}  // namespace google::protobuf

namespace stepscope::trace {

// Import stats counter of the strings repaired by the functions below.
inline constexpr std::string_view kInvalidUtf8StringsRepaired = "invalid_utf8_strings_repaired";

// Repairs every string field of `message` and of the messages inside it; returns how many
// strings were changed. Leaves subtrees that hold only valid text untouched (no copies).
int64_t RepairInvalidUtf8Strings(google::protobuf::Message& message);

// Rewrites binary protobuf `bytes` of message type `type` with each string field (as the
// descriptor says, at any depth) repaired; unknown fields and all other content are copied
// as they are. `repaired` gets how many strings changed. False when `bytes` is not well-formed
// wire format (then `out` is unspecified).
bool RepairInvalidUtf8InWireFormat(std::string_view bytes, const google::protobuf::Descriptor& type,
                                   std::string* out, int64_t* repaired);

}  // namespace stepscope::trace
