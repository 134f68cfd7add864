// CompilePool: the threads that lower and compile a graph's kernels.
//
// FusionExecutorCache::compileFor schedules a fusion's segments in order on
// the calling thread (each segment's inputs are the outputs of those before
// it) and hands each new kernel's lowering and NVRTC compile to this pool;
// the caller waits once, for all of them. One process-wide pool
// (CompilePool::global()) serves every fusion and every calling thread, so
// compileForAll scheduling a graph's fusions on as many threads as the pool
// has keeps at most twice the pool's threads busy, never a pool per fusion. Tasks never wait for other tasks (identical kernels are shared
// through the KernelCache, whose waiters are the tasks' callers or a task
// whose twin is already running), so the pool cannot deadlock on itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace smelt {

class CompilePool {
 public:
  // `threads` workers; 0: each task runs on the submitting thread, inside
  // submit() (the serial path, for comparison and for one-core machines).
  explicit CompilePool(int threads);
  ~CompilePool();  // runs what is queued, then joins the workers
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // The process's pool, created on first use with defaultThreads() workers
  // (again in a forked child, whose parent's workers do not exist there).
  static CompilePool& global();
  // SMELT_COMPILE_THREADS when set, else the machine's hardware threads (at
  // least 1): the one reading of the setting (Python's compile-ahead pool
  // takes it too, where 0 turns compiling ahead off).
  static int configuredThreads();
  // configuredThreads(), where 0 and 1 mean the serial path (0 workers).
  static int defaultThreads();

  // Queues `task`; its future holds what it threw. The caller must keep
  // whatever the task refers to alive until the future is ready.
  std::shared_future<void> submit(std::function<void()> task);

  int threads() const { return static_cast<int>(workers_.size()); }
  // Counted since construction: tasks submitted, and the most that ran at once.
  int64_t submitted() const;
  int64_t peakRunning() const;

 private:
  void work();

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  int64_t submitted_ = 0;
  int64_t running_ = 0;
  int64_t peak_running_ = 0;
};

}  // namespace smelt
