// The text a generated kernel starts with, before its signature
// (cuda_codegen.h says what follows): the 16-bit type headers its buffers and
// scalars need, the index typedefs, the block's extents, smelt's device
// helpers in namespace `smelt` (the Tensor parameter struct, index and math
// helpers, block reduction and broadcast: cudaPrelude()), then only the
// optional parts its statements use (vector types, tensor-core and Hopper
// helpers, atomic combines, logAddExp, the block scan, the special functions it calls), so
// NVRTC parses no more than the kernel needs.
#pragma once

#include <string>

#include "fusion/types.h"
#include "lower/kir.h"

namespace smelt::codegen {

// `block_constants`: the block's extents as constants (the emitter's text);
// `vectorized`: a loop of the kernel is emitted as vector copies.
std::string kernelPrelude(const kir::Kernel& kernel, DataType index_type, bool vectorized,
                          const std::string& block_constants);

}  // namespace smelt::codegen
