// The simulator's tensor-core statements on small hand-built kernels, checked
// element by element against the PTX definitions (fusion/mma_fragment.h):
// ldmatrix x1/x4 with and without .trans, cp.async groups retired oldest first
// by wait_group, zero fill under a failed predicate, and the errors for
// bytes read while their copy is in flight. Each kernel also compiles with
// NVRTC for sm_80.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "codegen/cuda_codegen.h"
#include "common/kir_builder.h"
#include "fusion/mma_fragment.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/simulator/simulator.h"

namespace smelt {
namespace {

using namespace kir_testing;

// A one-warp kernel over a fusion out = set(in) of `elements` elements:
// the kernel's global buffers, the copy expression and the thread loop body.
struct OneWarpCopy {
  std::unique_ptr<TestKernel> t = std::make_unique<TestKernel>();
  kir::Buffer* gin = nullptr;
  kir::Buffer* gout = nullptr;
  const Expr* copy = nullptr;
  kir::StmtList* body = nullptr;
};

OneWarpCopy oneWarpCopy(int64_t elements, DataType dtype) {
  OneWarpCopy k;
  FusionGuard guard(k.t->fusion.get());
  TensorView* in = makeConcreteTensor({elements}, dtype);
  k.t->fusion->addInput(in);
  TensorView* out = set(in);
  k.t->fusion->addOutput(out);
  k.copy = out->definition();
  k.gin = k.t->global(in, true);
  k.gout = k.t->global(out, false);
  k.t->launch(1, 1, 32, 1);
  k.body = &loop(k.t->kernel.body, "threadIdx.x", 32, ParallelType::TIDx)->body;
  return k;
}

// out[2m l + i] = fragment element i of lane l after ldmatrix.x{m} of the
// matrices stored row-major one after another in `in` (64 halves each).
std::unique_ptr<TestKernel> ldmatrixKernel(int64_t matrices, bool transpose) {
  OneWarpCopy k = oneWarpCopy(64 * matrices, DataType::Half);
  kir::Buffer* gin = k.gin;
  kir::Buffer* gout = k.gout;
  const Expr* copy = k.copy;
  kir::StmtList& body = *k.body;
  kir::Buffer* s = k.t->shared("S", DataType::Half, 64 * matrices, 0);
  kir::Buffer* frag = k.t->local("frag", DataType::Half, 2 * matrices);
  allocate(body, s);
  allocate(body, frag);
  const IntExpr per_lane = 2 * matrices;
  kir::ForLoop* fill = loop(body, "i0", per_lane);
  compute(fill->body, copy, at(s, tx() * per_lane + sym("i0")), {read(gin, tx() * per_lane + sym("i0"))});
  sync(body, "RAW S");
  auto ld = std::make_unique<kir::LdMatrix>();
  ld->matrices = matrices;
  ld->transpose = transpose;
  ld->src = at(s, tx() % (8 * matrices) * 8);
  ld->dst = at(frag, 0);
  append(body, std::move(ld));
  kir::ForLoop* store = loop(body, "i1", per_lane);
  compute(store->body, copy, at(gout, tx() * per_lane + sym("i1")), {read(frag, sym("i1"))});
  return std::move(k.t);
}

TEST(WarpCollectives, LdmatrixGivesEachLaneItsPtxElements) {
  for (int64_t matrices : {1, 4}) {
    for (bool transpose : {false, true}) {
      std::unique_ptr<TestKernel> t = ldmatrixKernel(matrices, transpose);
      at::Tensor in = at::arange(64 * matrices, at::kFloat).to(at::kHalf);
      sim::SimResult r = sim::simulate(t->kernel, {in});
      ASSERT_TRUE(r.report.clean()) << r.report.toString();
      at::Tensor out = r.outputs[0].to(at::kFloat);
      for (int64_t lane = 0; lane < 32; ++lane) {
        for (int64_t j = 0; j < matrices; ++j) {
          for (int64_t e = 0; e < 2; ++e) {
            const mma::RowCol rc = mma::ldmatrixElement(lane, e, transpose);
            EXPECT_EQ(out[2 * matrices * lane + 2 * j + e].item<float>(), j * 64 + rc.row * 8 + rc.col)
                << "x" << matrices << (transpose ? ".trans" : "") << " lane " << lane << " matrix "
                << j << " element " << e;
          }
        }
      }
      NvrtcOptions sm80;
      sm80.arch = 80;
      EXPECT_NO_THROW(compileCuda(generateCuda(t->kernel, "ldmatrix_kernel"), "ldmatrix_kernel", sm80));
    }
  }
}

// Thread t copies 16 bytes to S1 (group 1, zero-filled for t >= 16) and to
// S2 (group 2); wait_group 1 retires group 1 only; after a barrier thread t
// reads its neighbour's S1 bytes (or, with `read_second_group`, S2's).
std::unique_ptr<TestKernel> copyGroupsKernel(bool read_second_group) {
  OneWarpCopy k = oneWarpCopy(256, DataType::Float);
  kir::Buffer* gin = k.gin;
  kir::Buffer* gout = k.gout;
  const Expr* copy = k.copy;
  kir::StmtList& body = *k.body;
  kir::Buffer* s1 = k.t->shared("S1", DataType::Float, 128, 0);
  kir::Buffer* s2 = k.t->shared("S2", DataType::Float, 128, 512);
  allocate(body, s1);
  allocate(body, s2);
  auto cp = [&](kir::Buffer* dst, IntExpr src, kir::Predicate pred) {
    auto c = std::make_unique<kir::CpAsync>();
    c->bytes = 16;
    c->dst = at(dst, tx() * 4);
    c->src = at(gin, std::move(src));
    c->predicate = std::move(pred);
    append(body, std::move(c));
    append(body, std::make_unique<kir::CpAsyncCommit>());
  };
  cp(s1, tx() * 4, all({lt(tx(), 16)}));
  cp(s2, tx() * 4 + 128, {});
  auto wait = std::make_unique<kir::CpAsyncWait>();
  wait->pending = 1;
  append(body, std::move(wait));
  sync(body, "RAW S1");
  compute(body, copy, at(gout, tx()), {read(read_second_group ? s2 : s1, (tx() * 4 + 4) % 128)});
  append(body, std::make_unique<kir::CpAsyncWait>());
  return std::move(k.t);
}

TEST(WarpCollectives, WaitGroupRetiresTheOldestGroupAndZeroFills) {
  std::unique_ptr<TestKernel> t = copyGroupsKernel(false);
  at::Tensor in = at::arange(256, at::kFloat) + 1;
  sim::SimResult r = sim::simulate(t->kernel, {in});
  ASSERT_TRUE(r.report.clean()) << r.report.toString();
  for (int64_t i = 0; i < 32; ++i) {
    const int64_t src = (4 * i + 4) % 128;
    EXPECT_EQ(r.outputs[0][i].item<float>(), src < 64 ? src + 1 : 0.0) << i;
  }
  NvrtcOptions sm80;
  sm80.arch = 80;
  EXPECT_NO_THROW(compileCuda(generateCuda(t->kernel, "copy_groups"), "copy_groups", sm80));
}

TEST(WarpCollectives, ReadingTheGroupStillInFlightIsAnError) {
  std::unique_ptr<TestKernel> t = copyGroupsKernel(true);
  sim::SimResult r = sim::simulate(t->kernel, {at::arange(256, at::kFloat)});
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::AsyncCopyInFlight);
  EXPECT_EQ(r.report.errors[0].buffer, "S2");
  EXPECT_NE(r.report.errors[0].message.find("missing wait_group"), std::string::npos)
      << r.report.errors[0].message;
}

}  // namespace
}  // namespace smelt
