// Turning what a user names (files, globs, directories) into traces: the one place the CLI and
// the viewer go through before any analysis. Each path given is
//  - a file: itself (its format told from its content, reader.h);
//  - a glob (`*`, `?` or `[` in a path that does not exist as written: quoted past the shell, or
//    typed in the viewer): the trace files and directories it matches, in natural order;
//  - a directory: what it holds (ListTraceDirectory): a profiler run whose files are one trace
//    (XSpace's `plugins/profile/<run>/`, a `.xplane.pb` per host) is one input, read as one
//    trace; otherwise each trace file in it (per-rank or per-step traces) is an input, in natural
//    order (digit runs as numbers: `step9` before `step10`).
// Trace files are those whose names end as a reader's extensions say (reader.h); nothing here
// lists a format.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

struct DirectoryContents {
  enum class Kind {
    kProfilerRun,  // files of one format that reads them as one trace (`format`)
    kTraceFiles,   // trace files read one by one
  };
  Kind kind = Kind::kTraceFiles;
  std::string_view format;         // the reader's name (`stepscope formats`)
  std::vector<std::string> files;  // the trace files, in the order they are read
};

// What a directory holds; kInvalidInput naming it when it holds no trace file, kIoError when it
// cannot be listed.
StatusOr<DirectoryContents> ListTraceDirectory(const std::string& path);
// For messages and the viewer's status line: "a profiler run: 2 xspace files read as one trace",
// "4 trace files".
std::string DescribeDirectory(const DirectoryContents& contents);

// Every input `paths` name, in order: each a trace file, or a directory read as one trace.
// Fails on the first directory or glob that names no trace.
StatusOr<std::vector<std::string>> ResolveTracePaths(const std::vector<std::string>& paths);

// The traces of every input (ResolveTracePaths), in order. Fails with a message naming the file
// on the first unreadable one.
StatusOr<std::vector<Trace>> ReadTraces(const std::vector<std::string>& paths);
// The same one trace at a time, handed to `use` (memory holds one trace at a time unless `use`
// keeps them); the first failure (reading, or `use`'s) stops it.
Status ForEachTrace(const std::vector<std::string>& paths, const std::function<Status(Trace)>& use);

// File names in natural order: runs of digits compare as numbers, so a run's `_step9` comes
// before its `_step10` (and `_rank2` before `_rank10`).
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace stepscope::trace
