// Shared helpers for tests: paths of checked-in data and temp files.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

// Defined in a build under a sanitizer (GCC names it with __SANITIZE_*__, clang only through
// __has_feature): its allocator reserves shadow memory and aborts when memory runs out, so a
// test cannot run out of memory under an address-space cap there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STEPSCOPE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define STEPSCOPE_TEST_SANITIZED 1
#endif
#endif

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

// In a forked child: caps the address space at what the process maps now plus `headroom_bytes`,
// so an allocation bigger than that fails (std::bad_alloc) instead of succeeding. False when the
// cap cannot be read or set.
inline bool CapAddressSpaceAboveCurrent(rlim_t headroom_bytes) {
  long pages = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  const bool read = statm != nullptr && std::fscanf(statm, "%ld", &pages) == 1;
  if (statm != nullptr) std::fclose(statm);
  if (!read) return false;
  const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + headroom_bytes;
  const rlimit limit{cap, cap};
  return setrlimit(RLIMIT_AS, &limit) == 0;
}

}  // namespace stepscope::testing
