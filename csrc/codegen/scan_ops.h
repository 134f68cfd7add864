// CUDA text of a block-level scan (kir::BlockScan): each thread combines its
// items (unrolled, each guarded by its position along the scan axis), then
// calls smelt::blockScan (scan_prelude.h's kBlockScanPrelude).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lower/kir.h"

namespace smelt::codegen {

// How the code generator spells things: an access as an lvalue, an index
// expression, a value converted between types, a constant of a type.
struct CodegenSpelling {
  std::function<std::string(const kir::Access&)> element;
  std::function<std::string(const IntExpr&)> index;
  std::function<std::string(const std::string&, DataType, DataType)> convert;
  std::function<std::string(double, DataType)> literal;
  std::function<std::string(DataType)> type;
};

// The statement's lines, a braced block.
std::vector<std::string> blockScanCode(const kir::BlockScan& scan, const CodegenSpelling& spell);

}  // namespace smelt::codegen
