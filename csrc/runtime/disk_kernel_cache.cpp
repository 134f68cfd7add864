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

namespace smelt {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "smelt-kernel-cache 1\n";

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

void putU64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void putBytes(std::string& out, const char* data, size_t size) {
  putU64(out, size);
  out.append(data, size);
}

// Reads an entry's fields in order; any read past the end makes it corrupt.
class EntryReader {
 public:
  explicit EntryReader(std::string data) : data_(std::move(data)) {}
  uint64_t u64() {
    need(8);
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return value;
  }
  std::string bytes() {
    const uint64_t size = u64();
    need(size);
    std::string value = data_.substr(pos_, size);
    pos_ += size;
    return value;
  }
  size_t position() const { return pos_; }

 private:
  void need(uint64_t size) const {
    SMELT_CHECK(size <= data_.size() - pos_, "truncated (", data_.size(), " bytes)");
  }
  std::string data_;
  size_t pos_ = 0;
};

std::string nvrtcVersionText() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

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
      << cudaIncludeDir() << "\narch " << options.arch << "\noptions";
  for (const std::string& option : options.extra_options) key << " " << option;
  key << "\nkernel " << kernel_name << "\n" << source;
  return key.str();
}

fs::path kernelCacheEntryPath(const fs::path& dir, const std::string& key) {
  std::ostringstream name;
  name << std::hex << std::setw(16) << std::setfill('0') << fnv1a(key.data(), key.size()) << ".kernel";
  return dir / name.str();
}

std::optional<CompiledKernel> loadCachedKernel(const fs::path& dir, const std::string& key) {
  const fs::path path = kernelCacheEntryPath(dir, key);
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  try {
    const size_t magic = sizeof(kMagic) - 1;
    SMELT_CHECK(data.compare(0, magic, kMagic) == 0, "not a smelt kernel cache entry");
    SMELT_CHECK(data.size() >= magic + 8, "truncated (", data.size(), " bytes)");
    const size_t body_end = data.size() - 8;
    EntryReader checksum_reader(data.substr(body_end));
    SMELT_CHECK(checksum_reader.u64() == fnv1a(data.data(), body_end), "its checksum does not match");
    EntryReader reader(data.substr(magic, body_end - magic));
    if (reader.bytes() != key) return std::nullopt;  // another key with the same hash
    CompiledKernel compiled;
    compiled.kernel_name = reader.bytes();
    compiled.arch = static_cast<int>(reader.u64());
    compiled.log = reader.bytes();
    const std::string cubin = reader.bytes();
    compiled.cubin.assign(cubin.begin(), cubin.end());
    compiled.ptxas = parsePtxasInfo(compiled.log, compiled.kernel_name);
    compiled.from_disk_cache = true;
    return compiled;
  } catch (const Error& e) {
    warn(errorMessage("ignoring the corrupt kernel cache entry ", path.string(), ": ",
                      std::string(e.what()).substr(0, 200)));
    return std::nullopt;
  }
}

bool storeCachedKernel(const fs::path& dir, const std::string& key, const CompiledKernel& compiled) {
  std::string data = kMagic;
  putBytes(data, key.data(), key.size());
  putBytes(data, compiled.kernel_name.data(), compiled.kernel_name.size());
  putU64(data, static_cast<uint64_t>(compiled.arch));
  putBytes(data, compiled.log.data(), compiled.log.size());
  putBytes(data, compiled.cubin.data(), compiled.cubin.size());
  putU64(data, fnv1a(data.data(), data.size()));

  // A name no other writer uses: this process, this thread, a counter.
  static std::atomic<uint64_t> counter{0};
  const fs::path final_path = kernelCacheEntryPath(dir, key);
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

}  // namespace smelt
