#include "runtime/executor.h"

#include "fusion/symbols.h"
#include "lower/output_layout.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "fusion/error.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/lower.h"
#include "runtime/aten_evaluator.h"
#include "runtime/cuda_driver.h"
#include "runtime/fusion_key.h"
#include "runtime/index_type.h"
#include "runtime/kernel_compile.h"
#include "runtime/launch_limits.h"
#include "runtime/simulator/simulator.h"

namespace smelt {

std::string optionsKey(const ExecutorOptions& options, int arch) {
  const LowerOptions& lower = options.lower;
  return errorMessage("sm_", arch, " smem_limit=", lower.max_shared_memory_bytes, " hazards=",
                      lower.smem_hazards == SmemHazards::Precise ? "precise" : "conservative",
                      " allocator=", lower.smem_allocator == SmemAllocator::Best ? "best" : "stack");
}

namespace {

// The strides a kernel is given. A size-1 dimension's stride never meets a
// nonzero index, so it is set to what contiguity implies: then stride[d] ==
// size[d + 1] * stride[d + 1] holds for every dimension declared contiguous,
// which vectorized accesses rely on (vectorize.h).
std::vector<int64_t> kernelStrides(const at::Tensor& t) {
  std::vector<int64_t> strides = t.strides().vec();
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (t.size(d) == 1) {
      strides[d] = expected;
    } else if (strides[d] != 0) {  // expanded broadcasts (stride 0) are not stepped through
      expected = strides[d] * t.size(d);
    }
  }
  return strides;
}

void bindTensor(std::map<std::string, int64_t>& bindings, const std::string& name, const at::Tensor& t,
                const std::vector<int64_t>& strides) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    bindings[sizeSymbol(name, d)] = t.size(d);
    bindings[strideSymbol(name, d)] = strides[d];
  }
}

// Where the kernel variant of an index type is kept (FusionExecutor::variants_).
int variantSlot(DataType index_type) {
  SMELT_INTERNAL_CHECK(index_type == DataType::Int || index_type == DataType::Int32,
                       "index type ", index_type);
  return index_type == DataType::Int32 ? 1 : 0;
}
DataType slotIndexType(int slot) { return slot == 1 ? DataType::Int32 : DataType::Int; }

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
  return strides;
}

void addScalarArgument(KernelArguments& args, const ScalarParam& param, const at::Tensor& value) {
  switch (param.dtype) {
    case DataType::Float: return args.addScalar(value.item<float>());
    case DataType::Double: return args.addScalar(value.item<double>());
    case DataType::Half: return args.addScalar(value.item<at::Half>().x);
    case DataType::BFloat16: return args.addScalar(value.item<at::BFloat16>().x);
    case DataType::Int: return args.addScalar(value.item<int64_t>());
    case DataType::Int32: return args.addScalar(value.item<int32_t>());
    case DataType::Bool: return args.addScalar(value.item<bool>());
    case DataType::Int16: return args.addScalar(value.item<int16_t>());
    case DataType::Int8: return args.addScalar(value.item<int8_t>());
    case DataType::UInt8: return args.addScalar(value.item<uint8_t>());
  }
  SMELT_INTERNAL_CHECK(false, "unknown scalar dtype");
}

}  // namespace

// Asking the driver only when it has a device: without one, compiling works
// (for sm_90) and "no CUDA device" waits for a launch.
int targetArch(const ExecutorOptions& options, c10::Device device) {
  if (options.arch > 0) return options.arch;
  if (!cuda::deviceAvailable()) return 90;
  return cuda::computeCapability(device.is_cuda() && device.has_index() ? device.index() : 0);
}

ExecutionTarget executionTarget(const ExecutorOptions& options, c10::Device device) {
  return ExecutionTarget(targetArch(options, device), device.is_cuda(), options.matmul);
}

std::string LaunchParams::toString() const {
  return errorMessage("grid(", grid[0], ", ", grid[1], ", ", grid[2], ") block(", block[0], ", ",
                      block[1], ", ", block[2], ") smem ", smem_bytes, " B (",
                      dynamic_smem_bytes == smem_bytes && smem_bytes > 0 ? "dynamic" : "static", ")");
}

