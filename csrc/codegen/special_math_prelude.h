// The part of special_math.h a kernel's prelude holds: the sections of the
// special functions the kernel calls and of what they call, nothing for a
// kernel that calls none (each kernel's NVRTC compile pays for its prelude).
#pragma once

#include <set>
#include <string>

namespace smelt::codegen {

// The sections defining `functions` (names of special_math.h's sections:
// the ops' names) and their dependencies, in the file's order, wrapped in
// namespace smelt::special; empty when `functions` is.
std::string specialMathPrelude(const std::set<std::string>& functions);

}  // namespace smelt::codegen
