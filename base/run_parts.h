// Work split in parts run at once: part 0 on the calling thread, the others on threads of their
// own. What a part throws (std::bad_alloc: more than the memory left) is thrown again to the
// caller once every part has ended, as one thread would throw it, instead of ending the program
// (an exception that leaves a std::thread calls std::terminate).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace stepscope {

// One part per core, at most `most` (at least 1).
inline uint32_t PartsPerCore(uint32_t most) {
  return std::clamp(std::thread::hardware_concurrency(), 1u, std::max(most, 1u));
}

// Runs work(part) for every part in [0, parts) and returns when all have ended.
template <typename Work>
void RunParts(uint32_t parts, const Work& work) {
  std::vector<std::exception_ptr> failed(parts);
  std::vector<std::thread> helpers;
  for (uint32_t part = 1; part < parts; ++part) {
    helpers.emplace_back([&work, &failed, part] {
      try {
        work(part);
      } catch (...) {
        failed[part] = std::current_exception();
      }
    });
  }
  try {
    if (parts > 0) work(0);
  } catch (...) {
    failed[0] = std::current_exception();
  }
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& failure : failed) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace stepscope