FusionExecutor::FusionExecutor() = default;
FusionExecutor::~FusionExecutor() = default;

KernelCache& FusionExecutor::globalCache() {
  static KernelCache cache;
  return cache;
}

void FusionExecutor::compile(Fusion* fusion, const std::vector<at::Tensor>& example_inputs,
                             ExecutorOptions options) {
  compileLowered(fusion, nullptr, example_inputs, std::move(options));
}

void FusionExecutor::compileLowered(Fusion* fusion, std::unique_ptr<GpuLower> lowered,
                                    const std::vector<at::Tensor>& example_inputs,
                                    ExecutorOptions options) {
  beginCompile(fusion, std::move(lowered), example_inputs, std::move(options));
  finishCompile();
}

void FusionExecutor::beginCompile(Fusion* fusion, std::unique_ptr<GpuLower> lowered,
                                  const std::vector<at::Tensor>& example_inputs, ExecutorOptions options) {
  SMELT_CHECK(fusion != nullptr, "FusionExecutor::compile: fusion is null");
  SMELT_CHECK(!fusion->outputs().empty(), "FusionExecutor::compile: the fusion has no outputs");
  current_ = -1;
  for (auto& kernel : variants_) kernel.reset();
  lower_ = std::move(lowered);
  plan_.reset();
  plans_made_ = 0;
  lowering_ms_ = 0;
  sim_report_ = {};
  fusion_ = fusion;
  options_ = options;
  validator_ = InputValidator(*fusion);
  arch_ = targetArch(options_, validate(example_inputs));
  const std::string base_key = fusionCacheKey(*fusion) + optionsKey(options_, arch_);
  for (DataType index_type : {DataType::Int, DataType::Int32}) {
    keys_[variantSlot(index_type)] = base_key + " index=" + indexTypeName(index_type);
  }

  compile_bindings_ = bind(example_inputs);
  compile_index_type_ = chooseIndexTypeFor(example_inputs, compile_bindings_);
  compile_ahead_ = CompiledAhead();
}

std::optional<NvrtcRequest> FusionExecutor::nvrtcRequest() {
  const std::string& key = keys_[variantSlot(compile_index_type_)];
  const KernelCache& cache = options_.cache != nullptr ? *options_.cache : globalCache();
  if (cache.find(key) != nullptr) return std::nullopt;
  const std::string name = kernelNameFor(key);
  compile_ahead_.disk_read = true;
  compile_ahead_.stored = loadStoredKernel(key, name, arch_);
  if (compile_ahead_.stored) return std::nullopt;
  return firstNvrtcRequest(lowered(), name, arch_, compile_index_type_);
}

void FusionExecutor::finishCompile(const PrecompiledKernel* precompiled) {
  const DataType index_type = compile_index_type_;
  const std::map<std::string, int64_t> bindings = std::move(compile_bindings_);
  compile_bindings_.clear();
  CompiledAhead ahead = std::move(compile_ahead_);
  compile_ahead_ = CompiledAhead();
  ahead.precompiled = precompiled;
  bool compiled_here = false;
  const std::shared_ptr<CachedKernel> kernel = variant(index_type, &compiled_here, &ahead);
  from_cache_ = !compiled_here;
  const KernelLaunchInfo& info = kernel->launchInfo();
  std::vector<std::string> tensor_inputs;
  size_t scalar_inputs = 0;
  for (const InputSpec& spec : validator_.specs()) {
    if (spec.is_tensor) {
      tensor_inputs.push_back(spec.name);
    } else {
      ++scalar_inputs;
    }
  }
  std::vector<std::string> kernel_inputs;
  for (const TensorParam& param : info.inputs) kernel_inputs.push_back(param.name);
  SMELT_INTERNAL_CHECK(kernel_inputs == tensor_inputs && info.scalars.size() == scalar_inputs &&
                           info.outputs.size() == fusion_->outputs().size(),
                       "the cached kernel's parameters do not match the fusion's inputs and outputs");
  setCurrent(index_type);
  launch_params_ = evaluateLaunch(*kernel, bindings);
}

