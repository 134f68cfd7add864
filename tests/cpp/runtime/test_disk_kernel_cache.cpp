// The on-disk kernel cache: entries round-trip (cubin, log, ptxas report),
// a key that changes misses, corrupt entries are ignored with a warning,
// concurrent writers leave one whole entry, and an unwritable directory
// turns the cache off with a warning instead of failing the compile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/expect_error.h"
#include "runtime/disk_kernel_cache.h"
#include "runtime/launch_info.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {
namespace {

namespace fs = std::filesystem;

const char* kSource = R"(extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
)";

// A fresh directory per test, removed afterwards; SMELT_KERNEL_CACHE_DIR is
// restored too.
class DiskKernelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("smelt_disk_cache_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    if (const char* old = std::getenv("SMELT_KERNEL_CACHE_DIR")) saved_env_ = old;
  }
  void TearDown() override {
    fs::remove_all(dir_);
    if (saved_env_) {
      setenv("SMELT_KERNEL_CACHE_DIR", saved_env_->c_str(), 1);
    } else {
      unsetenv("SMELT_KERNEL_CACHE_DIR");
    }
  }
  static const CompiledKernel& compiled() {
    static const CompiledKernel kernel = compileCuda(kSource, "add_one");
    return kernel;
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    if (fs::exists(dir_)) {
      for (const auto& entry : fs::directory_iterator(dir_)) found.push_back(entry.path());
    }
    return found;
  }

  fs::path dir_;
  std::optional<std::string> saved_env_;
};

TEST_F(DiskKernelCache, EntryRoundTripsWithItsPtxasReport) {
  const std::string key = kernelCacheKey(kSource, "add_one", {});
  ASSERT_TRUE(storeCachedKernel(dir_, key, compiled()));
  ASSERT_EQ(files(), std::vector<fs::path>{kernelCacheEntryPath(dir_, key)});
  const std::optional<CompiledKernel> loaded = loadCachedKernel(dir_, key);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->from_disk_cache);
  EXPECT_FALSE(compiled().from_disk_cache);
  EXPECT_EQ(loaded->kernel_name, "add_one");
  EXPECT_EQ(loaded->arch, compiled().arch);
  EXPECT_EQ(loaded->cubin, compiled().cubin);
  EXPECT_EQ(loaded->log, compiled().log);
  EXPECT_EQ(loaded->ptxas.registers, compiled().ptxas.registers);
  EXPECT_GT(loaded->ptxas.registers, 0);
}

TEST_F(DiskKernelCache, KeyNamesSourceArchOptionsAndVersions) {
  const std::string key = kernelCacheKey(kSource, "add_one", {});
  NvrtcOptions sm80;
  sm80.arch = 80;
  NvrtcOptions fast_math;
  fast_math.extra_options = {"--use_fast_math"};
  const std::string edited = std::string(kSource) + "// edited\n";
  for (const std::string& other : {kernelCacheKey(kSource, "add_one", sm80),
                                   kernelCacheKey(kSource, "add_one", fast_math),
                                   kernelCacheKey(edited, "add_one", {})}) {
    EXPECT_NE(other, key);
    EXPECT_NE(kernelCacheEntryPath(dir_, other), kernelCacheEntryPath(dir_, key));
  }
  EXPECT_NE(key.find("smelt "), std::string::npos);
  EXPECT_NE(key.find("nvrtc "), std::string::npos);
  EXPECT_NE(key.find("include "), std::string::npos);
}

