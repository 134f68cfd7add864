#include "runtime/compile_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "fusion/error.h"

namespace smelt {

CompilePool::CompilePool(int threads) {
  SMELT_CHECK(threads >= 0, "CompilePool: a pool of ", threads, " threads");
  workers_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

int CompilePool::configuredThreads() {
  const char* value = std::getenv("SMELT_COMPILE_THREADS");
  if (value != nullptr && *value != '\0') {
    char* end = nullptr;
    const long threads = std::strtol(value, &end, 10);
    SMELT_CHECK(end != value && *end == '\0' && threads >= 0,
                "SMELT_COMPILE_THREADS must be a number of threads, got '", value, "'");
    return static_cast<int>(threads);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int CompilePool::defaultThreads() {
  const int threads = configuredThreads();
  return threads <= 1 ? 0 : threads;
}

CompilePool& CompilePool::global() {
  // Never destroyed: its idle workers end with the process (joining them
  // from a static destructor could race torch's and Python's teardown).
  static std::mutex mutex;
  static CompilePool* pool = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (pool == nullptr || owner != ::getpid()) {
    pool = new CompilePool(defaultThreads());  // a forked child's own (the parent's is not here)
    owner = ::getpid();
  }
  return *pool;
}

std::shared_future<void> CompilePool::submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::shared_future<void> done = packaged.get_future().share();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++submitted_;
    if (!workers_.empty()) {
      queue_.push_back(std::move(packaged));
      ready_.notify_one();
      return done;
    }
    peak_running_ = std::max<int64_t>(peak_running_, 1);
  }
  packaged();  // no workers: here, now
  return done;
}

void CompilePool::work() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      peak_running_ = std::max(peak_running_, ++running_);
    }
    task();  // an exception lands in the task's future
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

int64_t CompilePool::submitted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return submitted_;
}

int64_t CompilePool::peakRunning() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_running_;
}

}  // namespace smelt
