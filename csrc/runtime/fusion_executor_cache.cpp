#include "runtime/fusion_executor_cache.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "fusion/clone.h"
#include "fusion/dump.h"
#include "fusion/error.h"
#include "lower/lower.h"
#include "runtime/aten_dtype.h"
#include "runtime/aten_evaluator.h"
#include "runtime/build_id.h"
#include "runtime/byte_record.h"
#include "runtime/compile_pool.h"
#include "runtime/disk_kernel_cache.h"
#include "runtime/fusion_key.h"
#include "runtime/input_validation.h"
#include "runtime/library_matmul.h"
#include "runtime/nvrtc_batch.h"
#include "scheduler/registry.h"
#include "scheduler/window_inputs.h"

namespace smelt {

namespace {

void checkUnscheduled(const Fusion& fusion) {
  for (const TensorView* tv : fusion.allTensors()) {
    SMELT_CHECK(tv->loopDomain() == tv->loopRoot() && tv->computePosition() == 0 &&
                    (tv->memoryType() != MemoryType::Shared),
                "FusionExecutorCache takes an unscheduled fusion, but tensor ", tv->name(),
                " is scheduled (", tv->toString(), "); use FusionExecutor for a fusion "
                "scheduled by hand");
  }
}

// The alignment of a tensor's data; a meta tensor (compileFor) stands for
// one whose storage is allocated like every ATen allocation (at least 16 B
// aligned) and that starts at its storage offset.
int64_t dataAlignment(const at::Tensor& tensor) {
  const uint64_t address = tensor.is_meta()
      ? static_cast<uint64_t>(tensor.storage_offset() * tensor.element_size())
      : reinterpret_cast<uint64_t>(tensor.data_ptr());
  return alignmentOf(address);
}

// What a checked schedule is found by: the segment (its math, extents and
// contiguity) and the scheduler's parameters.
std::string checkedScheduleKey(const Segment& segment, const std::string& params) {
  return fusionCacheKey(*segment.fusion) + "\n" + toString(segment.scheduler) + " " + params;
}

// What a signature's segmentation is kept under in the disk cache.
std::string segmentationKey(const Fusion& fusion, const std::string& signature,
                            const ExecutorOptions& options, int arch) {
  return errorMessage("smelt build ", buildId(), "\nsignature ", signature, "\n",
                      optionsKey(options, arch), " matmul=", toString(options.matmul), "\n",
                      fusionCacheKey(fusion));
}

// The groups a process of this build segmented the fusion into for `key`,
// and what the check refused then; nullopt when none is stored (or the
// cache is off), or when these inputs make other segments of the groups
// (another scheduler, or another grid-split decision, for sizes of the same
// signature): those were never checked, so the fusion is segmented afresh.
std::optional<SegmentedFusion> loadSegmentation(const std::string& key, const Fusion& fusion,
                                                const RuntimeInfo& runtime) {
  const std::optional<std::filesystem::path> dir = kernelCacheDir();
  if (!dir) return std::nullopt;
  struct Stored {
    std::vector<std::vector<int>> groups;
    std::vector<std::string> refused;
    std::vector<uint64_t> schedulers;
  };
  const uint64_t exprs = fusion.exprs().size();
  std::optional<Stored> stored = loadCacheEntryAs(*dir, "segments", key, [&](std::string payload) {
    ByteReader in(std::move(payload));
    Stored s;
    s.groups.resize(in.below(exprs + 1, "group count"));
    for (std::vector<int>& group : s.groups) {
      group.resize(in.below(exprs + 1, "group size"));
      for (int& e : group) e = static_cast<int>(in.below(exprs, "expression"));
    }
    s.refused.resize(in.below(1 << 20, "refusal count"));
    for (std::string& r : s.refused) r = in.bytes();
    s.schedulers.resize(in.below(2 * exprs + 1, "segment count"));
    for (uint64_t& scheduler : s.schedulers) scheduler = in.below(1 << 8, "scheduler");
    SMELT_CHECK(in.atEnd(), "bytes after the segmentation");
    return s;
  });
  if (!stored) return std::nullopt;
  const std::vector<uint64_t>& schedulers = stored->schedulers;
  std::optional<SegmentedFusion> segmented = segmentFusionAs(fusion, runtime, stored->groups);
  if (!segmented || segmented->segments.size() != schedulers.size()) return std::nullopt;
  for (size_t i = 0; i < schedulers.size(); ++i) {
    if (static_cast<uint64_t>(segmented->segments[i].scheduler) != schedulers[i]) return std::nullopt;
  }
  segmented->refused = std::move(stored->refused);
  return segmented;
}

void storeSegmentation(const std::string& key, const SegmentedFusion& segmented) {
  const std::optional<std::filesystem::path> dir = kernelCacheDir();
  if (!dir) return;
  ByteWriter out;
  out.u64(segmented.groups.size());
  for (const std::vector<int>& group : segmented.groups) {
    out.u64(group.size());
    for (int e : group) out.u64(static_cast<uint64_t>(e));
  }
  out.u64(segmented.refused.size());
  for (const std::string& r : segmented.refused) out.bytes(r);
  out.u64(segmented.segments.size());
  for (const Segment& segment : segmented.segments) out.u64(static_cast<uint64_t>(segment.scheduler));
  storeCacheEntry(*dir, "segments", key, out.data());
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

CompileCost& CompileCost::operator+=(const CompileCost& other) {
  segment_ms += other.segment_ms;
  schedule_ms += other.schedule_ms;
  lower_ms += other.lower_ms;
  nvrtc_ms += other.nvrtc_ms;
  nvrtc_compiles += other.nvrtc_compiles;
  disk_cache_hits += other.disk_cache_hits;
  segmentations_from_disk += other.segmentations_from_disk;
  segment_candidates += other.segment_candidates;
  pool_compiles += other.pool_compiles;
  return *this;
}

CompileCost FusionRun::cost() const {
  CompileCost total = segmentation;
  for (const SegmentRun& s : segments) total += s.cost;
  return total;
}

InputInfo inputInfoOf(const at::Tensor& tensor) {
  return InputInfo::tensor(fromAtenType(tensor.scalar_type()), tensor.sizes().vec(),
                           tensor.strides().vec(), dataAlignment(tensor));
}

std::vector<InputInfo> inputInfosOf(const Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  SMELT_CHECK(inputs.size() == fusion.inputs().size(), "the fusion takes ",
              fusion.inputs().size(), " inputs but ", inputs.size(), " were given");
  std::vector<InputInfo> infos;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Val* v = fusion.inputs()[i];
    if (v->asTensor() != nullptr) {
      infos.push_back(inputInfoOf(inputs[i]));
    } else {
      SMELT_CHECK(inputs[i].dim() == 0, "input ", i, " (", v->toString(),
                  ") is a scalar: pass it as a 0-dim tensor");
      infos.push_back(InputInfo::scalar(v->dtype(), inputs[i].item<double>()));
    }
  }
  return infos;
}

// Everything RuntimeInfo reads of the inputs, as numbers: per input whether
// it is a tensor, its dtype, sizes, strides and alignment (tensors) or its
// value's bits (scalars). Equal keys give equal heuristics.
std::vector<int64_t> exactInputsKey(const std::vector<InputInfo>& infos) {
  std::vector<int64_t> key;
  for (const InputInfo& info : infos) {
    key.push_back(info.is_tensor);
    key.push_back(static_cast<int64_t>(info.dtype));
    if (!info.is_tensor) {
      int64_t bits = 0;
      static_assert(sizeof(bits) == sizeof(info.scalar_value));
      std::memcpy(&bits, &info.scalar_value, sizeof(bits));
      key.push_back(bits);
      continue;
    }
    key.push_back(static_cast<int64_t>(info.sizes.size()));
    key.insert(key.end(), info.sizes.begin(), info.sizes.end());
    key.insert(key.end(), info.strides.begin(), info.strides.end());
    key.push_back(info.alignment);
  }
  return key;
}

std::string inputSignature(const std::vector<at::Tensor>& inputs, std::optional<c10::Device> device) {
  std::ostringstream os;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    os << (i ? "; " : "") << toString(fromAtenType(t.scalar_type())) << "[";
    for (int64_t d = 0; d < t.dim(); ++d) {
      os << (d ? "," : "");
      if (t.size(d) == 1) {
        os << "1";
      } else {
        int64_t bucket = 0;
        while ((int64_t{1} << bucket) < t.size(d)) ++bucket;
        os << "b" << bucket;
      }
    }
    os << "]{";
    std::vector<bool> contiguity = contiguityOf(t);
    for (size_t d = 0; d < contiguity.size(); ++d) {
      os << (d ? "," : "") << (contiguity[d] ? "c" : "n");
    }
    os << "}@" << dataAlignment(t) << ":" << device.value_or(t.device()).str();
  }
  return os.str();
}

// Everything a run's lookups depend on: the device, and per input its
// device, appendShapeKey's part and its data alignment.
std::vector<int64_t> runKey(const Fusion& fusion, const std::vector<at::Tensor>& inputs,
                            c10::Device device, bool compile_only) {
  std::vector<int64_t> key = {static_cast<int64_t>(device.type()), device.index(), compile_only};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    key.push_back(static_cast<int64_t>(t.device().type()));
    appendShapeKey(key, t, fusion.inputs()[i]->asTensor() == nullptr && !t.is_meta());
    key.push_back(dataAlignment(t));
  }
  return key;
}