std::shared_ptr<CachedKernel> FusionExecutor::variant(DataType index_type, bool* compiled_here,
                                                      CompiledAhead* ahead) const {
  const int slot = variantSlot(index_type);
  std::lock_guard<std::mutex> lock(variants_mutex_);
  if (variants_[slot] == nullptr) {
    KernelCache& cache = options_.cache != nullptr ? *options_.cache : globalCache();
    variants_[slot] = cache.getOrCompile(keys_[slot], [&] {
      if (compiled_here != nullptr) *compiled_here = true;
      const std::string name = kernelNameFor(keys_[slot]);
      std::optional<KernelEntry> stored = ahead != nullptr && ahead->disk_read
                                              ? std::move(ahead->stored)
                                              : loadStoredKernel(keys_[slot], name, arch_);
      if (stored) return *std::move(stored);
      KernelEntry entry = compileKernel(lowered(), name, arch_, index_type,
                                        ahead != nullptr ? ahead->precompiled : nullptr);
      storeKernel(keys_[slot], entry);
      return entry;
    });
  }
  return variants_[slot];
}

void FusionExecutor::setCurrent(DataType index_type) const {
  current_.store(variantSlot(index_type), std::memory_order_release);
}

const CachedKernel& FusionExecutor::current() const {
  const int slot = current_.load(std::memory_order_acquire);
  SMELT_CHECK(slot >= 0, "FusionExecutor: call compile() first");
  return *variants_[slot];
}

DataType FusionExecutor::indexType() const {
  checkCompiled("indexType");
  return slotIndexType(current_.load(std::memory_order_acquire));
}

DataType FusionExecutor::indexTypeFor(const std::vector<at::Tensor>& inputs) const {
  checkCompiled("indexTypeFor");
  validate(inputs);
  return chooseIndexTypeFor(inputs, bind(inputs));
}

// Every tensor the launch touches: the inputs as passed, the outputs with the
// logical extents of the fusion's outputs (dense; an expanded output is
// smaller), and the integer scalars (extents may be built from them).
DataType FusionExecutor::chooseIndexTypeFor(const std::vector<at::Tensor>& inputs,
                                            const std::map<std::string, int64_t>& bindings) const {
  std::vector<TensorExtents> tensors;
  std::vector<int64_t> scalars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = validator_.specs()[i];
    if (spec.is_tensor) {
      tensors.push_back({inputs[i].sizes().vec(), kernelStrides(inputs[i])});
    } else if (isIntegralType(spec.dtype)) {
      scalars.push_back(bindings.at(spec.name));
    }
  }
  for (const Val* out : fusion_->outputs()) {
    const TensorView* tv = out->asTensor();
    SMELT_INTERNAL_CHECK(tv != nullptr, "a fusion output is not a tensor");
    std::vector<int64_t> sizes;
    for (const IterDomain* id : tv->logicalNoReductions()) sizes.push_back(id->loopExtent().evaluate(bindings));
    tensors.push_back({sizes, contiguousStrides(sizes)});
  }
  return chooseIndexType(tensors, scalars);
}

void FusionExecutor::checkCompiled(const char* what) const {
  SMELT_CHECK(isCompiled(), "FusionExecutor::", what, ": call compile() first");
}

const kir::Kernel& FusionExecutor::lowered() const {
  // Two runs after a cache hit must not both lower (one would free the
  // other's kernel IR); the kernel lives until the next compile().
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (lower_ == nullptr) {
    const auto start = std::chrono::steady_clock::now();
    auto lower = std::make_unique<GpuLower>(fusion_, options_.lower);
    lower->run();
    lower_ = std::move(lower);
    lowering_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return lower_->kernel();
}

namespace {

// Sizes and strides of the tensor inputs, and integer scalars, by symbol.
std::map<std::string, int64_t> bindInputs(const std::vector<InputSpec>& specs,
                                          const std::vector<at::Tensor>& inputs) {
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = specs[i];
    if (!spec.is_tensor) {
      // Integer scalars may appear in extents (e.g. a full() of symbolic shape).
      bindings[spec.name] = std::llround(inputs[i].item<double>());
      continue;
    }
    bindTensor(bindings, spec.name, inputs[i], kernelStrides(inputs[i]));
  }
  return bindings;
}

}  // namespace

std::map<std::string, int64_t> FusionExecutor::bind(const std::vector<at::Tensor>& inputs) const {
  return bindInputs(validator_.specs(), inputs);
}

