// The `stepscope` command line: subcommands as small classes with a declarative flag table and
// generated help. main() calls RunCli; tests call it in-process with string streams.
// Exit codes: 0 ok, 1 runtime failure, 2 usage or bad input, 3 a requested check failed.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "profiler/trace/truncation.h"

namespace stepscope::cli {

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// What --allow-truncated cut, in a --json document: the key "truncated" (after "schema"), a list
// of {file, offset, gzip_cut, events_kept, reason}; nothing when `cuts` is empty or `doc` is no
// object. RunCli adds it to every command's document; `report` to those it keeps.
void AddTruncationNotice(nlohmann::ordered_json& doc, const std::vector<trace::Truncation>& cuts);

}  // namespace stepscope::cli