std::string FusionRun::toString() const {
  std::ostringstream os;
  if (empty_input) os << "no kernel: an input has an empty dimension (outputs evaluated with ATen)\n";
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentRun& s = segments[i];
    if (s.view) {
      os << i << " view: no kernel, the outputs are views of the inputs\n";
      continue;
    }
    if (s.library) {
      os << i << " " << smelt::toString(s.scheduler) << " " << s.params << "\n";
      continue;
    }
    os << i << " " << smelt::toString(s.scheduler) << " " << s.params << " "
       << (s.compiled ? "compiled" : "reused") << " " << s.launch.toString() << "\n";
  }
  for (const std::string& r : refused) os << "refused: " << r << "\n";
  return os.str();
}

FusionExecutorCache::FusionExecutorCache(std::unique_ptr<Fusion> fusion, ExecutorOptions options)
    : fusion_(std::move(fusion)), options_(std::move(options)) {
  SMELT_CHECK(fusion_ != nullptr, "FusionExecutorCache: fusion is null");
  checkUnscheduled(*fusion_);
  std::unique_ptr<Fusion> any_strides = fusion_->clone();
  for (Val* v : any_strides->inputs()) {
    if (TensorView* tv = v->asTensor()) {
      tv->setContiguity(std::vector<bool>(tv->logicalDomain().size(), false));
    }
  }
  validator_ = InputValidator(*any_strides);
}

