// Helpers shared by the FusionExecutor suites (CPU simulator and GPU):
// comparing outputs with the ATen evaluation of the fusion at tolerances
// that suit each dtype.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/aten_reference.h"
#include "fusion/fusion.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"

namespace smelt::testing {

// Points SMELT_KERNEL_CACHE_DIR at a fresh, empty directory for as long as it
// lives (then removes it and restores the variable), so a test that asserts
// what a cold disk cache does, or what a second process finds in it, does
// not depend on what earlier runs left in the user's cache.
class ScopedKernelCacheDir {
 public:
  ScopedKernelCacheDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("smelt_test_cache_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    removeDirectory();
    if (const char* old = std::getenv("SMELT_KERNEL_CACHE_DIR")) saved_ = old;
    setenv("SMELT_KERNEL_CACHE_DIR", path_.c_str(), 1);
  }
  ~ScopedKernelCacheDir() {
    removeDirectory();
    if (saved_) {
      setenv("SMELT_KERNEL_CACHE_DIR", saved_->c_str(), 1);
    } else {
      unsetenv("SMELT_KERNEL_CACHE_DIR");
    }
  }
  ScopedKernelCacheDir(const ScopedKernelCacheDir&) = delete;
  ScopedKernelCacheDir& operator=(const ScopedKernelCacheDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // The entries of `kind` ("kernel", "launch", "segments"; "": every file)
  // in the directory.
  std::vector<std::filesystem::path> entries(const std::string& kind) const {
    std::vector<std::filesystem::path> found;
    if (!std::filesystem::exists(path_)) return found;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      if (kind.empty() || entry.path().extension() == "." + kind) found.push_back(entry.path());
    }
    return found;
  }

 private:
  // The cache directory is flat. (Not std::filesystem::remove_all: the
  // symbol resolves into libtorch's copy, which crashes here.)
  void removeDirectory() const {
    std::error_code error;
    for (const std::filesystem::path& entry : entries("")) std::filesystem::remove(entry, error);
    std::filesystem::remove(path_, error);
  }

  std::filesystem::path path_;
  std::optional<std::string> saved_;
};

// {rtol, atol}: float results differ from ATen's by summation order, half
// types by their 11 (half) or 8 (bfloat16) significant bits.
inline std::pair<double, double> tolerance(at::ScalarType type) {
  switch (type) {
    case at::kDouble: return {1e-10, 1e-10};
    case at::kFloat: return {1e-4, 1e-4};
    case at::kHalf: return {1e-2, 1e-2};
    case at::kBFloat16: return {3e-2, 3e-2};
    default: return {0, 0};  // integers and bool: exact
  }
}

// Each output has the fusion output's dtype and the reference's shape and
// values (within tolerance); NaN nowhere.
inline void expectOutputsMatch(Fusion& fusion, const std::vector<at::Tensor>& outputs,
                               const std::vector<at::Tensor>& expected,
                               const std::string& context = "") {
  ASSERT_EQ(outputs.size(), fusion.outputs().size()) << context;
  ASSERT_EQ(outputs.size(), expected.size()) << context;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor actual = outputs[i].cpu();
    const at::ScalarType type = toScalarType(fusion.outputs()[i]->dtype());
    EXPECT_EQ(actual.scalar_type(), type) << context << " output " << i;
    ASSERT_EQ(actual.sizes(), expected[i].sizes()) << context << " output " << i;
    const auto [rtol, atol] = tolerance(type);
    const at::Tensor want = expected[i].cpu().to(type).to(at::kDouble);
    EXPECT_TRUE(at::allclose(actual.to(at::kDouble), want, rtol, atol))
        << context << " output " << i << "\nactual:\n" << actual << "\nexpected:\n" << want;
  }
}

// out = set(set(in)) over a [rows, 8] float input: one block per row, two
// threads each moving 4 floats with one 16-byte load into registers and one
// 16-byte store. The input's rows may have any stride (the runtime checks it
// against the vector size).
inline void buildVectorizedCopy(int64_t rows = 6) {
  Fusion* fusion = Fusion::current();
  TensorView* in = makeConcreteTensor({rows, 8});
  in->setContiguity({false, true});
  fusion->addInput(in);
  TensorView* staged = set(in);
  TensorView* out = set(staged);
  fusion->addOutput(out);
  out->split(1, 4);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  staged->axis(2)->parallelize(ParallelType::Vectorize);
  out->axis(2)->parallelize(ParallelType::Vectorize);
  staged->inlineAt(2);
}

// out = in + 1 on a symbolic 2-D input, scheduled as a pointwise scheduler
// does: dimensions merged, split by 4 (vectorized loads into a register
// cache and vectorized stores from one) and by 128 (TIDx), BIDx outside.
inline void buildMergedVectorizedAdd(DataType dtype = DataType::Float) {
  Fusion* fusion = Fusion::current();
  TensorView* in = makeContigTensor(2, dtype);
  fusion->addInput(in);
  TensorView* out = add(in, 1.0);
  fusion->addOutput(out);
  TensorView* in_cache = in->cacheAfter();
  out->cacheBefore();
  out->merge(0)->split(0, 4)->split(0, 128);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  in_cache->axis(-1)->parallelize(ParallelType::Vectorize);
  out->axis(-1)->parallelize(ParallelType::Vectorize);
  inlineMost(fusion);
}

}  // namespace smelt::testing
