// Compiling ahead (FusionExecutorCache::compileFor, compileForAll; declared
// in fusion_executor_cache.h) in its three steps: walk each fusion's
// segments, scheduling them and handing each new kernel's lowering to the
// pool (prepareCompileFor); compile the kernels NVRTC must compile, from all
// the fusions at once, as one program per pool thread (compileTogether);
// finish each fusion (finishWalk).
#include "runtime/fusion_executor_cache.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "fusion/error.h"
#include "runtime/compile_pool.h"
#include "runtime/nvrtc_batch.h"

namespace smelt {
namespace {

// A meta tensor with `t`'s sizes, strides, dtype and storage offset.
at::Tensor metaStandIn(const at::Tensor& t) {
  const c10::TensorOptions meta = t.options().device(c10::kMeta);
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return at::empty_strided(t.sizes(), t.strides(), meta);
    extent += (t.size(d) - 1) * std::abs(t.stride(d));
  }
  return at::empty({extent}, meta).as_strided(t.sizes(), t.strides(), t.storage_offset());
}

// The jobs in rounds in which each cache appears once (its turn is held from
// a job's first step to its last), each round's jobs in their order.
std::vector<std::vector<size_t>> roundsOf(const std::vector<CompileForJob>& jobs) {
  std::map<const FusionExecutorCache*, size_t> earlier;
  std::vector<std::vector<size_t>> rounds;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const size_t round = earlier[jobs[i].cache]++;
    if (round == rounds.size()) rounds.emplace_back();
    rounds[round].push_back(i);
  }
  return rounds;
}

// Calls task(k) for every k < n, on up to `threads` threads of their own
// (on this one for fewer than 2). Not on the pool: a cache's turn may be
// waited for here, and the pool's tasks never wait for one.
void forEachOnThreads(size_t n, int threads, const std::function<void(size_t)>& task) {
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1)));
  if (workers <= 1) {
    for (size_t k = 0; k < n; ++k) task(k);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> running;
  for (size_t w = 0; w < workers; ++w) {
    running.emplace_back([&] {
      for (size_t k = next++; k < n; k = next++) task(k);
    });
  }
  for (std::thread& t : running) t.join();
}

}  // namespace

std::vector<at::Tensor> FusionExecutorCache::compileFor(const std::vector<at::Tensor>& inputs,
                                                        c10::Device device) {
  std::vector<CompileForResult> results = compileForAll({CompileForJob{this, inputs, device}});
  if (results[0].error) std::rethrow_exception(results[0].error);
  return std::move(results[0].outputs);
}

FusionExecutorCache::SegmentWalk FusionExecutorCache::prepareCompileFor(const std::vector<at::Tensor>& inputs,
                                                                        c10::Device device) {
  validator_.validate(inputs);
  std::vector<at::Tensor> stand_ins = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (fusion_->inputs()[i]->asTensor() != nullptr && !inputs[i].is_meta()) {
      stand_ins[i] = metaStandIn(inputs[i]);
    }
  }
  return walkSegments(stand_ins, device, true);
}

void FusionExecutorCache::compileTogether(const std::vector<SegmentWalk*>& walks, CompilePool& pool) {
  std::vector<std::pair<const FusionExecutorCache*, PendingCompile*>> asking;
  std::vector<NvrtcRequest> requests;
  for (SegmentWalk* walk : walks) {
    for (std::unique_ptr<PendingCompile>& p : walk->pending) {
      try {
        p->prepared.get();
      } catch (...) {
        p->done = p->prepared;  // its error, in its segment's turn
        continue;
      }
      if (p->nvrtc) {
        asking.emplace_back(walk->cache, p.get());
        requests.push_back(*p->nvrtc);
      } else {
        p->done = p->prepared;  // a cached kernel, compiled by its preparing task
      }
    }
  }
  std::vector<std::shared_future<void>> done =
      compileInBatches(pool, requests, [asking](size_t i, const PrecompiledKernel* precompiled) {
        asking[i].first->compilePending(*asking[i].second, true, precompiled);
      });
  for (size_t i = 0; i < asking.size(); ++i) asking[i].second->done = std::move(done[i]);
}

std::vector<CompileForResult> compileForAll(const std::vector<CompileForJob>& jobs) {
  std::vector<CompileForResult> results(jobs.size());
  if (jobs.empty()) return results;
  for (const CompileForJob& job : jobs) SMELT_CHECK(job.cache != nullptr, "compileForAll: a job has no cache");
  const ExecutorOptions& options = jobs.front().cache->options_;
  CompilePool& pool = options.compile_pool != nullptr ? *options.compile_pool : CompilePool::global();
  for (const std::vector<size_t>& round : roundsOf(jobs)) {
    // The caches' turns, always taken in one order (by address), so two
    // callers compiling overlapping sets of caches never wait for each other.
    std::vector<FusionExecutorCache*> caches;
    for (size_t i : round) caches.push_back(jobs[i].cache);
    std::sort(caches.begin(), caches.end(), std::less<FusionExecutorCache*>());
    std::vector<std::unique_lock<std::mutex>> turns;
    for (FusionExecutorCache* cache : caches) turns.emplace_back(cache->mutex_);

    std::vector<FusionExecutorCache::SegmentWalk> walks(round.size());
    forEachOnThreads(round.size(), pool.threads(), [&](size_t k) {
      const CompileForJob& job = jobs[round[k]];
      try {
        walks[k] = job.cache->prepareCompileFor(job.inputs, job.device);
      } catch (...) {
        results[round[k]].error = std::current_exception();
      }
    });
    std::vector<FusionExecutorCache::SegmentWalk*> prepared;
    for (size_t k = 0; k < round.size(); ++k) {
      if (!results[round[k]].error) prepared.push_back(&walks[k]);
    }
    FusionExecutorCache::compileTogether(prepared, pool);
    for (size_t k = 0; k < round.size(); ++k) {
      if (results[round[k]].error) continue;
      try {
        results[round[k]].outputs = jobs[round[k]].cache->finishWalk(walks[k]);
      } catch (...) {
        results[round[k]].error = std::current_exception();
      }
    }
  }
  return results;
}

}  // namespace smelt