std::vector<at::Tensor> segmentInputTensors(
    const Segment& segment, const std::unordered_map<const Val*, at::Tensor>& values,
    int64_t chunks) {
  const GridSplit& split = segment.grid_split;
  std::vector<at::Tensor> tensors;
  for (const Val* v : segment.inputs) {
    if (split.role == GridSplitRole::Partials && v->asTensor() != nullptr) {
      const at::Tensor& t = values.at(v);
      std::vector<int64_t> sizes = t.sizes().vec();
      if (split.inner) {  // [.., R, N] -> [.., R * chunks, N / chunks]
        sizes.end()[-2] *= chunks;
        sizes.back() /= chunks;
      } else {  // [N, C, ..] -> [N / chunks, chunks * C, ..]
        sizes[0] /= chunks;
        sizes[1] *= chunks;
      }
      tensors.push_back(t.reshape(sizes));
    } else if (split.role == GridSplitRole::Final && v == split.final_input) {
      const at::Tensor& partials = values.at(split.partials);
      std::vector<int64_t> sizes = partials.sizes().vec();
      if (split.inner) {  // [.., R * chunks] -> [.., R, chunks]
        sizes.back() /= chunks;
        sizes.push_back(chunks);
      } else {  // [chunks * C, ..] -> [chunks, C, ..]
        sizes[0] /= chunks;
        sizes.insert(sizes.begin(), chunks);
      }
      tensors.push_back(partials.view(sizes));
    } else {
      tensors.push_back(values.at(v));
    }
  }
  return tensors;
}