TEST_F(DiskKernelCache, AnEntryOfAnotherKeyIsAMissWithoutWarning) {
  // Two keys whose hashes collide: simulated by moving one key's entry to
  // the other's file name. The stored key does not match: a plain miss.
  const std::string key = kernelCacheKey(kSource, "add_one", {});
  NvrtcOptions sm80;
  sm80.arch = 80;
  const std::string other = kernelCacheKey(kSource, "add_one", sm80);
  ASSERT_TRUE(storeCachedKernel(dir_, key, compiled()));
  fs::rename(kernelCacheEntryPath(dir_, key), kernelCacheEntryPath(dir_, other));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(loadCachedKernel(dir_, other).has_value());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(DiskKernelCache, CorruptEntriesAreIgnoredWithAWarning) {
  const std::string key = kernelCacheKey(kSource, "add_one", {});
  const fs::path path = kernelCacheEntryPath(dir_, key);
  ASSERT_TRUE(storeCachedKernel(dir_, key, compiled()));
  const auto size = fs::file_size(path);
  struct Damage {
    const char* what;
    std::function<void()> apply;
  };
  const std::vector<Damage> damages = {
      {"truncated", [&] { fs::resize_file(path, size / 2); }},
      {"a flipped byte", [&] {
         std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(static_cast<std::streamoff>(size / 2));
         f.put('\x5a');
       }},
      {"not an entry", [&] { std::ofstream(path, std::ios::trunc) << "garbage"; }},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    ASSERT_TRUE(storeCachedKernel(dir_, key, compiled()));
    damage.apply();
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(loadCachedKernel(dir_, key).has_value());
    const std::string warning = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(warning.find("smelt warning: ignoring the corrupt kernel cache entry " + path.string()),
              std::string::npos)
        << warning;
  }
}

TEST_F(DiskKernelCache, CompileCudaCachedCompilesOnceThenReads) {
  setenv("SMELT_KERNEL_CACHE_DIR", dir_.c_str(), 1);
  const CompiledKernel first = compileCudaCached(kSource, "add_one");
  EXPECT_FALSE(first.from_disk_cache);
  EXPECT_EQ(files().size(), 1u);
  const CompiledKernel second = compileCudaCached(kSource, "add_one");
  EXPECT_TRUE(second.from_disk_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  // A corrupt entry: compiled again and replaced.
  fs::resize_file(files().front(), 10);
  ::testing::internal::CaptureStderr();
  const CompiledKernel third = compileCudaCached(kSource, "add_one");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("corrupt"), std::string::npos);
  EXPECT_FALSE(third.from_disk_cache);
  EXPECT_TRUE(compileCudaCached(kSource, "add_one").from_disk_cache);
}

TEST_F(DiskKernelCache, OffMeansNoFiles) {
  for (const char* off : {"", "off"}) {
    setenv("SMELT_KERNEL_CACHE_DIR", off, 1);
    EXPECT_FALSE(kernelCacheDir().has_value());
    EXPECT_FALSE(compileCudaCached(kSource, "add_one").from_disk_cache);
    EXPECT_FALSE(compileCudaCached(kSource, "add_one").from_disk_cache);
  }
  EXPECT_TRUE(files().empty());
}

TEST_F(DiskKernelCache, DefaultDirectoryFollowsXdgThenHome) {
  unsetenv("SMELT_KERNEL_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::optional<std::string> saved_xdg = xdg ? std::optional<std::string>(xdg) : std::nullopt;
  setenv("XDG_CACHE_HOME", "/some/cache", 1);
  EXPECT_EQ(kernelCacheDir(), fs::path("/some/cache/smelt/kernels"));
  unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(kernelCacheDir(), fs::path(home) / ".cache" / "smelt" / "kernels");
  }
  if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg->c_str(), 1);
}

