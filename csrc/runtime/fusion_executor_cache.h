// FusionExecutorCache: runs an unscheduled fusion on any inputs, scheduling
// it automatically.
//
//   auto fusion = std::make_unique<Fusion>();
//   { FusionGuard g(fusion.get()); ... define inputs, ops, outputs ... }
//   FusionExecutorCache cache(std::move(fusion));
//   std::vector<at::Tensor> outputs = cache.runFusionWithInputs({t0, t1});
//
// Per input signature (inputSignature: each input's dtype, rank, device,
// per dimension size 1 or its power-of-two size class, contiguity, and the
// data alignment) the fusion is copied with its inputs declaring that
// contiguity and segmented (scheduler/segmenter.h; one segment when a
// scheduler takes it whole). On every run each segment's heuristics are
// computed from its inputs; each distinct parameter set of a segment is
// scheduled on a copy of the segment and compiled once with FusionExecutor
// (sizes of one class may still change parameters, e.g. the vector width
// with divisibility). Segments run in order; the tensors passed between them
// are the executors' outputs, on the inputs' device. CPU inputs run in the
// simulator with race detection, CUDA inputs on the GPU.
//
// Across processes: a signature's segmentation (its groups of expressions)
// is kept in the disk cache (disk_kernel_cache.h, kind "segments"), keyed by
// the fusion with the signature's contiguity (fusionCacheKey), the
// signature, the target architecture, the lowering options and buildId();
// a later process segments the same fusion for the same signature by
// rebuilding those segments (segmentFusionAs), without the search and the
// checks' lowerings, and its kernels' launch descriptions come from the disk
// cache too (executor.h): a warm process lowers nothing for CUDA or meta
// inputs (compileFor for CPU lowers on the CompilePool what the simulator
// will run). Not while a heuristic override is set (it may change the groups).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "fusion/fusion.h"
#include "lower/lower.h"
#include "runtime/executor.h"
#include "runtime/input_validation.h"
#include "scheduler/heuristic.h"
#include "scheduler/matmul/library_matmul.h"
#include "scheduler/runtime_info.h"
#include "scheduler/segmenter.h"