namespace {

// The position among the fusion's inputs of the self of the scatter that
// computes output `o`, or -1.
int64_t initialInput(const Fusion& fusion, size_t o) {
  const auto* scatter = dynamic_cast<const ScatterOp*>(fusion.outputs().at(o)->definition());
  if (scatter == nullptr) return -1;
  const auto& ins = fusion.inputs();
  const auto it = std::find(ins.begin(), ins.end(), scatter->self());
  SMELT_INTERNAL_CHECK(it != ins.end(), "scatter self ", scatter->self()->name(), " is not a kernel input");
  return it - ins.begin();
}

// torch's rule, for extents only known now: the index is no larger than
// self outside the scatter's dimension.
void checkScatterExtents(const Fusion& fusion, const std::map<std::string, int64_t>& bindings) {
  for (const Expr* expr : fusion.exprs()) {
    const auto* scatter = dynamic_cast<const ScatterOp*>(expr);
    if (scatter == nullptr) continue;
    const TensorView* out = scatter->output();
    for (size_t d = 0; d < out->logicalDomain().size(); ++d) {
      const int64_t self = out->logicalDomain()[d]->extent().evaluate(bindings);
      const int64_t index = out->loopRoot()[d]->extent().evaluate(bindings);
      SMELT_CHECK(static_cast<int64_t>(d) == scatter->dim() || index <= self, scatter->opName(),
                  ": dimension ", d, " of index ", scatter->index()->name(), " has extent ", index,
                  " but dimension ", d, " of ", scatter->self()->name(), " has extent ", self,
                  "; the index may not be larger outside dimension ", scatter->dim());
    }
  }
}

}  // namespace

std::vector<at::Tensor> metaOutputsOf(const Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  const InputValidator validator(fusion);
  validator.validate(inputs);
  const std::map<std::string, int64_t> bindings = bindInputs(validator.specs(), inputs);
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion.outputs()) {
    const TensorView* tv = out->asTensor();
    SMELT_INTERNAL_CHECK(tv != nullptr, "a fusion output is not a tensor");
    std::vector<int64_t> shape;
    std::vector<bool> expanded;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      shape.push_back(id->loopExtent().evaluate(bindings));
      expanded.push_back(id->hasExpandedExtent());
    }
    // As allocateOutputs makes them (LaunchPlan::Output).
    const at::Tensor dense = at::empty(allocatedExtents(shape, expanded),
                                       at::TensorOptions().dtype(toAtenType(tv->dtype())).device(c10::kMeta));
    outputs.push_back(dense.sizes().vec() == shape ? dense : dense.expand(shape));
  }
  return outputs;
}

LaunchParams FusionExecutor::evaluateLaunch(const CachedKernel& kernel,
                                            const std::map<std::string, int64_t>& bindings) const {
  const KernelLaunchInfo& info = kernel.launchInfo();
  LaunchParams params;
  for (int i = 0; i < 3; ++i) {
    params.grid[i] = info.grid[i].evaluate(bindings);
    params.block[i] = info.block[i].evaluate(bindings);
  }
  params.smem_bytes = info.shared_memory_bytes.evaluate(bindings);
  params.dynamic_smem_bytes = info.static_shared_memory ? 0 : params.smem_bytes;
  // Simulated runs too: a kernel must be launchable to be correct.
  LaunchResources resources;
  for (int i = 0; i < 3; ++i) {
    resources.grid[i] = params.grid[i];
    resources.block[i] = params.block[i];
  }
  resources.shared_memory_bytes = params.smem_bytes;
  resources.registers_per_thread = kernel.compiled().ptxas.registers;
  DeviceLimits limits = DeviceLimits::forArch(kernel.compiled().arch);
  limits.max_shared_memory_per_block =
      std::min(limits.max_shared_memory_per_block, options_.lower.max_shared_memory_bytes);
  checkLaunchLimits(kernel.compiled().kernel_name, resources, limits);
  return params;
}