void FusionExecutorCache::setHeuristicOverride(HeuristicOverride override_params) {
  std::lock_guard<std::mutex> lock(mutex_);
  override_ = std::move(override_params);
  // Choices made under the previous override no longer hold.
  for (auto& [signature, entry] : signatures_) {
    for (auto& per_segment : entry.choices) per_segment.clear();
  }
  memo_ = RunMemo();
}

namespace {

// A segment that only moves data may stand as views of its inputs when no
// user can tell: its outputs are read by later segments only (read-only), or,
// for a fusion output, the view is the only way to the buffer it shows: each
// input is an intermediate of this run that no other segment reads and that
// is no fusion output (never a fusion input: an output must not alias one).
std::vector<bool> segmentsThatMayBeViews(const Fusion& fusion, const SegmentedFusion& segmented) {
  const auto& inputs = fusion.inputs();
  const auto& outputs = fusion.outputs();
  auto contains = [](const std::vector<Val*>& vals, const Val* v) {
    return std::find(vals.begin(), vals.end(), v) != vals.end();
  };
  std::unordered_map<const Val*, int> readers;
  for (const Segment& segment : segmented.segments) {
    for (const Val* v : segment.inputs) ++readers[v];
  }
  std::vector<bool> may_view;
  for (const Segment& segment : segmented.segments) {
    const bool writes_output = std::any_of(segment.outputs.begin(), segment.outputs.end(),
                                           [&](const Val* v) { return contains(outputs, v); });
    const bool reads_private_intermediates =
        std::all_of(segment.inputs.begin(), segment.inputs.end(), [&](const Val* v) {
          return v->asTensor() == nullptr ||
                 (!contains(inputs, v) && !contains(outputs, v) && readers.at(v) == 1);
        });
    may_view.push_back(movesDataOnly(*segment.fusion) && (!writes_output || reads_private_intermediates));
  }
  return may_view;
}

}  // namespace