namespace smelt {

// What the heuristics see of a tensor.
InputInfo inputInfoOf(const at::Tensor& tensor);
// One InputInfo per fusion input: tensors as given, scalar inputs (0-dim
// tensors) by value.
std::vector<InputInfo> inputInfosOf(const Fusion& fusion, const std::vector<at::Tensor>& inputs);

// "float[b4,1]{c,c}@16:cpu; double[]{}@16:cpu": per input its dtype, size
// classes ("1" for size 1, else b<ceil(log2(size))>), contiguity (c or n per
// dimension), data alignment in bytes (at most 16) and device.
// `device`, when given, replaces the inputs' own (compileFor).
std::string inputSignature(const std::vector<at::Tensor>& inputs,
                           std::optional<c10::Device> device = std::nullopt);

// The tensors `segment` reads, from `values` (the complete fusion's inputs
// and the outputs of the segments before it): as they are, or for a
// grid-split reduction regrouped into `chunks` per row (gridSplitChunksOf;
// segmenter.h).
std::vector<at::Tensor> segmentInputTensors(
    const Segment& segment, const std::unordered_map<const Val*, at::Tensor>& values,
    int64_t chunks);

// What compiling cost, in wall milliseconds: for one run (FusionRun::cost)
// or summed over a cache's runs (FusionExecutorCache::compileCost).
struct CompileCost {
  double segment_ms = 0;   // segmenting new input signatures (the search; its checks below)
  double schedule_ms = 0;  // the schedulers' checks, heuristics and scheduling
  double lower_ms = 0;     // lowering to the kernel IR
  double nvrtc_ms = 0;     // NVRTC, or reading the disk cache (disk_kernel_cache.h)
  int64_t nvrtc_compiles = 0;   // kernels NVRTC compiled
  int64_t disk_cache_hits = 0;  // kernels read from the disk cache instead
  // Signatures whose segmentation was read from the disk cache (no search,
  // no checks: see above).
  int64_t segmentations_from_disk = 0;
  // Candidate segments the search offered to the schedulers
  // (SegmentedFusion::candidates_checked): its work, counted.
  int64_t segment_candidates = 0;
  // Segments compileFor handed to the CompilePool (lowering, NVRTC or the
  // disk cache, the launch's checks), whatever the pool found in the caches.
  int64_t pool_compiles = 0;
  double totalMs() const { return segment_ms + schedule_ms + lower_ms + nvrtc_ms; }
  CompileCost& operator+=(const CompileCost& other);
};

// How one segment ran.
struct SegmentRun {
  SchedulerType scheduler = SchedulerType::Pointwise;
  std::string params;        // HeuristicParams::toString()
  bool compiled = false;     // scheduled and compiled for this run (else reused)
  // The scheduler's checks and heuristics ran for this run; false when the
  // segment's exact inputs (sizes, strides, alignment, scalar values) were
  // seen before and their choice was reused.
  bool heuristics = false;
  // No kernel ran: the segment only moves data and its outputs were views of
  // its inputs (outputsAsViews); then params, compiled and launch are unset.
  bool view = false;
  // No smelt kernel ran: a library computed the segment's matmul
  // (scheduler == LibraryMatmul; params say which call and why).
  bool library = false;
  LaunchParams launch;
  // This run's compile work for the segment (segment_ms unused) and the
  // wall time of its launch or simulation.
  CompileCost cost;
  double run_ms = 0;
};

struct FusionRun {
  std::string signature;
  bool new_signature = false;  // segmented for this run
  // The inputs had exactly the previous run's sizes, strides, alignments and
  // scalar values: the signature and each segment's choice were not looked up.
  bool repeated_inputs = false;
  bool empty_input = false;    // an input had an empty dimension: no kernel ran
  std::vector<SegmentRun> segments;
  // Segments the segmentation refused because their schedule did not lower
  // (SegmentedFusion::refused): each one a scheduler defect, paid in kernels.
  std::vector<std::string> refused;
  // Segmenting the new signature (zero when seen before): the search
  // (segment_ms), and the schedules and lowerings that check each segment
  // chosen (schedule_ms, lower_ms), which the segments' compiles reuse.
  CompileCost segmentation;
  // Segmentation plus every segment's compile work.
  CompileCost cost() const;
  // One line per segment: "0 reduction ReductionParams{...} compiled grid(...) block(...)",
  // then one "refused: ..." line per refusal.
  std::string toString() const;
};

class FusionExecutorCache;

// One fusion of a graph to compile ahead: compileFor's arguments.
struct CompileForJob {
  FusionExecutorCache* cache = nullptr;
  std::vector<at::Tensor> inputs;
  c10::Device device = c10::Device(c10::kCPU);
};

// compileFor's result for one job: its outputs (meta tensors), or its error.
struct CompileForResult {
  std::vector<at::Tensor> outputs;
  std::exception_ptr error;
};

// FusionExecutorCache::compileFor for every job, with the new kernels of all
// of them compiled together: each job's segments are segmented and scheduled
// (jobs on up to the pool's threads at once), every new kernel is lowered and
// generated on the pool, then the kernels NVRTC must compile, from all the
// jobs, are compiled as one program per pool thread (nvrtc_batch.h), and
// each job is finished. So a graph of many one-kernel fusions (a CNN's) pays
// NVRTC's start per pool thread, not per fusion; a kernel two jobs share is
// compiled once. A job whose cache an earlier job has (a graph's equal
// fusions share one) is compiled after it, in a later round. Each job's
// result is the one compileFor gives it alone: the same kernels, reports
// and errors. The pool is the first job's (ExecutorOptions::compile_pool).
std::vector<CompileForResult> compileForAll(const std::vector<CompileForJob>& jobs);

class FusionExecutorCache {
 public:
  // `fusion` must be unscheduled (smelt::Error naming a scheduled tensor
  // otherwise); the cache owns it.
  explicit FusionExecutorCache(std::unique_ptr<Fusion> fusion, ExecutorOptions options = {});

  // Inputs are checked like FusionExecutor's (count, dtypes, ranks, fixed and
  // broadcast sizes, one device; smelt::Error naming the input) except
  // strides: any layout is accepted, contiguity is part of the signature.
  // `device`: where a fusion without tensor inputs (an iota, a constant)
  // runs (default: the options' device); given with tensor inputs, it must
  // be theirs (smelt::Error otherwise).
  std::vector<at::Tensor> runFusionWithInputs(const std::vector<at::Tensor>& inputs,
                                              std::optional<c10::Device> device = std::nullopt);