std::vector<at::Tensor> FusionExecutor::run(const std::vector<at::Tensor>& inputs,
                                            std::optional<c10::Device> without_tensor_inputs) {
  checkCompiled("run");
  const c10::Device device = validate(inputs, without_tensor_inputs);
  // An input with an empty dimension: no kernel runs (a grid of no blocks,
  // loops of no trips); the outputs (empty, or a reduction's identity) come
  // from ATen on the inputs' device.
  if (hasEmptyInput(*fusion_, inputs)) return evaluateWithATen(*fusion_, inputs);
  if (device.is_cuda()) return launch(prepare(inputs, device, /*load_module=*/true));
  if (device.is_meta()) return runOnMeta(inputs);
  SMELT_CHECK(device.is_cpu(), "FusionExecutor::run: inputs on ", device.str(),
              " are not supported (CUDA tensors run on the GPU, CPU tensors in the simulator, "
              "meta tensors compile only)");
  return simulate(inputs);
}

std::vector<at::Tensor> FusionExecutor::runOnMeta(const std::vector<at::Tensor>& inputs) {
  // The launch limits are checked (the plan evaluates the launch).
  const std::shared_ptr<const LaunchPlan> plan = planFor(inputs);
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    launch_params_ = plan->params;
    setCurrent(plan->index_type);
  }
  return allocateOutputs(*plan, c10::Device(c10::kMeta));
}

std::vector<at::Tensor> FusionExecutor::allocateOutputs(const LaunchPlan& plan, c10::Device device,
                                                        const std::vector<at::Tensor>* inputs) {
  std::vector<at::Tensor> outputs;
  outputs.reserve(plan.outputs.size());
  for (const LaunchPlan::Output& out : plan.outputs) {
    at::Tensor dense = at::empty(out.allocated, at::TensorOptions().dtype(out.dtype).device(device));
    if (inputs != nullptr && out.initial_input >= 0) dense.copy_(inputs->at(out.initial_input));
    outputs.push_back(out.allocated == out.shape ? std::move(dense) : dense.expand(out.shape));
  }
  return outputs;
}

namespace {

// Everything a launch plan depends on (appendShapeKey per input).
std::vector<int64_t> launchPlanKey(const std::vector<at::Tensor>& inputs,
                                   const std::vector<InputSpec>& specs) {
  std::vector<int64_t> key;
  for (size_t i = 0; i < inputs.size(); ++i) appendShapeKey(key, inputs[i], !specs[i].is_tensor);
  return key;
}

}  // namespace

std::shared_ptr<const LaunchPlan> FusionExecutor::planFor(const std::vector<at::Tensor>& inputs) const {
  std::vector<int64_t> key = launchPlanKey(inputs, validator_.specs());
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (plan_ != nullptr && plan_->key == key) return plan_;
  }
  std::shared_ptr<const LaunchPlan> plan = makePlan(inputs, std::move(key));
  std::lock_guard<std::mutex> lock(state_mutex_);
  plan_ = plan;
  return plan;
}

std::shared_ptr<const LaunchPlan> FusionExecutor::makePlan(const std::vector<at::Tensor>& inputs,
                                                           std::vector<int64_t> key) const {
  ++plans_made_;
  auto plan = std::make_shared<LaunchPlan>();
  plan->key = std::move(key);
  std::map<std::string, int64_t> bindings = bind(inputs);
  plan->index_type = chooseIndexTypeFor(inputs, bindings);
  plan->kernel = variant(plan->index_type);
  plan->params = evaluateLaunch(*plan->kernel, bindings);
  const KernelLaunchInfo& info = plan->kernel->launchInfo();
  checkScatterExtents(*fusion_, bindings);
  for (const TensorParam& param : info.outputs) {
    LaunchPlan::Output out;
    out.initial_input = initialInput(*fusion_, plan->outputs.size());
    for (const IntExpr& extent : param.shape) out.shape.push_back(extent.evaluate(bindings));
    out.allocated = allocatedExtents(out.shape, param.expanded);
    out.dtype = toAtenType(param.dtype);
    // The strides of the tensor allocateOutputs makes, from a meta stand-in.
    const at::Tensor stand_in =
        at::empty(out.allocated, at::TensorOptions().dtype(out.dtype).device(c10::kMeta)).expand(out.shape);
    out.kernel_strides = kernelStrides(stand_in);
    bindTensor(bindings, param.name, stand_in, out.kernel_strides);
    plan->outputs.push_back(std::move(out));
  }
  for (const VectorCondition& condition : info.vector_conditions) {
    if (auto why = condition.violation(bindings)) {
      plan->vector_violation =
          errorMessage(describeParam(condition.tensor), " breaks what the kernel's vectorized (or cp.async) "
                       "accesses assume: ", condition.toString(), " (", *why, "); pass a contiguous copy "
                       "(.contiguous()) or reschedule");
      break;
    }
  }
  return plan;
}