FusionExecutorCache::SignatureEntry& FusionExecutorCache::entryFor(
    const std::string& signature, const std::vector<at::Tensor>& inputs, c10::Device device) {
  auto it = signatures_.find(signature);
  if (it != signatures_.end()) return it->second;
  SignatureEntry entry;
  entry.fusion = fusion_->clone();
  recomputeWindowInputs(*entry.fusion);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (TensorView* tv = entry.fusion->inputs()[i]->asTensor()) {
      SMELT_CHECK(inputs[i].dim() == static_cast<int64_t>(tv->logicalDomain().size()),
                  "input ", i, " (", tv->name(), ") has rank ", tv->logicalDomain().size(),
                  " but a tensor of rank ", inputs[i].dim(), " was given");
      tv->setContiguity(contiguityOf(inputs[i]));
    }
  }
  const ExecutionTarget target = executionTarget(options_, device);
  const int arch = target.arch;
  RuntimeInfo runtime(*entry.fusion, inputInfosOf(*entry.fusion, inputs), target);
  const std::string stored_key = segmentationKey(*entry.fusion, signature, options_, arch);
  if (!override_) {
    if (std::optional<SegmentedFusion> stored = loadSegmentation(stored_key, *entry.fusion, runtime)) {
      entry.segmented = *std::move(stored);
      last_run_.segmentation.segmentations_from_disk = 1;
    }
  }
  // A segment whose schedule does not lower becomes smaller segments, not a
  // failure at run time (segmentation.refused names it: a scheduler defect).
  // The scheduler's own parameters are checked: what an override forces
  // fails where it is used, with its own error.
  // The schedules it lowers are kept for the first run (CheckedSchedule).
  const SegmentCheck lowers = [this, &entry](const Segment& segment,
                                             const RuntimeInfo& segment_runtime) {
    if (segment.scheduler == SchedulerType::LibraryMatmul) return std::string();  // nothing lowers
    const SchedulerEntry& scheduler = schedulerEntry(segment.scheduler);
    CompileCost& cost = last_run_.segmentation;
    const auto start = std::chrono::steady_clock::now();
    try {
      std::unique_ptr<HeuristicParams> params = scheduler.heuristics(*segment.fusion, segment_runtime);
      CheckedSchedule checked;
      checked.scheduled = segment.fusion->clone();
      scheduler.schedule(*checked.scheduled, *params);
      const auto lower_start = std::chrono::steady_clock::now();
      cost.schedule_ms += msSince(start);
      checked.lowered = std::make_unique<GpuLower>(checked.scheduled.get(), options_.lower);
      checked.lowered->run();
      cost.lower_ms += msSince(lower_start);
      entry.checked[checkedScheduleKey(segment, params->toString())] = std::move(checked);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  if (last_run_.segmentation.segmentations_from_disk == 0) {
    entry.segmented = segmentFusion(*entry.fusion, runtime, override_, lowers);
    last_run_.segmentation.segment_candidates = entry.segmented.candidates_checked;
    // A rewritten fusion's segmentation (chunked scans) is made afresh: its
    // segments index the rewrite's expressions, not the stored fusion's.
    if (!override_ && entry.segmented.rewritten == nullptr) storeSegmentation(stored_key, entry.segmented);
  }
  if (dumpEnabled("segments")) {
    std::cout << "segmentation of " << signature
              << (last_run_.segmentation.segmentations_from_disk ? " (from the disk cache)" : "")
              << ":\n" << entry.segmented.toString() << std::flush;
  }
  entry.kernels.resize(entry.segmented.segments.size());
  entry.choices.resize(entry.segmented.segments.size());
  entry.may_view = segmentsThatMayBeViews(*entry.fusion, entry.segmented);
  for (const Segment& segment : entry.segmented.segments) {
    std::optional<LibraryMatmulParams>& library = entry.library.emplace_back();
    if (segment.scheduler != SchedulerType::LibraryMatmul) continue;
    const RuntimeInfo segment_runtime(*segment.fusion, segmentInputInfos(segment, runtime), target);
    library = libraryMatmulHeuristics(*segment.fusion, segment_runtime);
  }
  last_run_.new_signature = true;
  return signatures_.emplace(signature, std::move(entry)).first->second;
}

std::vector<at::Tensor> FusionExecutorCache::runFusionWithInputs(
    const std::vector<at::Tensor>& inputs, std::optional<c10::Device> device) {
  const std::optional<c10::Device> inputs_device = validator_.validate(inputs);
  SMELT_CHECK(!device || !inputs_device ||
                  (device->type() == inputs_device->type() &&
                   (!device->has_index() || device->index() == inputs_device->index())),
              "the fusion's tensor inputs are on ",
              inputs_device ? inputs_device->str() : "", " but it was asked to run on ",
              device ? device->str() : "");
  std::lock_guard<std::mutex> lock(mutex_);
  SegmentWalk walk = walkSegments(inputs, inputs_device.value_or(device.value_or(options_.device)), false);
  return finishWalk(walk);
}

// Schedules segment `s` for inputs first seen (its scheduler's heuristics for
// them) unless a kernel for the parameters they choose exists.
std::unique_ptr<FusionExecutorCache::PendingCompile> FusionExecutorCache::scheduleSegment(
    SignatureEntry& entry, size_t s, std::vector<InputInfo> infos,
    const std::vector<at::Tensor>& segment_inputs, c10::Device device, SegmentChoice& choice) {
  const Segment& segment = entry.segmented.segments[s];
  const auto schedule_start = std::chrono::steady_clock::now();
  const SchedulerEntry& scheduler = schedulerEntry(segment.scheduler);
  RuntimeInfo runtime(*segment.fusion, std::move(infos), executionTarget(options_, device));
  std::string reason = scheduler.reject_reason(*segment.fusion, runtime);
  SMELT_INTERNAL_CHECK(reason.empty(), "segment ", s, " was given to the ",
                       toString(segment.scheduler), " scheduler, which now declines: ",
                       reason);
  std::unique_ptr<HeuristicParams> params = scheduler.heuristics(*segment.fusion, runtime);
  if (override_) override_(*params);
  choice.params = params->toString();
  std::unique_ptr<CompiledSegment>& slot = entry.kernels[s][choice.params];
  if (slot != nullptr) {
    choice.compiled = slot.get();
    return nullptr;
  }
  auto pending = std::make_unique<PendingCompile>();
  pending->segment = s;
  pending->choice = &choice;
  pending->inputs = segment_inputs;
  pending->device = device;
  pending->run.scheduler = segment.scheduler;
  pending->run.params = choice.params;
  pending->run.heuristics = true;
  // The segmentation's check scheduled and lowered it already, unless
  // these inputs chose other parameters.
  slot = std::make_unique<CompiledSegment>();
  auto checked = entry.checked.find(checkedScheduleKey(segment, choice.params));
  if (checked != entry.checked.end()) {
    slot->scheduled = std::move(checked->second.scheduled);
    pending->lowered = std::move(checked->second.lowered);
    entry.checked.erase(checked);
  } else {
    slot->scheduled = segment.fusion->clone();
    scheduler.schedule(*slot->scheduled, *params);
  }
  pending->compiled = slot.get();
  pending->run.cost.schedule_ms = msSince(schedule_start);
  return pending;
}

void FusionExecutorCache::compilePending(PendingCompile& pending, bool on_meta,
                                         const PrecompiledKernel* precompiled) const {
  SegmentRun& run = pending.run;
  FusionExecutor& executor = pending.compiled->executor;
  if (pending.begun) {
    executor.finishCompile(precompiled);
  } else {
    executor.compileLowered(pending.compiled->scheduled.get(), std::move(pending.lowered),
                            pending.inputs, options_);
  }
  if (!executor.compiledFromCache()) {
    const CompiledKernel& kernel = executor.compiledKernel();
    run.cost.nvrtc_ms = kernel.compile_ms;
    (kernel.from_disk_cache ? run.cost.disk_cache_hits : run.cost.nvrtc_compiles) += 1;
  }
  run.compiled = true;
  if (on_meta && pending.device.is_cpu()) executor.kernel();  // the simulator's kernel IR
  run.cost.lower_ms = executor.loweringMs();
  if (!on_meta) return;
  run.cost.pool_compiles = 1;
  const auto run_start = std::chrono::steady_clock::now();
  const std::vector<at::Tensor> outputs = executor.run(pending.inputs, c10::Device(c10::kMeta));
  run.run_ms = msSince(run_start);
  run.launch = executor.launchParams();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const at::Tensor& predicted = pending.outputs.at(j);
    SMELT_INTERNAL_CHECK(outputs[j].sizes() == predicted.sizes() &&
                             outputs[j].strides() == predicted.strides() &&
                             outputs[j].scalar_type() == predicted.scalar_type(),
                         "segment ", pending.segment, " output ", j, ": the kernel gives ",
                         outputs[j].sizes(), " strides ", outputs[j].strides(),
                         " but the fusion's extents predicted ", predicted.sizes(), " strides ",
                         predicted.strides());
  }
}

