#include "runtime/disk_kernel_cache.h"

#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "fusion/error.h"
#include "runtime/byte_record.h"

namespace smelt {
namespace {

namespace fs = std::filesystem;

// FNV-1a: a stable 64-bit hash (std::hash may differ between builds).
uint64_t fnv1a(const char* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void warn(const std::string& message) { std::cerr << "smelt warning: " << message << std::endl; }

// Warns about an unwritable directory once per directory and process.
void warnOnce(const fs::path& dir, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(dir.string()).second) warn(message);
}

// The first line of an entry of `kind` ("smelt-kernel-cache 1").
std::string magicOf(const std::string& kind) { return "smelt-" + kind + "-cache 1\n"; }

std::string nvrtcVersionText() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

void warnCorrupt(const fs::path& path, const std::string& kind, const std::string& why) {
  warn(errorMessage("ignoring the corrupt ", kind, " cache entry ", path.string(), ": ",
                    why.substr(0, 200)));
}

std::optional<fs::path> kernelCacheDir() {
  if (const char* dir = std::getenv("SMELT_KERNEL_CACHE_DIR")) {
    const std::string value = dir;
    if (value.empty() || value == "off") return std::nullopt;
    return fs::path(value);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "smelt" / "kernels";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return fs::path(home) / ".cache" / "smelt" / "kernels";
  }
  return std::nullopt;
}

std::string kernelCacheKey(const std::string& source, const std::string& kernel_name,
                           const NvrtcOptions& options) {
  std::ostringstream key;
  key << "smelt " << SMELT_VERSION << "\nnvrtc " << nvrtcVersionText() << "\ninclude "
      << cudaIncludeDir() << "\narch " << options.arch << (options.arch_specific ? "a" : "") << "\noptions";
  for (const std::string& option : options.extra_options) key << " " << option;
  key << "\nkernel " << kernel_name << "\n" << source;
  return key.str();
}

fs::path cacheEntryPath(const fs::path& dir, const std::string& kind, const std::string& key) {
  std::ostringstream name;
  name << std::hex << std::setw(16) << std::setfill('0') << fnv1a(key.data(), key.size()) << "." << kind;
  return dir / name.str();
}

fs::path kernelCacheEntryPath(const fs::path& dir, const std::string& key) {
  return cacheEntryPath(dir, "kernel", key);
}

// An entry: the magic line, the key (length-prefixed), the payload, and an
// FNV-1a checksum of everything before it.
std::optional<std::string> loadCacheEntry(const fs::path& dir, const std::string& kind,
                                          const std::string& key) {
  const fs::path path = cacheEntryPath(dir, kind, key);
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string magic = magicOf(kind);
  try {
    SMELT_CHECK(data.compare(0, magic.size(), magic) == 0, "not a smelt ", kind, " cache entry");
    SMELT_CHECK(data.size() >= magic.size() + 16, "truncated (", data.size(), " bytes)");
    const size_t body_end = data.size() - 8;
    ByteReader checksum(data.substr(body_end));
    SMELT_CHECK(checksum.u64() == fnv1a(data.data(), body_end), "its checksum does not match");
    ByteReader reader(data.substr(magic.size(), body_end - magic.size()));
    const std::string stored_key = reader.bytes();
    if (stored_key != key) return std::nullopt;  // another key with the same hash
    const size_t payload_start = magic.size() + 8 + stored_key.size();
    return data.substr(payload_start, body_end - payload_start);
  } catch (const Error& e) {
    warnCorrupt(path, kind, e.what());
    return std::nullopt;
  }
}

bool storeCacheEntry(const fs::path& dir, const std::string& kind, const std::string& key,
                     const std::string& payload) {
  std::string data = magicOf(kind);
  ByteWriter key_field;
  key_field.bytes(key);
  data += key_field.data();
  data += payload;
  ByteWriter checksum;
  checksum.u64(fnv1a(data.data(), data.size()));
  data += checksum.data();

  // A name no other writer uses: this process, this thread, a counter.
  static std::atomic<uint64_t> counter{0};
  const fs::path final_path = cacheEntryPath(dir, kind, key);
  std::ostringstream temp_name;
  temp_name << final_path.filename().string() << ".tmp." << ::getpid() << "."
            << std::hash<std::thread::id>{}(std::this_thread::get_id()) << "." << counter++;
  const fs::path temp_path = dir / temp_name.str();
  std::error_code error;
  fs::create_directories(dir, error);
  {
    std::ofstream file(temp_path, std::ios::binary | std::ios::trunc);
    if (file) file.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!file || !file.flush()) {
      warnOnce(dir, errorMessage("cannot write the kernel cache directory ", dir.string(),
                                 "; compiling without it (set SMELT_KERNEL_CACHE_DIR to change it, "
                                 "or to off)"));
      fs::remove(temp_path, error);
      return false;
    }
  }
  fs::rename(temp_path, final_path, error);
  if (error) {
    warnOnce(dir, errorMessage("cannot rename into the kernel cache directory ", dir.string(), ": ",
                               error.message()));
    fs::remove(temp_path, error);
    return false;
  }
  return true;
}

std::optional<CompiledKernel> loadCachedKernel(const fs::path& dir, const std::string& key) {
  return loadCacheEntryAs(dir, "kernel", key, [](std::string payload) {
    ByteReader reader(std::move(payload));
    CompiledKernel compiled;
    compiled.kernel_name = reader.bytes();
    compiled.arch = static_cast<int>(reader.u64());
    compiled.log = reader.bytes();
    const std::string cubin = reader.bytes();
    compiled.cubin.assign(cubin.begin(), cubin.end());
    compiled.ptxas = parsePtxasInfo(compiled.log, compiled.kernel_name);
    compiled.from_disk_cache = true;
    return compiled;
  });
}

bool storeCachedKernel(const fs::path& dir, const std::string& key, const CompiledKernel& compiled) {
  ByteWriter payload;
  payload.bytes(compiled.kernel_name);
  payload.u64(static_cast<uint64_t>(compiled.arch));
  payload.bytes(compiled.log);
  payload.bytes(compiled.cubin.data(), compiled.cubin.size());
  return storeCacheEntry(dir, "kernel", key, payload.data());
}

CompiledKernel compileCudaCached(const std::string& source, const std::string& kernel_name,
                                 const NvrtcOptions& options) {
  const std::optional<fs::path> dir = kernelCacheDir();
  if (!dir) return compileCuda(source, kernel_name, options);
  const auto start = std::chrono::steady_clock::now();
  const std::string key = kernelCacheKey(source, kernel_name, options);
  if (std::optional<CompiledKernel> cached = loadCachedKernel(*dir, key)) {
    cached->compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return *std::move(cached);
  }
  CompiledKernel compiled = compileCuda(source, kernel_name, options);
  storeCachedKernel(*dir, key, compiled);
  return compiled;
}

void storeCompiledCuda(const std::string& source, const std::string& kernel_name,
                       const NvrtcOptions& options, const CompiledKernel& compiled) {
  if (const std::optional<fs::path> dir = kernelCacheDir()) {
    storeCachedKernel(*dir, kernelCacheKey(source, kernel_name, options), compiled);
  }
}

}  // namespace smelt