PreparedLaunch FusionExecutor::prepareLaunch(const std::vector<at::Tensor>& inputs) const {
  checkCompiled("prepareLaunch");
  return prepare(inputs, validate(inputs), /*load_module=*/false);
}

c10::Device FusionExecutor::validate(const std::vector<at::Tensor>& inputs,
                                     std::optional<c10::Device> without_tensor_inputs) const {
  const c10::Device device =
      validator_.validate(inputs).value_or(without_tensor_inputs.value_or(options_.device));
  // "cuda" without an index means device 0.
  return device.is_cuda() && !device.has_index() ? c10::Device(c10::kCUDA, 0) : device;
}

PreparedLaunch FusionExecutor::prepare(const std::vector<at::Tensor>& inputs, c10::Device device,
                                       bool load_module) const {
  RECORD_FUNCTION("smelt::prepare", std::vector<c10::IValue>());
  const std::shared_ptr<const LaunchPlan> plan = planFor(inputs);
  PreparedLaunch prepared;
  prepared.index_type = plan->index_type;
  prepared.kernel = plan->kernel;
  // "no CUDA device" before any CUDA allocation.
  if (load_module) prepared.kernel->function(device.index());
  if (!plan->vector_violation.empty()) throw Error(plan->vector_violation);
  const KernelLaunchInfo& info = prepared.kernel->launchInfo();
  prepared.device = device;
  prepared.params = plan->params;
  prepared.outputs = allocateOutputs(*plan, device, &inputs);
  std::vector<const at::Tensor*> scalars;
  std::vector<const at::Tensor*> tensor_args;  // inputs, then outputs: what tensor maps read
  size_t tensor = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    if (!validator_.specs()[i].is_tensor) {
      scalars.push_back(&t);
      continue;
    }
    tensor_args.push_back(&t);
    validator_.checkVectorAlignment(i, t, info.inputs[tensor++].vector_bytes);
    prepared.arguments.addTensor(t.data_ptr(), t.sizes().vec(), kernelStrides(t), prepared.index_type);
  }
  for (size_t o = 0; o < prepared.outputs.size(); ++o) {
    const at::Tensor& t = prepared.outputs[o];
    // Fresh allocations are aligned far beyond any vector.
    const int64_t alignment = std::max<int64_t>(info.outputs[o].vector_bytes, 1);
    SMELT_INTERNAL_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % alignment == 0, "output ", o,
                         " is not aligned for its vector stores");
    prepared.arguments.addTensor(t.data_ptr(), t.sizes().vec(), plan->outputs[o].kernel_strides,
                                 prepared.index_type);
    tensor_args.push_back(&t);
  }
  for (size_t s = 0; s < scalars.size(); ++s) addScalarArgument(prepared.arguments, info.scalars[s], *scalars[s]);
  if (!info.tensor_maps.empty()) {
    for (const TensorMapParam& m : info.tensor_maps) {
      const at::Tensor& t = *tensor_args.at(static_cast<size_t>(m.tensor));
      const TensorParam& param = m.tensor < static_cast<int64_t>(info.inputs.size())
                                     ? info.inputs[m.tensor]
                                     : info.outputs[m.tensor - info.inputs.size()];
      prepared.arguments.addScalar(cuda::encodeTensorMap(cuda::tiledTensorMap(
          param.name, t.data_ptr(), param.dtype, t.sizes().vec(), t.strides().vec(), m.box_rows,
          m.box_cols, m.swizzle128)));
    }
  }
  return prepared;
}

std::string FusionExecutor::describeParam(const std::string& name) const {
  const KernelLaunchInfo& info = launchInfo();
  size_t tensor = 0;
  for (size_t i = 0; i < validator_.specs().size(); ++i) {
    if (!validator_.specs()[i].is_tensor) continue;
    if (info.inputs[tensor++].name == name) return validator_.describe(i);
  }
  return "output " + name;
}

