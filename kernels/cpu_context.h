// The CPU execution context of the kernels: a thread pool (or none, for serial execution)
// and ParallelFor over it. The trainer's CPU device hands its pool slice to the kernels
// through a CpuContext; GEMMs go to OpenBLAS, which manages its own threads.
//
// Determinism: ParallelFor splits [0, n) into chunks of exactly `grain` items (the last one
// shorter), independently of the number of threads, so reductions that keep one partial per
// chunk and add the partials in chunk order give bit-identical results on any pool size.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace stepscope::kernels {

class ThreadPool {
 public:
  // `num_threads` workers besides the calling thread (which always takes part in its own
  // ParallelFor, so a pool of 0 workers is serial and nested ParallelFor cannot deadlock).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_workers() const { return static_cast<int>(workers_.size()); }

  // Runs fn(begin, end) over chunks of [0, n) of `grain` items each; returns when all ran.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job;
  void WorkerLoop();
  static void RunChunks(Job& job);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> workers_;
};

class CpuContext {
 public:
  CpuContext() = default;  // serial
  explicit CpuContext(ThreadPool* pool) : pool_(pool) {}

  int num_threads() const { return pool_ ? pool_->num_workers() + 1 : 1; }

  // See ThreadPool::ParallelFor; serial without a pool. `grain` is clamped to >= 1.
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)>& fn) const;

  // A chunk size that gives each thread a few chunks of at least `min_grain` items.
  int64_t GrainFor(int64_t n, int64_t min_grain) const;

 private:
  ThreadPool* pool_ = nullptr;  // not owned
};

}  // namespace stepscope::kernels