  // Segments, schedules, lowers and compiles the fusion for inputs like
  // `inputs` as if they were on `device`, running nothing: tensors of any
  // device (meta ones included) stand for their sizes, strides, dtype and
  // storage offset; scalars are 0-dim tensors with their values. A later
  // runFusionWithInputs of such inputs on `device` finds every kernel ready.
  // Returns the outputs as meta tensors. Compiling ahead like this lets a
  // caller compile many fusions at once on threads (one per cache).
  // The segments are segmented and scheduled in order on this thread (each
  // one's outputs, from its fusion's extents, are the next one's inputs);
  // each new kernel's lowering, NVRTC compile and launch check run on the
  // CompilePool (ExecutorOptions::compile_pool), and this call returns when
  // all have: with the kernels, cache keys and errors of compiling them one
  // after another (the first failing segment's error, as it would be).
  // compileForAll compiles several caches' fusions this way at once.
  std::vector<at::Tensor> compileFor(const std::vector<at::Tensor>& inputs, c10::Device device);

  // Called with each segment's parameters before they are used: a user may
  // change any field (the kernel is then compiled for the changed ones).
  // Also called, when a new input signature is segmented, with the reduction
  // parameters of each reduction segment: setting grid_split there splits
  // it into two kernels (segmenter.h).
  using HeuristicOverride = std::function<void(HeuristicParams&)>;
  void setHeuristicOverride(HeuristicOverride override_params);

  const Fusion& fusion() const { return *fusion_; }
  // The latest run (empty before the first).
  const FusionRun& lastRun() const { return last_run_; }
  // How the inputs of a signature seen before were segmented.
  const SegmentedFusion& segmentation(const std::string& signature) const;
  int64_t numSignatures() const { return static_cast<int64_t>(signatures_.size()); }
  int64_t numCompiledKernels() const;
  // What compiling has cost over every run and compileFor so far.
  CompileCost compileCost() const;
  // The executor of segment `segment` of the latest run (its kernel, CUDA
  // source, shared-memory plan, launch parameters).
  const FusionExecutor& lastExecutor(size_t segment) const;

 private:
  struct CompiledSegment {
    std::unique_ptr<Fusion> scheduled;
    FusionExecutor executor;
  };
  // What the heuristics chose for one segment's exact inputs.
  struct SegmentChoice {
    std::string params;  // HeuristicParams::toString()
    CompiledSegment* compiled = nullptr;
  };
  // A segment the segmentation's check scheduled and lowered: the first
  // run compiles it as it is when its heuristics choose the same parameters.
  struct CheckedSchedule {
    std::unique_ptr<Fusion> scheduled;
    std::unique_ptr<GpuLower> lowered;
  };
  struct SignatureEntry {
    std::unique_ptr<Fusion> fusion;  // the copy this signature's segments come from
    SegmentedFusion segmented;
    // By checkedScheduleKey; emptied after the signature's first run.
    std::map<std::string, CheckedSchedule> checked;
    // Per segment: parameters (toString) -> compiled kernel.
    std::vector<std::map<std::string, std::unique_ptr<CompiledSegment>>> kernels;
    // Per segment: exact inputs (exactInputsKey) -> the choice made for them.
    // A repeated shape (every call of a static-shape graph) skips the
    // scheduler's checks and heuristics, which cost far more than a launch.
    std::vector<std::map<std::vector<int64_t>, SegmentChoice>> choices;
    // Per segment: it only moves data, and views of its inputs may stand for
    // its outputs without a user telling (segmentsThatMayBeViews).
    std::vector<bool> may_view;
    // Per segment: the library call of a LibraryMatmul segment.
    std::vector<std::optional<LibraryMatmulParams>> library;
  };