void FusionExecutorCache::finishPending(SignatureEntry& entry,
                                        std::vector<std::unique_ptr<PendingCompile>>& pending) {
  std::exception_ptr first_error;
  size_t failed_at = last_run_.segments.size();
  for (std::unique_ptr<PendingCompile>& p : pending) {
    p->done.wait();  // every task, before anything it refers to goes
    try {
      p->done.get();
      p->choice->compiled = p->compiled;
      memo_.choices[p->segment] = p->choice;
    } catch (...) {
      entry.kernels[p->segment].erase(p->choice->params);
      if (!first_error) {
        first_error = std::current_exception();
        failed_at = p->segment;
      }
    }
  }
  if (first_error) {
    // As compiling in order would have left it: the segments before the
    // failing one ran.
    last_run_.segments.resize(failed_at);
    last_executors_.resize(failed_at);
    pending.clear();
    std::rethrow_exception(first_error);
  }
  for (std::unique_ptr<PendingCompile>& p : pending) last_run_.segments[p->segment] = std::move(p->run);
  pending.clear();
}

FusionExecutorCache::SegmentWalk FusionExecutorCache::walkSegments(const std::vector<at::Tensor>& inputs,
                                                                   c10::Device device, bool compile_only) {
  // Where tensors of this run live: a segment without tensor inputs (an
  // iota or a constant computed alone) runs there too.
  const c10::Device run_device = compile_only ? c10::Device(c10::kMeta) : device;
  // Scopes torch.profiler shows (CPU activity) where a run's host time goes.
  RECORD_FUNCTION("smelt::run_segments", std::vector<c10::IValue>());
  SegmentWalk walk;
  walk.cache = this;
  last_run_ = FusionRun();
  last_executors_.clear();
  std::vector<int64_t> run_key = runKey(*fusion_, inputs, device, compile_only);
  const bool repeated = memo_.entry != nullptr && memo_.key == run_key;
  last_run_.repeated_inputs = repeated;
  last_run_.signature = repeated ? memo_.signature : inputSignature(inputs, device);
  if (hasEmptyInput(*fusion_, inputs)) {
    // No kernel for an input with an empty dimension: the outputs are empty or
    // a reduction's identity (sum over an empty dimension is 0), from ATen.
    last_run_.empty_input = true;
    walk.outputs = evaluateWithATen(*fusion_, inputs);
    return walk;
  }
  const auto segment_start = std::chrono::steady_clock::now();
  SignatureEntry& entry = repeated ? *memo_.entry : entryFor(last_run_.signature, inputs, device);
  walk.entry = &entry;
  if (!repeated) memo_ = RunMemo{std::move(run_key), last_run_.signature, &entry,
                               std::vector<SegmentChoice*>(entry.segmented.segments.size())};
  if (last_run_.new_signature) {
    CompileCost& segmentation = last_run_.segmentation;
    segmentation.segment_ms = msSince(segment_start) - segmentation.schedule_ms - segmentation.lower_ms;
  }
  last_run_.refused = entry.segmented.refused;
  std::unordered_map<const Val*, at::Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[entry.fusion->inputs()[i]] = inputs[i];
  std::optional<RuntimeInfo> whole;  // only grid splits need it
  CompilePool& pool = options_.compile_pool != nullptr ? *options_.compile_pool : CompilePool::global();
  std::vector<std::unique_ptr<PendingCompile>>& pending = walk.pending;
  try {
  for (size_t s = 0; s < entry.segmented.segments.size(); ++s) {
    const Segment& segment = entry.segmented.segments[s];
    if (segment.grid_split.role != GridSplitRole::None && !whole) {
      whole.emplace(*entry.fusion, inputInfosOf(*entry.fusion, inputs));
    }
    const int64_t chunks = whole ? gridSplitChunksOf(segment, *whole) : 1;
    RECORD_FUNCTION("smelt::segment", std::vector<c10::IValue>());
    const std::vector<at::Tensor> segment_inputs = segmentInputTensors(segment, values, chunks);
    SegmentRun run;
    run.scheduler = segment.scheduler;
    if (entry.may_view[s]) {
      if (std::optional<std::vector<at::Tensor>> views = outputsAsViews(*segment.fusion, segment_inputs)) {
        for (size_t j = 0; j < segment.outputs.size(); ++j) values[segment.outputs[j]] = (*views)[j];
        run.view = true;
        recordSegment(std::move(run), nullptr);
        continue;
      }
    }
    if (const std::optional<LibraryMatmulParams>& library = entry.library[s]) {
      const auto run_start = std::chrono::steady_clock::now();
      const std::vector<at::Tensor> outputs = runLibraryMatmul(library->call, segment_inputs);
      run.run_ms = msSince(run_start);
      run.library = true;
      run.params = library->toString();
      values[segment.outputs.at(0)] = outputs.at(0);
      recordSegment(std::move(run), nullptr);
      continue;
    }
    SegmentChoice* chosen = memo_.choices[s];
    if (chosen == nullptr) {
      std::vector<InputInfo> infos = inputInfosOf(*segment.fusion, segment_inputs);
      chosen = &entry.choices[s][exactInputsKey(infos)];
      std::unique_ptr<PendingCompile> fresh;
      if (chosen->compiled == nullptr) {
        const auto schedule_start = std::chrono::steady_clock::now();
        fresh = scheduleSegment(entry, s, std::move(infos), segment_inputs, device, *chosen);
        run.heuristics = true;
        if (!fresh) run.cost.schedule_ms = msSince(schedule_start);  // a kernel of its parameters exists
      }
      if (fresh && compile_only) {
        // The pool lowers and compiles it; its outputs follow from its extents.
        const std::vector<at::Tensor> outputs = metaOutputsOf(*fresh->compiled->scheduled, segment_inputs);
        for (size_t j = 0; j < segment.outputs.size(); ++j) values[segment.outputs[j]] = outputs[j];
        fresh->outputs = outputs;
        fresh->prepared = pool.submit([this, job = fresh.get()] {
          FusionExecutor& executor = job->compiled->executor;
          executor.beginCompile(job->compiled->scheduled.get(), std::move(job->lowered), job->inputs, options_);
          job->begun = true;
          job->nvrtc = executor.nvrtcRequest();
          if (!job->nvrtc) compilePending(*job, true);  // cached: nothing to wait for
        });
        recordSegment(std::move(run), &fresh->compiled->executor);  // run: replaced by the compile's
        pending.push_back(std::move(fresh));
        continue;
      }
      if (fresh) {
        try {
          compilePending(*fresh, false);
        } catch (...) {
          entry.kernels[s].erase(chosen->params);  // no half-compiled kernel stays
          throw;
        }
        chosen->compiled = fresh->compiled;
        run = std::move(fresh->run);
      }
      memo_.choices[s] = chosen;
    }
    const std::vector<at::Tensor> outputs = runKernel(*chosen, segment_inputs, run_device, std::move(run));
    for (size_t j = 0; j < segment.outputs.size(); ++j) values[segment.outputs[j]] = outputs[j];
  }
  for (const Val* out : entry.fusion->outputs()) walk.outputs.push_back(values.at(out));
  } catch (...) {
    if (!compile_only) throw;
    walk.error = std::current_exception();  // an earlier segment's compile error comes first
  }
  return walk;
}