TEST_F(DiskKernelCache, ConcurrentWritersLeaveOneWholeEntry) {
  const std::string key = kernelCacheKey(kSource, "add_one", {});
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i) {
    writers.emplace_back([&] {
      for (int j = 0; j < 10; ++j) {
        storeCachedKernel(dir_, key, compiled());
        // Readers racing the writers see a whole entry or none.
        if (std::optional<CompiledKernel> seen = loadCachedKernel(dir_, key)) {
          EXPECT_EQ(seen->cubin, compiled().cubin);
        }
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(files(), std::vector<fs::path>{kernelCacheEntryPath(dir_, key)});  // no temporary left
  ASSERT_TRUE(loadCachedKernel(dir_, key).has_value());
}

TEST_F(DiskKernelCache, AnUnwritableDirectoryWarnsOnceAndCompilingGoesOn) {
  fs::create_directories(dir_);
  const fs::path blocked = dir_ / "a_file";
  std::ofstream(blocked) << "not a directory";
  setenv("SMELT_KERNEL_CACHE_DIR", (blocked / "kernels").c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(compileCudaCached(kSource, "add_one").from_disk_cache);
  EXPECT_FALSE(compileCudaCached(kSource, "add_one").from_disk_cache);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  const std::string expected = "cannot write the kernel cache directory";
  ASSERT_NE(warnings.find(expected), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(expected, warnings.find(expected) + 1), std::string::npos) << warnings;
}

// A launch description survives the bytes unchanged: every field, and
// expressions of every kind (symbolic, so nothing folds), evaluate the same;
// bytes cut short or naming an unknown kind are an error, not a description.
TEST(LaunchInfo, RoundTripsEveryFieldAndExpressionKind) {
  const IntExpr n = IntExpr::symbol("T0.size[0]");
  const IntExpr m = IntExpr::symbol("T0.size[1]");
  const IntExpr s = IntExpr::symbol("T1.stride[0]");
  KernelLaunchInfo info;
  info.cuda_source = "extern \"C\" __global__ void k() {}\n";
  info.inputs.push_back(TensorParam{"T0", DataType::Half, {n, m}, 16, {false, false}});
  info.outputs.push_back(TensorParam{"T1", DataType::Float, {n, IntExpr(1)}, 0, {false, true}});
  info.scalars.push_back(ScalarParam{"s0", DataType::Int32});
  info.grid[0] = ceilDiv(n, 4) + min(m, s) - max(n % 3, IntExpr(2));
  info.grid[1] = (n * m) / 7;
  info.block[0] = 128;
  info.shared_memory_bytes = alignUp(m * 4, 16);
  info.static_shared_memory = true;
  info.vector_conditions.push_back(VectorCondition::equal("T1", s, m));
  info.vector_conditions.push_back(VectorCondition::multiple("T0", m, 8));
  info.smem_report = "plan: 64 B\n";
  info.tensor_maps.push_back({1, 64, 32, true});
  info.arch_specific = true;

  const std::string bytes = serializeLaunchInfo(info);
  const KernelLaunchInfo back = parseLaunchInfo(bytes);
  EXPECT_EQ(serializeLaunchInfo(back), bytes);
  EXPECT_EQ(back.cuda_source, info.cuda_source);
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(back.inputs[0].dtype, DataType::Half);
  EXPECT_EQ(back.inputs[0].vector_bytes, 16);
  EXPECT_EQ(back.outputs[0].expanded, (std::vector<bool>{false, true}));
  EXPECT_EQ(back.scalars[0].dtype, DataType::Int32);
  EXPECT_TRUE(back.static_shared_memory);
  EXPECT_EQ(back.vector_conditions, info.vector_conditions);
  EXPECT_EQ(back.smem_report, info.smem_report);
  ASSERT_EQ(back.tensor_maps.size(), 1u);
  EXPECT_EQ(back.tensor_maps[0].tensor, 1);
  EXPECT_EQ(back.tensor_maps[0].box_rows, 64);
  EXPECT_EQ(back.tensor_maps[0].box_cols, 32);
  EXPECT_TRUE(back.tensor_maps[0].swizzle128);
  EXPECT_TRUE(back.arch_specific);
  for (int64_t rows : {1, 5, 1000}) {
    const std::map<std::string, int64_t> bindings{{"T0.size[0]", rows}, {"T0.size[1]", 24},
                                                  {"T1.stride[0]", 20}};
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(back.grid[d].evaluate(bindings), info.grid[d].evaluate(bindings));
      EXPECT_EQ(back.block[d].evaluate(bindings), info.block[d].evaluate(bindings));
    }
    EXPECT_EQ(back.shared_memory_bytes.evaluate(bindings), info.shared_memory_bytes.evaluate(bindings));
  }
  EXPECT_SMELT_ERROR(parseLaunchInfo(bytes.substr(0, bytes.size() - 3)), "truncated");
  EXPECT_SMELT_ERROR(parseLaunchInfo(bytes + "x"), "bytes after the launch description");
  std::string bad_kind = serializeLaunchInfo(KernelLaunchInfo{});
  // The grid's first expression starts after the empty source, the three
  // empty parameter lists: its kind is the next u64.
  bad_kind[8 + 8 + 8 + 8] = 99;
  EXPECT_SMELT_ERROR(parseLaunchInfo(bad_kind), "bad expression kind 99");
}

}  // namespace
}  // namespace smelt
