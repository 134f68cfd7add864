#include "runtime/simulator/interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "fusion/error.h"
#include "runtime/simulator/findings.h"
#include "runtime/simulator/program.h"
#include "runtime/simulator/shadow.h"
#include "runtime/simulator/value_convert.h"

namespace smelt::sim {
namespace {

constexpr int32_t kExited = -1;
constexpr int64_t kMaxThreadsPerBlock = 1024;  // CUDA's limit; larger launches fail there too
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Where one buffer's elements live for this launch.
struct Memory {
  MemoryType memory = MemoryType::Local;
  DataType dtype = DataType::Float;
  int64_t elem_size = 4;
  int64_t elements = 0;  // valid indices: [0, elements)
  int64_t offset = 0;    // Shared: byte address; Local: byte offset in a thread's arena
  uint8_t* data = nullptr;  // Global
};

// The kernel bound to its arguments: launch dims, symbol values, buffer layout.
struct Launch {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t threads = 1;
  std::vector<int64_t> base_slots;  // every non-runtime symbol's value
  std::vector<Memory> memory;       // per buffer id
  std::vector<int64_t> shared_address;  // per buffer id (0 unless Shared)
  int64_t shared_bytes = 0;
  int64_t local_bytes = 0;
  std::vector<std::vector<uint8_t>> scratch;  // Global buffers that are not arguments
};

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
      values[b->name + ".size[" + std::to_string(d) + "]"] = t.sizes[d];
      values[b->name + ".stride[" + std::to_string(d) + "]"] = t.strides[d];
    }
    Memory& m = L.memory[p.buffer_ids.at(b)];
    m.data = static_cast<uint8_t*>(t.data);
    m.elements = spanOf(t);
  };
  for (size_t i = 0; i < inputs.size(); ++i) bindTensor(kernel.inputs[i], inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) bindTensor(kernel.outputs[i], outputs[i]);

  const char* axis[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    L.grid[d] = evaluateOrThrow(kernel.launch.grid[d], values, std::string("gridDim.") + axis[d]);
    L.block[d] =
        evaluateOrThrow(kernel.launch.block[d], values, std::string("blockDim.") + axis[d]);
    SMELT_CHECK(L.grid[d] >= 0 && L.block[d] >= 1, "simulator: bad launch dims: grid ",
                L.grid[d], ", block ", L.block[d], " on ", axis[d]);
    values[std::string("gridDim.") + axis[d]] = L.grid[d];
    values[std::string("blockDim.") + axis[d]] = L.block[d];
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

// torch.remainder: the result takes the divisor's sign.
double remainder(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// torch's integer pow (negative exponents give 0 unless the base is 1 or -1),
// squaring in unsigned 64-bit arithmetic so overflow wraps as on the GPU.
double integerPow(double base_value, double exp_value) {
  const int64_t base = saturatingCast<int64_t>(base_value);
  int64_t exp = saturatingCast<int64_t>(exp_value);
  if (exp < 0) return base == 1 ? 1.0 : base == -1 ? ((exp & 1) ? -1.0 : 1.0) : 0.0;
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(base);
  for (; exp != 0; exp >>= 1, b *= b) {
    if (exp & 1) result *= b;
  }
  return static_cast<double>(static_cast<int64_t>(result));
}

double combine(Fn fn, double a, double b) {
  if (fn == Fn::Sum) return a + b;
  // max propagates NaN, as torch.max and the CUDA reduction do.
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return a > b ? a : b;
}

class BlockRunner {
 public:
  BlockRunner(const Program& p, const Launch& L, const SimOptions& options, Findings& findings)
      : p_(p),
        L_(L),
        options_(options),
        findings_(findings),
        shadow_(findings),
        nslots_(p.symbols.size()),
        nthreads_(static_cast<int32_t>(L.threads)) {
    slots_.resize(static_cast<size_t>(nthreads_) * nslots_);
    locals_.resize(static_cast<size_t>(nthreads_ * L.local_bytes));
    smem_.resize(static_cast<size_t>(L.shared_bytes));
    pc_.resize(nthreads_);
    steps_.resize(nthreads_);
    arrived_.resize(nthreads_);
    contrib_.resize(nthreads_);
    order_.resize(nthreads_);
  }

  void run(int64_t block_linear) {
    const int64_t bx = block_linear % L_.grid[0];
    const int64_t by = (block_linear / L_.grid[0]) % L_.grid[1];
    const int64_t bz = block_linear / (L_.grid[0] * L_.grid[1]);
    block_linear_ = block_linear;
    findings_.setBlock({bx, by, bz}, L_.block[0], L_.block[1]);
    rng_.seed(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(block_linear));
    // Uninitialized memory reads as NaN (0xff bytes), so a missing write shows.
    std::fill(smem_.begin(), smem_.end(), 0xff);
    std::fill(locals_.begin(), locals_.end(), 0xff);
    if (options_.detect_races) shadow_.reset(L_.shared_bytes);
    for (int32_t t = 0; t < nthreads_; ++t) {
      int64_t* s = &slots_[static_cast<size_t>(t) * nslots_];
      std::copy(L_.base_slots.begin(), L_.base_slots.end(), s);
      s[kThreadIdx + 0] = t % L_.block[0];
      s[kThreadIdx + 1] = (t / L_.block[0]) % L_.block[1];
      s[kThreadIdx + 2] = t / (L_.block[0] * L_.block[1]);
      s[kBlockIdx + 0] = bx;
      s[kBlockIdx + 1] = by;
      s[kBlockIdx + 2] = bz;
      pc_[t] = 0;
      steps_[t] = 0;
      arrived_[t] = 0;
    }
    for (;;) {
      makeOrder();
      for (int32_t t : order_) {
        if (arrived_[t] != kExited) arrived_[t] = runThread(t);
      }
      const int32_t barrier = arrived_[0];
      auto other = std::find_if(arrived_.begin(), arrived_.end(),
                                [&](int32_t a) { return a != barrier; });
      if (other != arrived_.end()) {
        // Report a waiting thread first: "waits here, but that one exited".
        int32_t a = barrier == kExited ? static_cast<int32_t>(other - arrived_.begin()) : 0;
        int32_t b = barrier == kExited ? 0 : static_cast<int32_t>(other - arrived_.begin());
        findings_.divergentBarrier(a, arrived_[a], b, arrived_[b]);
        break;
      }
      if (barrier == kExited) break;
      nextEpoch();
      const Instr& in = p_.instrs[barrier];
      if (in.op == Op::BlockReduce || in.op == Op::BlockBroadcast) {
        for (int32_t t : order_) finishBlockOp(in, barrier, t);
        nextEpoch();
      }
    }
    if (options_.detect_races) shadow_.closeEpoch();
  }

 private:
  void makeOrder() {
    for (int32_t t = 0; t < nthreads_; ++t) order_[t] = t;
    if (options_.order == ThreadOrder::Reverse) {
      std::reverse(order_.begin(), order_.end());
    } else if (options_.order == ThreadOrder::Random) {
      std::shuffle(order_.begin(), order_.end(), rng_);
    }
  }

  void nextEpoch() {
    if (options_.detect_races) shadow_.closeEpoch();
    std::fill(steps_.begin(), steps_.end(), 0u);
  }

  int64_t* slotsOf(int32_t t) { return &slots_[static_cast<size_t>(t) * nslots_]; }
  uint8_t* localsOf(int32_t t) { return &locals_[static_cast<size_t>(t * L_.local_bytes)]; }

  bool holds(const RtPredicate& pred, const int64_t* s) const {
    for (uint32_t i = pred.begin; i < pred.end; ++i) {
      const RtTerm& term = p_.terms[i];
      int64_t a = p_.code.eval(term.lhs, s);
      int64_t b = p_.code.eval(term.rhs, s);
      switch (term.kind) {
        case kir::Predicate::Term::Kind::LessThan: if (!(a < b)) return false; break;
        case kir::Predicate::Term::Kind::Equal: if (a != b) return false; break;
        case kir::Predicate::Term::Kind::GreaterEqual: if (!(a >= b)) return false; break;
      }
    }
    return true;
  }

  // The element's bytes, or nullptr (reported) when the index is out of bounds.
  uint8_t* element(int32_t buffer, int64_t index, int32_t t, int32_t pc, bool is_write) {
    const Memory& m = L_.memory[buffer];
    if (index < 0 || index >= m.elements) {
      findings_.outOfBounds({t, pc, buffer, steps_[t]}, is_write, index, m.elements);
      return nullptr;
    }
    switch (m.memory) {
      case MemoryType::Global:
        if (is_write && options_.detect_races) checkSingleWriter(buffer, index, t, pc);
        return m.data + index * m.elem_size;
      case MemoryType::Local: return localsOf(t) + m.offset + index * m.elem_size;
      case MemoryType::Shared: {
        const int64_t byte = m.offset + index * m.elem_size;
        if (options_.detect_races) {
          AccessEvent ev{t, pc, buffer, steps_[t]};
          if (is_write) {
            shadow_.write(byte, m.elem_size, ev);
          } else {
            shadow_.read(byte, m.elem_size, ev);
          }
        }
        return smem_.data() + byte;
      }
    }
    return nullptr;
  }

  // One writer per Global element and launch: the first (block, thread) to
  // store it owns it; the same thread may store it again (a serial loop).
  // A block all-reduce is the exception by design: every thread of the group
  // holds the result and stores the same value.
  void checkSingleWriter(int32_t buffer, int64_t index, int32_t t, int32_t pc) {
    if (p_.instrs[pc].op == Op::BlockReduce) return;
    std::vector<int64_t>& owners = global_writers_[buffer];
    if (owners.empty()) owners.assign(static_cast<size_t>(L_.memory[buffer].elements), -1);
    const int64_t me = block_linear_ * nthreads_ + t;
    int64_t& owner = owners[static_cast<size_t>(index)];
    if (owner >= 0 && owner != me) {
      const int64_t block = owner / nthreads_;
      const ThreadIndex first_block{block % L_.grid[0], (block / L_.grid[0]) % L_.grid[1],
                                    block / (L_.grid[0] * L_.grid[1])};
      findings_.duplicateGlobalWrite({t, pc, buffer, steps_[t]}, index, first_block,
                                     static_cast<int32_t>(owner % nthreads_));
    }
    owner = me;
  }

  double load(int32_t buffer, int64_t index, int32_t t, int32_t pc) {
    const uint8_t* e = element(buffer, index, t, pc, false);
    return e ? loadValue(L_.memory[buffer].dtype, e) : kNaN;
  }

  void store(int32_t buffer, int64_t index, int32_t t, int32_t pc, double v) {
    if (uint8_t* e = element(buffer, index, t, pc, true)) storeValue(L_.memory[buffer].dtype, e, v);
  }

  double load(const RtAccess& a, int32_t t, int32_t pc) {
    return load(a.buffer, p_.code.eval(a.index, slotsOf(t)), t, pc);
  }

  void store(const RtAccess& a, int32_t t, int32_t pc, double v) {
    store(a.buffer, p_.code.eval(a.index, slotsOf(t)), t, pc, v);
  }

  double operand(const RtOperand& op, int32_t t, int32_t pc) {
    if (!holds(op.in_bounds, slotsOf(t))) return op.out_of_bounds_value;
    if (op.access.buffer < 0) return op.constant;
    return load(op.access, t, pc);
  }

  void compute(const Instr& in, int32_t t, int32_t pc) {
    double a[3] = {0, 0, 0};
    for (uint32_t i = in.operand_begin; i < in.operand_end; ++i) {
      a[i - in.operand_begin] = operand(p_.operands[i], t, pc);
    }
    double r = 0;
    switch (in.fn) {
      case Fn::Copy: r = a[0]; break;
      case Fn::Neg: r = -a[0]; break;
      case Fn::Exp: r = std::exp(a[0]); break;
      case Fn::Tanh: r = std::tanh(a[0]); break;
      case Fn::Abs: r = std::fabs(a[0]); break;
      case Fn::Relu: r = a[0] < 0 ? 0.0 : a[0]; break;  // keeps NaN, as torch.relu
      case Fn::Sqrt: r = std::sqrt(a[0]); break;
      case Fn::Rsqrt: r = 1.0 / std::sqrt(a[0]); break;
      case Fn::Log: r = std::log(a[0]); break;
      case Fn::Log2: r = std::log2(a[0]); break;
      case Fn::Log1p: r = std::log1p(a[0]); break;
      case Fn::Exp2: r = std::exp2(a[0]); break;
      case Fn::Expm1: r = std::expm1(a[0]); break;
      case Fn::Sigmoid: r = 1.0 / (1.0 + std::exp(-a[0])); break;
      case Fn::Erf: r = std::erf(a[0]); break;
      case Fn::Reciprocal: r = 1.0 / a[0]; break;
      case Fn::Sin: r = std::sin(a[0]); break;
      case Fn::Cos: r = std::cos(a[0]); break;
      case Fn::Floor: r = std::floor(a[0]); break;
      case Fn::Ceil: r = std::ceil(a[0]); break;
      case Fn::Round: r = std::nearbyint(a[0]); break;  // half to even
      case Fn::Trunc: r = std::trunc(a[0]); break;
      case Fn::LogicalNot: r = a[0] == 0 ? 1.0 : 0.0; break;
      case Fn::Add: r = a[0] + a[1]; break;
      case Fn::Sub: r = a[0] - a[1]; break;
      case Fn::Mul: r = a[0] * a[1]; break;
      case Fn::Div: r = a[0] / a[1]; break;
      case Fn::Maximum:
        r = std::isnan(a[0]) || std::isnan(a[1]) ? kNaN : std::max(a[0], a[1]);
        break;
      case Fn::Minimum:
        r = std::isnan(a[0]) || std::isnan(a[1]) ? kNaN : std::min(a[0], a[1]);
        break;
      case Fn::Pow: r = std::pow(a[0], a[1]); break;
      case Fn::IntPow: r = integerPow(a[0], a[1]); break;
      case Fn::Remainder: r = remainder(a[0], a[1]); break;
      case Fn::Fmod: r = std::fmod(a[0], a[1]); break;
      case Fn::Eq: r = a[0] == a[1]; break;
      case Fn::Ne: r = a[0] != a[1]; break;
      case Fn::Lt: r = a[0] < a[1]; break;
      case Fn::Le: r = a[0] <= a[1]; break;
      case Fn::Gt: r = a[0] > a[1]; break;
      case Fn::Ge: r = a[0] >= a[1]; break;
      case Fn::LogicalAnd: r = a[0] != 0 && a[1] != 0; break;
      case Fn::LogicalOr: r = a[0] != 0 || a[1] != 0; break;
      case Fn::Where: r = a[0] != 0 ? a[1] : a[2]; break;
      case Fn::Sum:
      case Fn::Max: SMELT_INTERNAL_CHECK(false, "reduction fn in a Compute"); break;
    }
    store(in.out, t, pc, r);
  }

  // Runs thread t from its program counter to the next barrier; returns that
  // barrier's instruction, or kExited.
  int32_t runThread(int32_t t) {
    int64_t* s = slotsOf(t);
    int32_t pc = pc_[t];
    for (;;) {
      const Instr& in = p_.instrs[pc];
      ++steps_[t];
      switch (in.op) {
        case Op::LoopBegin: {
          const int64_t extent = p_.code.eval(in.extent, s);
          s[in.extent_slot] = extent;
          s[in.slot] = 0;
          pc = extent > 0 ? pc + 1 : in.target;
          break;
        }
        case Op::LoopEnd: pc = ++s[in.slot] < s[in.extent_slot] ? in.target : pc + 1; break;
        case Op::Bind:
          s[in.slot] = s[in.extent_slot];
          ++pc;
          break;
        case Op::If: pc = holds(in.pred, s) ? pc + 1 : in.target; break;
        case Op::Jump: pc = in.target; break;
        case Op::Compute:
          if (holds(in.pred, s)) compute(in, t, pc);
          ++pc;
          break;
        case Op::ReduceInit:
          if (holds(in.pred, s)) store(in.out, t, pc, in.init);
          ++pc;
          break;
        case Op::ReduceStep:
          if (holds(in.pred, s)) {
            const double acc = load(in.out, t, pc);
            const double v = operand(p_.operands[in.operand_begin], t, pc);
            store(in.out, t, pc, combine(in.fn, acc, v));
          }
          ++pc;
          break;
        case Op::Sync:
          pc_[t] = pc + 1;
          return pc;
        case Op::BlockReduce:
        case Op::BlockBroadcast:
          arriveBlockOp(in, pc, t);
          pc_[t] = pc + 1;
          return pc;
        case Op::End:
          pc_[t] = pc;
          return kExited;
      }
    }
  }

  bool isGroupSource(uint8_t axes, int32_t t) const {
    const int64_t* s = &slots_[static_cast<size_t>(t) * nslots_];
    for (int d = 0; d < 3; ++d) {
      if ((axes >> d & 1) && s[kThreadIdx + d] != 0) return false;
    }
    return true;
  }

  // Before the statement's first barrier: each thread deposits its value.
  void arriveBlockOp(const Instr& in, int32_t pc, int32_t t) {
    double v;
    if (in.op == Op::BlockReduce) {
      v = holds(in.pred, slotsOf(t)) ? load(in.in, t, pc) : in.init;
    } else {
      if (!isGroupSource(in.thread_axes, t)) return;
      v = load(in.in, t, pc);
    }
    if (in.workspace >= 0) {
      store(in.workspace, t, t, pc, v);
    } else {
      contrib_[t] = v;
    }
  }

  double deposited(const Instr& in, int32_t pc, int32_t reader, int32_t slot) {
    return in.workspace >= 0 ? load(in.workspace, slot, reader, pc) : contrib_[slot];
  }

  // After the first barrier: thread t reads its group and writes `out`.
  void finishBlockOp(const Instr& in, int32_t pc, int32_t t) {
    const int64_t* s = slotsOf(t);
    int64_t lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      const bool across = in.thread_axes >> d & 1;
      lo[d] = across ? 0 : s[kThreadIdx + d];
      hi[d] = across ? L_.block[d] : s[kThreadIdx + d] + 1;
    }
    auto linear = [&](int64_t x, int64_t y, int64_t z) {
      return static_cast<int32_t>(x + L_.block[0] * (y + L_.block[1] * z));
    };
    if (in.op == Op::BlockBroadcast) {
      store(in.out, t, pc, deposited(in, pc, t, linear(lo[0], lo[1], lo[2])));
      return;
    }
    if (!holds(in.pred, s) || !holds(in.write_pred, s)) return;
    double acc = in.init;
    for (int64_t z = lo[2]; z < hi[2]; ++z) {
      for (int64_t y = lo[1]; y < hi[1]; ++y) {
        for (int64_t x = lo[0]; x < hi[0]; ++x) {
          acc = combine(in.fn, acc, deposited(in, pc, t, linear(x, y, z)));
        }
      }
    }
    store(in.out, t, pc, acc);
  }

  const Program& p_;
  const Launch& L_;
  const SimOptions& options_;
  Findings& findings_;
  SharedShadow shadow_;
  int64_t block_linear_ = 0;
  // Per Global buffer written in this launch: the owner (block * threads +
  // thread) of each element, -1 when not stored yet.
  std::map<int32_t, std::vector<int64_t>> global_writers_;
  const int nslots_;
  const int32_t nthreads_;
  std::vector<int64_t> slots_;  // nthreads x nslots
  std::vector<uint8_t> locals_;  // nthreads x local_bytes
  std::vector<uint8_t> smem_;
  std::vector<int32_t> pc_;
  std::vector<uint32_t> steps_;
  std::vector<int32_t> arrived_;  // barrier instruction reached, or kExited
  std::vector<double> contrib_;   // block op values when there is no workspace
  std::vector<int32_t> order_;
  std::mt19937_64 rng_;
};

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

}  // namespace

SimReport simulateBuffers(const kir::Kernel& kernel, const std::vector<TensorArg>& inputs,
                          const std::vector<TensorArg>& outputs,
                          const std::map<std::string, double>& scalars,
                          const SimOptions& options) {
  const Program program = compileKernel(kernel, scalars);
  const Launch launch = bindLaunch(program, kernel, inputs, outputs, scalars);
  Findings findings(program, options, launch.shared_address);
  const int64_t total = launch.grid[0] * launch.grid[1] * launch.grid[2];
  const std::vector<int64_t> blocks = chooseBlocks(total, options);
  BlockRunner runner(program, launch, options, findings);
  for (int64_t b : blocks) runner.run(b);
  SimReport& report = findings.report();
  report.blocks_total = total;
  report.blocks_simulated = static_cast<int64_t>(blocks.size());
  return std::move(report);
}

}  // namespace smelt::sim