std::vector<at::Tensor> FusionExecutor::launch(const PreparedLaunch& prepared) {
  checkCompiled("launch");
  const int device = prepared.device.is_cuda() ? prepared.device.index() : 0;
  SMELT_CHECK(prepared.kernel != nullptr, "FusionExecutor::launch: the launch was not prepared");
  // Loading the module is the first step that needs a driver and a GPU.
  prepared.kernel->function(device);
  SMELT_CHECK(prepared.device.is_cuda(), "FusionExecutor::launch: the launch was prepared from ",
              prepared.device.str(), " tensors; a CUDA launch needs CUDA tensors (run() sends CPU "
              "tensors to the simulator)");
  RECORD_FUNCTION("smelt::launch", std::vector<c10::IValue>());
  c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
  cuda::LaunchConfig config;
  for (int i = 0; i < 3; ++i) {
    config.grid[i] = prepared.params.grid[i];
    config.block[i] = prepared.params.block[i];
  }
  config.dynamic_smem_bytes = prepared.params.dynamic_smem_bytes;
  config.stream = at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  prepared.kernel->launch(config, prepared.arguments.pointers(), device);
  std::lock_guard<std::mutex> lock(state_mutex_);
  launch_params_ = prepared.params;
  setCurrent(prepared.index_type);
  return prepared.outputs;
}

std::vector<at::Tensor> FusionExecutor::simulate(const std::vector<at::Tensor>& inputs) {
  // A scatter's output starts as its self: the simulator writes into it.
  std::vector<at::Tensor> outputs;
  const std::shared_ptr<const LaunchPlan> plan = planFor(inputs);
  for (const LaunchPlan::Output& out : plan->outputs) {
    if (out.initial_input >= 0) outputs = allocateOutputs(*plan, c10::Device(c10::kCPU), &inputs);
  }
  const KernelLaunchInfo& info = launchInfo();
  std::vector<at::Tensor> tensors;
  std::map<std::string, double> scalars;
  size_t scalar = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (validator_.specs()[i].is_tensor) {
      tensors.push_back(inputs[i]);
    } else {
      scalars[info.scalars[scalar++].symbol] = inputs[i].item<double>();
    }
  }
  const std::map<std::string, int64_t> bindings = bind(inputs);
  sim::SimOptions sim_options = options_.simulator;
  sim_options.index_type = chooseIndexTypeFor(inputs, bindings);
  const LaunchParams params = evaluateLaunch(*variant(sim_options.index_type), bindings);
  sim::SimResult result = sim::simulate(lowered(), tensors, outputs, scalars, sim_options);
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    sim_report_ = result.report;
    launch_params_ = params;
    setCurrent(sim_options.index_type);
  }
  SMELT_CHECK(result.report.clean(), "the CPU simulator found errors in kernel ", kernelName(),
              ":\n", result.report.toString());
  return std::move(result.outputs);
}

const LaunchParams& FusionExecutor::launchParams() const {
  checkCompiled("launchParams");
  return launch_params_;
}

const KernelLaunchInfo& FusionExecutor::launchInfo() const {
  checkCompiled("launchInfo");
  return current().launchInfo();
}

const std::string& FusionExecutor::kernelName() const { return compiledKernel().kernel_name; }

const std::string& FusionExecutor::cudaSource() const { return launchInfo().cuda_source; }

const CompiledKernel& FusionExecutor::compiledKernel() const {
  checkCompiled("compiledKernel");
  return current().compiled();
}

const kir::Kernel& FusionExecutor::kernel() const {
  checkCompiled("kernel");
  return lowered();
}

const alloc_reuse::SharedMemoryPlan& FusionExecutor::sharedMemoryPlan() const {
  const kir::Kernel& k = kernel();
  SMELT_INTERNAL_CHECK(k.smem_plan != nullptr, "the lowered kernel has no shared-memory plan");
  return *k.smem_plan;
}

const std::string& FusionExecutor::cacheKey() const {
  checkCompiled("cacheKey");
  return keys_[current_.load(std::memory_order_acquire)];
}

}  // namespace smelt