  // `device`: where the inputs are (their target architecture steers the
  // heuristics).
  SignatureEntry& entryFor(const std::string& signature, const std::vector<at::Tensor>& inputs,
                           c10::Device device);
  // A new kernel of one segment: scheduled, to be lowered and compiled.
  struct PendingCompile {
    size_t segment = 0;
    SegmentChoice* choice = nullptr;
    CompiledSegment* compiled = nullptr;
    std::unique_ptr<GpuLower> lowered;  // the segmentation check's, or none yet
    std::vector<at::Tensor> inputs;
    c10::Device device = c10::Device(c10::kCPU);  // where the kernel will run
    SegmentRun run;                     // completed by the compile
    std::vector<at::Tensor> outputs;    // compileFor: predicted by metaOutputsOf
    // compileFor: the CompilePool's task preparing the compile (lowering,
    // generating the kernel; all of the compile when the kernel is cached),
    // what it asks NVRTC for (none: cached), and the compile's end
    // (compileTogether).
    std::shared_future<void> prepared;
    bool begun = false;  // the preparing task began the executor's compile
    std::optional<NvrtcRequest> nvrtc;
    std::shared_future<void> done;
  };
  friend std::vector<CompileForResult> compileForAll(const std::vector<CompileForJob>& jobs);
  // A run's way through its segments (walkSegments).
  struct SegmentWalk {
    FusionExecutorCache* cache = nullptr;
    SignatureEntry* entry = nullptr;  // none: an input has an empty dimension
    // compileFor: the new kernels the pool compiles, in segment order.
    std::vector<std::unique_ptr<PendingCompile>> pending;
    std::vector<at::Tensor> outputs;
    // compileFor: what stopped the walk, raised after the earlier segments'
    // compile errors (finishWalk).
    std::exception_ptr error;
  };
  // runFusionWithInputs and compileFor, with mutex_ held: runs every segment
  // (compile_only: on meta tensors, each new kernel handed to the pool),
  // keyed by the inputs' signature on `device`.
  SegmentWalk walkSegments(const std::vector<at::Tensor>& inputs, c10::Device device, bool compile_only);
  // Waits for the walk's pending kernels (finishPending), raises its error,
  // adds the run's cost; returns the outputs.
  std::vector<at::Tensor> finishWalk(SegmentWalk& walk);
  // compileFor's first step, with mutex_ held: the walk of meta stand-ins
  // for `inputs`.
  SegmentWalk prepareCompileFor(const std::vector<at::Tensor>& inputs, c10::Device device);
  // compileFor's second step, for the walks of one or several caches: waits
  // for their kernels' preparing tasks, then compiles the kernels NVRTC must
  // compile as one program per pool thread (nvrtc_batch.h) and finishes each
  // on the pool (compilePending); cached kernels were finished by their
  // preparing task.
  static void compileTogether(const std::vector<SegmentWalk*>& walks, CompilePool& pool);
  // The segment's heuristics for inputs first seen; a new kernel for the
  // parameters they choose, scheduled (nullptr when one exists: then `choice`
  // points to it).
  std::unique_ptr<PendingCompile> scheduleSegment(SignatureEntry& entry, size_t s,
                                                  std::vector<InputInfo> infos,
                                                  const std::vector<at::Tensor>& segment_inputs,
                                                  c10::Device device, SegmentChoice& choice);
  // Lowers (unless the check did) and compiles it, recording the cost in
  // pending.run; compileFor's also evaluates its launch on meta tensors and,
  // for the simulator (a CPU device), lowers a kernel the caches had: the
  // first run then finds the kernel IR ready instead of lowering in turn.
  // compileFor's take `precompiled`: NVRTC's result for pending.nvrtc.
  void compilePending(PendingCompile& pending, bool on_meta,
                      const PrecompiledKernel* precompiled = nullptr) const;
  // Waits for compileFor's pool tasks; a compiled kernel becomes its choice,
  // a failed one is forgotten (its slot erased). Rethrows the error of the
  // first segment that failed.
  void finishPending(SignatureEntry& entry, std::vector<std::unique_ptr<PendingCompile>>& pending);
  // Appends a segment's run to the latest run's record (executor: none for
  // views and library calls).
  void recordSegment(SegmentRun run, const FusionExecutor* executor);
  // Runs the chosen kernel on the segment's inputs and records the run, with
  // the lowering a first CPU run does counted apart from its run time.
  std::vector<at::Tensor> runKernel(const SegmentChoice& choice, const std::vector<at::Tensor>& inputs,
                                    c10::Device run_device, SegmentRun run);

  std::unique_ptr<Fusion> fusion_;
  InputValidator validator_;  // of fusion_ with every input declared non-contiguous
  ExecutorOptions options_;
  HeuristicOverride override_;
  // Runs from several threads take turns: they share signatures_, the
  // compiled segments and the latest-run state.
  mutable std::mutex mutex_;
  std::map<std::string, SignatureEntry> signatures_;
  // The latest run's exact inputs (runKey) and what it looked up for them: a
  // run with the same inputs again (every call of a static-shape model)
  // skips building the signature and each segment's exact key. The
  // segments' inputs follow from the run's (their shapes, strides and
  // alignments are computed, or fresh allocations aligned beyond 16 bytes).
  struct RunMemo {
    std::vector<int64_t> key;
    std::string signature;
    SignatureEntry* entry = nullptr;
    std::vector<SegmentChoice*> choices;  // per segment; null: none yet, or a view
  };
  RunMemo memo_;
  FusionRun last_run_;
  CompileCost total_cost_;
  std::vector<const FusionExecutor*> last_executors_;
};

}  // namespace smelt
