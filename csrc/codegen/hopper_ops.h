// CUDA text for the Hopper (sm_90a) statements of the kernel IR (kir.h:
// MbarrierInit/Arrive/Wait, TmaLoad, FenceProxyAsync, Wgmma, WgmmaFence/
// Commit/Wait): a prelude of inline-PTX helpers in namespace smelt, added
// when a kernel uses any of them, and the call each statement becomes.
// Tensor maps are `const __grid_constant__ smelt::TensorMap` parameters (the
// 128 bytes of a CUtensorMap, 64-byte aligned) the runtime encodes at launch.
#pragma once

#include <functional>
#include <string>

#include "lower/kir.h"

namespace smelt::codegen {

// True when the kernel needs the architecture-specific target (sm_90a):
// it issues wgmma.
bool needsArchSpecificTarget(const kir::Kernel& kernel);

// The helpers, with one wgmma function per (n, operand type) the kernel uses.
std::string hopperPrelude(const kir::Kernel& kernel);

// The kernel parameters of the tensor maps, in Kernel::tensor_maps order.
std::vector<std::string> tensorMapParameters(const kir::Kernel& kernel);

// The statement's CUDA text; `element` spells an access as an lvalue and
// `index` an index expression.
std::string hopperCall(const kir::Stmt& stmt,
                       const std::function<std::string(const kir::Access&)>& element,
                       const std::function<std::string(const IntExpr&)>& index);

}  // namespace smelt::codegen
