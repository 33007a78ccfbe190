// Shared helpers for tests: paths of checked-in data and temp files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace stepscope::testing {

inline std::string DataPath(const std::string& name) {
  return std::string(STEPSCOPE_TEST_DATA) + "/" + name;
}

// The real traces of samples/ (README "Samples"): what a user opens first.
inline std::string SamplePath(const std::string& name) {
  return std::string(STEPSCOPE_SOURCE_DIR) + "/samples/" + name;
}

// A fresh per-process scratch directory under the system temp dir.
inline std::filesystem::path ScratchDir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("stepscope_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace stepscope::testing
