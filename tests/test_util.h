// Shared helpers for tests: paths of checked-in data and temp files.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace stepscope::testing {

// Paths are appended to one string: GCC 12 at -O1 reports a false out-of-bounds copy
// (-Warray-bounds) in `std::string(a) + "/" + b` once gtest comes precompiled.
inline std::string DataPath(const std::string& name) {
  std::string path = STEPSCOPE_TEST_DATA;
  path.append("/").append(name);
  return path;
}

// The real traces of samples/ (README "Layout"): what a user opens first.
inline std::string SamplePath(const std::string& name) {
  std::string path = STEPSCOPE_SOURCE_DIR;
  path.append("/samples/").append(name);
  return path;
}

// The scratch directories this process made, removed when it exits (set STEPSCOPE_KEEP_SCRATCH=1
// to keep them for a look at a failure's files).
class ScratchDirs {
 public:
  ~ScratchDirs() {
    if (std::getenv("STEPSCOPE_KEEP_SCRATCH") != nullptr) return;
    for (const auto& dir : dirs_) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  void Add(const std::filesystem::path& dir) {
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};

// A fresh per-process scratch directory under the system temp dir.
inline std::filesystem::path ScratchDir(const std::string& tag) {
  static ScratchDirs made;
  auto dir = std::filesystem::temp_directory_path() /
             ("stepscope_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  made.Add(dir);
  return dir;
}

}  // namespace stepscope::testing
