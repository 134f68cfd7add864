#include "runtime/simulator/launch_binding.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "fusion/error.h"
#include "fusion/symbols.h"

namespace smelt::sim {

namespace {

constexpr int64_t kMaxThreadsPerBlock = 1024;  // CUDA's limit; larger launches fail there too

int64_t spanOf(const TensorArg& t) {
  int64_t span = 1;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] == 0) return 0;
    span += (t.sizes[d] - 1) * t.strides[d];
  }
  return span;
}

int64_t evaluateOrThrow(const IntExpr& e, const std::map<std::string, int64_t>& values,
                        const std::string& what) {
  try {
    return e.evaluate(values);
  } catch (const Error& err) {
    throw Error(errorMessage("simulator: cannot evaluate ", what, " = ", e, ": ", err.what()));
  }
}

}  // namespace

Launch bindLaunch(const Program& p, const kir::Kernel& kernel,
                  const std::vector<TensorArg>& inputs, const std::vector<TensorArg>& outputs,
                  const std::map<std::string, double>& scalars) {
  SMELT_CHECK(inputs.size() == kernel.inputs.size(), "simulator: the kernel has ",
              kernel.inputs.size(), " inputs, got ", inputs.size());
  SMELT_CHECK(outputs.size() == kernel.outputs.size(), "simulator: the kernel has ",
              kernel.outputs.size(), " outputs, got ", outputs.size());
  Launch L;
  L.memory.resize(p.buffers.size());
  L.shared_address.assign(p.buffers.size(), 0);

  std::map<std::string, int64_t> values;
  for (const auto& [name, v] : scalars) values[name] = std::llround(v);
  auto bindTensor = [&](const kir::Buffer* b, const TensorArg& t) {
    SMELT_CHECK(b->dtype == t.dtype, "simulator: ", b->name, " is ", b->dtype, ", got a ",
                t.dtype, " tensor");
    SMELT_CHECK(t.sizes.size() == t.strides.size(), "simulator: ", b->name,
                " has sizes and strides of different ranks");
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      values[sizeSymbol(b->name, static_cast<int64_t>(d))] = t.sizes[d];
      values[strideSymbol(b->name, static_cast<int64_t>(d))] = t.strides[d];
    }
    Memory& m = L.memory[p.buffer_ids.at(b)];
    m.data = static_cast<uint8_t*>(t.data);
    m.elements = spanOf(t);
    m.sizes = t.sizes;
    m.strides = t.strides;
  };
  for (size_t i = 0; i < inputs.size(); ++i) bindTensor(kernel.inputs[i], inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) bindTensor(kernel.outputs[i], outputs[i]);

  for (int d = 0; d < 3; ++d) {
    L.grid[d] = evaluateOrThrow(kernel.launch.grid[d], values, gridDimSymbol(d));
    L.block[d] = evaluateOrThrow(kernel.launch.block[d], values, blockDimSymbol(d));
    SMELT_CHECK(L.grid[d] >= 0 && L.block[d] >= 1, "simulator: bad launch dims: grid ",
                L.grid[d], ", block ", L.block[d], " on ", "xyz"[d]);
    values[gridDimSymbol(d)] = L.grid[d];
    values[blockDimSymbol(d)] = L.block[d];
  }
  L.threads = L.block[0] * L.block[1] * L.block[2];
  SMELT_CHECK(L.threads <= kMaxThreadsPerBlock, "simulator: ", L.threads,
              " threads per block exceed CUDA's limit of ", kMaxThreadsPerBlock);

  L.base_slots.assign(p.symbols.size(), 0);
  for (int s = 0; s < p.symbols.size(); ++s) {
    if (p.runtime_slot[s]) continue;
    auto it = values.find(p.symbols.name(s));
    SMELT_CHECK(it != values.end(), "simulator: index symbol '", p.symbols.name(s),
                "' has no value: not a loop index, thread/block index, argument size/stride "
                "or scalar");
    L.base_slots[s] = it->second;
  }
  for (int d = 0; d < 3; ++d) {
    L.base_slots[kBlockDim + d] = L.block[d];
    L.base_slots[kGridDim + d] = L.grid[d];
  }

  // Buffer ids put an alias after its base, so bases are laid out first.
  for (size_t id = 0; id < p.buffers.size(); ++id) {
    const RtBuffer& rb = p.buffers[id];
    Memory& m = L.memory[id];
    m.memory = rb.memory;
    m.dtype = rb.dtype;
    m.elem_size = rb.elem_size;
    if (rb.memory == MemoryType::Global && m.data != nullptr) continue;
    m.elements = evaluateOrThrow(rb.kir->elements, values, rb.name + " elements");
    const int64_t bytes = m.elements * m.elem_size;
    const int32_t base = rb.kir->alias_of ? p.buffer_ids.at(rb.kir->alias_of) : -1;
    switch (rb.memory) {
      case MemoryType::Global:
        L.scratch.emplace_back(static_cast<size_t>(bytes), 0);
        m.data = L.scratch.back().data();
        break;
      case MemoryType::Shared:
        if (rb.kir->address) {
          m.offset = evaluateOrThrow(*rb.kir->address, values, rb.name + " address");
        } else {
          SMELT_CHECK(base >= 0, "simulator: shared buffer ", rb.name,
                      " has no planned address; run the shared-memory planner first");
          m.offset = L.memory[base].offset;
        }
        SMELT_CHECK(m.offset >= 0, "simulator: shared buffer ", rb.name, " has address ",
                    m.offset);
        L.shared_address[id] = m.offset;
        L.shared_bytes = std::max(L.shared_bytes, m.offset + bytes);
        break;
      case MemoryType::Local:
        m.offset = base >= 0 ? L.memory[base].offset : (L.local_bytes + 7) / 8 * 8;
        L.local_bytes = std::max(L.local_bytes, m.offset + bytes);
        break;
    }
  }
  return L;
}

std::vector<int64_t> chooseBlocks(int64_t total, const SimOptions& options) {
  std::vector<int64_t> blocks;
  if (options.sampling == BlockSampling::All || total <= 2 + options.random_blocks) {
    for (int64_t b = 0; b < total; ++b) blocks.push_back(b);
    return blocks;
  }
  std::set<int64_t> chosen = {0, total - 1};
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int64_t> pick(1, total - 2);
  while (static_cast<int64_t>(chosen.size()) < 2 + options.random_blocks) chosen.insert(pick(rng));
  return {chosen.begin(), chosen.end()};
}

}  // namespace smelt::sim
