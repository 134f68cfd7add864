#include "codegen/scan_ops.h"

#include "codegen/scan_prelude.h"
#include "fusion/error.h"

namespace smelt::codegen {

std::vector<std::string> blockScanCode(const kir::BlockScan& scan, const CodegenSpelling& spell) {
  SMELT_CHECK(scan.expr != nullptr && scan.workspace != nullptr && scan.items_in.buffer != nullptr,
              "codegen: a block scan needs its expression, items and workspace (run the allocation and "
              "indexing passes)");
  const DataType at = scan.carry.buffer->dtype;
  const std::string type = spell.type(at);
  const ScanCombine combine = scan.expr->combine();
  std::vector<std::string> lines;
  lines.push_back("{  // block scan of " + scan.expr->output()->name() + ": " + std::to_string(scan.items) +
                  " items per thread, " + std::to_string(scan.warps) + " warps");
  lines.push_back("  " + type + " partial = " + spell.literal(scan.expr->initValue(), at) + ";");
  const std::string extent = spell.index(scan.extent);
  for (int64_t k = 0; k < scan.items; ++k) {
    const kir::Access item{scan.items_in.buffer, scan.items_in.index + IntExpr(k)};
    const std::string value = spell.convert(spell.element(item), item.buffer->dtype, at);
    lines.push_back("  if (" + spell.index(scan.first_item + IntExpr(k)) + " < " + extent + ") partial = " +
                    scanCombine(combine, "partial", value, type) + ";");
  }
  lines.push_back("  smelt::blockScan<" + std::to_string(scan.warps) + ">(partial, " + spell.element(scan.carry) +
                  ", " + spell.element(scan.running) + ", " + scan.workspace->name + ", [](" + type + " a, " +
                  type + " b) { return " + scanCombine(combine, "a", "b", type) + "; });");
  lines.push_back("}");
  return lines;
}

}  // namespace smelt::codegen
