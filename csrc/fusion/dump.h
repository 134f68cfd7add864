// SMELT_DUMP: which stages print what they produce (comma-separated names,
// e.g. SMELT_DUMP=fusion,kernel_ir,after:syncs,smem_plan,cuda,ptxas).
#pragma once

#include <string>

namespace smelt {

// True when SMELT_DUMP names `what`.
bool dumpEnabled(const std::string& what);

}  // namespace smelt