std::vector<at::Tensor> FusionExecutorCache::finishWalk(SegmentWalk& walk) {
  if (walk.entry == nullptr) return std::move(walk.outputs);
  finishPending(*walk.entry, walk.pending);
  if (walk.error) std::rethrow_exception(walk.error);
  walk.entry->checked.clear();  // schedules the first run's heuristics did not choose
  total_cost_ += last_run_.cost();
  return std::move(walk.outputs);
}

void FusionExecutorCache::recordSegment(SegmentRun run, const FusionExecutor* executor) {
  last_run_.segments.push_back(std::move(run));
  last_executors_.push_back(executor);
}

std::vector<at::Tensor> FusionExecutorCache::runKernel(const SegmentChoice& choice,
                                                       const std::vector<at::Tensor>& inputs,
                                                       c10::Device run_device, SegmentRun run) {
  FusionExecutor& executor = choice.compiled->executor;
  run.params = choice.params;
  // An executor lowers at most once: in its compile (a fresh kernel not
  // lowered by the check) or in its first CPU run (a kernel the cache had).
  const double lowered_before_run = executor.loweringMs();
  if (run.compiled) run.cost.lower_ms = lowered_before_run;
  const auto run_start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> outputs = executor.run(inputs, run_device);
  const double lowered_in_run = executor.loweringMs() - lowered_before_run;
  run.run_ms = msSince(run_start) - lowered_in_run;
  run.cost.lower_ms += lowered_in_run;
  run.launch = executor.launchParams();
  recordSegment(std::move(run), &executor);
  return outputs;
}

CompileCost FusionExecutorCache::compileCost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_cost_;
}

const SegmentedFusion& FusionExecutorCache::segmentation(const std::string& signature) const {
  auto it = signatures_.find(signature);
  SMELT_CHECK(it != signatures_.end(), "no run has had the input signature ", signature);
  return it->second.segmented;
}

int64_t FusionExecutorCache::numCompiledKernels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t count = 0;
  for (const auto& [signature, entry] : signatures_) {
    for (const auto& per_params : entry.kernels) count += static_cast<int64_t>(per_params.size());
  }
  return count;
}

const FusionExecutor& FusionExecutorCache::lastExecutor(size_t segment) const {
  SMELT_CHECK(segment < last_executors_.size(), "the latest run has ", last_executors_.size(),
              " segments; there is no segment ", segment);
  SMELT_CHECK(last_executors_[segment] != nullptr, "segment ", segment,
              " of the latest run ran no kernel (",
              last_run_.segments[segment].library ? "a library computed its matmul"
                                                  : "its outputs were views of its inputs",
              ")");
  return *last_executors_[segment];
}

}  // namespace smelt
