// Resolving the paths a user gives (files, globs, directories) into trace inputs through the
// reader table, and reading them (inputs.h).
#include "profiler/formats/inputs.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "profiler/formats/reader.h"

namespace stepscope::trace {

namespace {

bool IsGlob(const std::string& path) {
  if (path.find_first_of("*?[") == std::string::npos) return false;
  std::error_code error;
  return !std::filesystem::exists(path, error);
}

// The paths a glob matches, sorted naturally; kInvalidInput naming the pattern when none.
StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern) {
  glob_t matches{};
  const int result = glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches);
  std::vector<std::string> paths;
  if (result == 0) paths.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  globfree(&matches);
  if (result == GLOB_NOSPACE || result == GLOB_ABORTED) return IoError(pattern + ": cannot expand the pattern");
  std::sort(paths.begin(), paths.end(), NaturalLess);
  return paths;
}

std::string ExpectedExtensions() {
  std::string text;
  for (const TraceReaderEntry& entry : TraceReaders()) {
    text += (text.empty() ? "" : ", ") + std::string(entry.extensions);
  }
  return text;
}

}  // namespace

bool NaturalLess(const std::string& a, const std::string& b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      // Without leading zeros the longer run is the larger number.
      size_t zi = i, zj = j;
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      const int order = a.compare(zi, ei - zi, b, zj, ej - zj);
      if (order != 0) return order < 0;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal but for leading zeros: a total order all the same
}

StatusOr<DirectoryContents> ListTraceDirectory(const std::string& path) {
  DirectoryContents contents;
  const TraceReaderEntry* run_reader = nullptr;
  bool one_run = true;  // every trace file is of one format that reads a run as one trace
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    const TraceReaderEntry* reader = TraceReaderForFileName(name);
    if (reader == nullptr) continue;
    if (reader->read_run == nullptr || (run_reader != nullptr && run_reader != reader)) one_run = false;
    run_reader = reader;
    contents.files.push_back(entry.path().string());
  }
  if (error) return IoError(path + ": cannot list the directory: " + error.message());
  if (contents.files.empty()) {
    return InvalidInput(path + ": no trace files in the directory (expected " + ExpectedExtensions() + ")");
  }
  if (one_run) {
    // The reader's own order (by name): its files are one trace, not a sequence.
    contents.kind = DirectoryContents::Kind::kProfilerRun;
    contents.format = run_reader->name;
    std::sort(contents.files.begin(), contents.files.end());
  } else {
    std::sort(contents.files.begin(), contents.files.end(), NaturalLess);
  }
  return contents;
}

std::string DescribeDirectory(const DirectoryContents& contents) {
  const std::string count = std::to_string(contents.files.size());
  if (contents.kind == DirectoryContents::Kind::kProfilerRun) {
    return "a profiler run: " + count + " " + std::string(contents.format) + " file" +
           (contents.files.size() == 1 ? "" : "s") + " read as one trace";
  }
  return count + " trace file" + (contents.files.size() == 1 ? "" : "s");
}

StatusOr<std::vector<std::string>> ResolveTracePaths(const std::vector<std::string>& paths) {
  std::vector<std::string> inputs;
  for (const std::string& path : paths) {
    std::vector<std::string> named = {path};
    if (IsGlob(path)) {
      ASSIGN_OR_RETURN(named, ExpandGlob(path));
      // A pattern names the trace files and directories it matches; other files are passed over.
      std::erase_if(named, [](const std::string& match) {
        std::error_code error;
        return !std::filesystem::is_directory(match, error) &&
               TraceReaderForFileName(std::filesystem::path(match).filename().string()) == nullptr;
      });
      if (named.empty()) return InvalidInput(path + ": no trace file or directory matches the pattern");
    }
    for (const std::string& name : named) {
      std::error_code error;
      if (!std::filesystem::is_directory(name, error)) {
        inputs.push_back(name);
        continue;
      }
      ASSIGN_OR_RETURN(DirectoryContents contents, ListTraceDirectory(name));
      if (contents.kind == DirectoryContents::Kind::kProfilerRun) {
        inputs.push_back(name);
      } else {
        inputs.insert(inputs.end(), contents.files.begin(), contents.files.end());
      }
    }
  }
  return inputs;
}

StatusOr<std::vector<Trace>> ReadTraces(const std::vector<std::string>& paths) {
  std::vector<Trace> traces;
  RETURN_IF_ERROR(ForEachTrace(paths, [&](Trace trace) {
    traces.push_back(std::move(trace));
    return Status::Ok();
  }));
  return traces;
}

Status ForEachTrace(const std::vector<std::string>& paths, const std::function<Status(Trace)>& use) {
  ASSIGN_OR_RETURN(const std::vector<std::string> inputs, ResolveTracePaths(paths));
  for (const std::string& input : inputs) {
    ASSIGN_OR_RETURN(Trace trace, ReadTrace(input));
    RETURN_IF_ERROR(use(std::move(trace)));
  }
  return Status::Ok();
}

}  // namespace stepscope::trace
