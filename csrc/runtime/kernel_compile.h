// One kernel from its lowered IR to a KernelEntry (FusionExecutor's compile
// step): the CUDA source, NVRTC (or its result compiled ahead in a batch,
// nvrtc_batch.h), ptxas's checks, and the launch description; and the disk
// cache's launch entries that let a later process skip all of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fusion/types.h"
#include "lower/kir.h"
#include "runtime/kernel_cache.h"
#include "runtime/nvrtc_batch.h"

namespace smelt {

// A readable, stable kernel name derived from the executor's cache key.
std::string kernelNameFor(const std::string& key);

// What compileKernel asks NVRTC for first: the kernel's source with the
// full-occupancy request when its block size asks for it.
NvrtcRequest firstNvrtcRequest(const kir::Kernel& kernel, const std::string& name, int arch,
                               DataType index_type);

// Generates, compiles and checks the kernel; describes its launch. When
// `precompiled` holds NVRTC's result for the request it would make first,
// that result is taken (and stored in the disk cache) instead of compiling.
KernelEntry compileKernel(const kir::Kernel& kernel, const std::string& name, int arch,
                          DataType index_type, const PrecompiledKernel* precompiled = nullptr);

// The kernel a process of this build compiled for executor key `key` before:
// its launch description and its cubin from the disk cache, with no lowering
// and no NVRTC; nullopt when either is missing (or the cache is off).
std::optional<KernelEntry> loadStoredKernel(const std::string& key, const std::string& name, int arch);
// How many times loadStoredKernel read the disk cache in this process (the
// tests count one read per kernel a compile asks for).
int64_t storedKernelReads();
// Stores `entry`'s launch description under `key` (its cubin is stored by
// the compile).
void storeKernel(const std::string& key, const KernelEntry& entry);

}  // namespace smelt
