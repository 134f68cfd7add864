// A persistent, on-disk cache of NVRTC results, shared by every process of a
// user: a second process compiling the same kernels (the same model under
// torch.compile, a test suite run again) runs no NVRTC.
//
// An entry is keyed by everything that decides the cubin: the CUDA source,
// the kernel name, the target architecture, the extra NVRTC options, the
// NVRTC version, the CUDA include directory and smelt's version. The file
// name is a 64-bit hash of that key; the entry stores the whole key and is
// used only when it matches, so a hash collision is a miss, never a wrong
// kernel. An entry holds the cubin and NVRTC's log (ptxas's -v report is
// parsed from it again, so every check made on a fresh compile is made on a
// cached one too), followed by a checksum of the bytes before it.
//
// Where: $SMELT_KERNEL_CACHE_DIR when set ("" or "off" turns the cache off),
// else $XDG_CACHE_HOME/smelt/kernels, else $HOME/.cache/smelt/kernels.
// Concurrent processes are safe: an entry is written to a temporary file in
// the same directory and renamed into place, so a reader sees a whole entry
// or none. A corrupt entry (truncated, bad checksum, unparsable log) is
// ignored with a warning on stderr and replaced by the fresh compile; a
// directory that cannot be written is warned about once and compiling goes
// on without the cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "fusion/error.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {

// The cache directory the environment selects; nullopt when it is off.
std::optional<std::filesystem::path> kernelCacheDir();

// The text that keys a compilation (documented above).
std::string kernelCacheKey(const std::string& source, const std::string& kernel_name,
                           const NvrtcOptions& options);

// Where the entry for `key` lives in `dir`.
std::filesystem::path kernelCacheEntryPath(const std::filesystem::path& dir, const std::string& key);

// The compiled kernel stored under `key` (compile_ms 0, from_disk_cache
// set), or nullopt when there is none, it belongs to another key, or it is
// corrupt (then with a warning).
std::optional<CompiledKernel> loadCachedKernel(const std::filesystem::path& dir, const std::string& key);

// Stores `compiled` under `key` (temporary file, then rename). Returns false,
// after a warning, when the entry could not be written.
bool storeCachedKernel(const std::filesystem::path& dir, const std::string& key,
                       const CompiledKernel& compiled);

// Entries of other kinds share the directory, the file format (a magic line
// naming the kind, the whole key, the payload, a checksum), the atomic writes
// and the corrupt-entry warning: launch descriptions and segmentations
// (executor.h, fusion_executor_cache.h) are kept as kinds "launch" and
// "segments", keyed by what decides them and by buildId().
std::filesystem::path cacheEntryPath(const std::filesystem::path& dir, const std::string& kind,
                                     const std::string& key);
// The payload stored under `key`, or nullopt (none, another key, or corrupt:
// then with a warning).
std::optional<std::string> loadCacheEntry(const std::filesystem::path& dir, const std::string& kind,
                                          const std::string& key);
bool storeCacheEntry(const std::filesystem::path& dir, const std::string& kind,
                     const std::string& key, const std::string& payload);
// Warns that the entry at `path` is ignored because of `why`.
void warnCorrupt(const std::filesystem::path& path, const std::string& kind, const std::string& why);

// The entry stored under `key`, parsed by `parse` (payload -> value, a
// smelt::Error on bytes it cannot read); nullopt when there is none, or it is
// corrupt or does not parse (then with a warning).
template <typename Parse>
auto loadCacheEntryAs(const std::filesystem::path& dir, const std::string& kind, const std::string& key,
                      Parse parse) -> std::optional<decltype(parse(std::string()))> {
  std::optional<std::string> payload = loadCacheEntry(dir, kind, key);
  if (!payload) return std::nullopt;
  try {
    return parse(*std::move(payload));
  } catch (const Error& e) {
    warnCorrupt(cacheEntryPath(dir, kind, key), kind, e.what());
    return std::nullopt;
  }
}

// compileCuda through the disk cache of kernelCacheDir(): a hit returns the
// stored kernel (compile_ms: the time to read it), a miss compiles and stores.
CompiledKernel compileCudaCached(const std::string& source, const std::string& kernel_name,
                                 const NvrtcOptions& options = {});
// Stores `compiled`, compiled elsewhere (in a batch, nvrtc_batch.h), as
// compileCudaCached would have stored compileCuda's result for the same
// arguments; nothing when the cache is off.
void storeCompiledCuda(const std::string& source, const std::string& kernel_name,
                       const NvrtcOptions& options, const CompiledKernel& compiled);

}  // namespace smelt
