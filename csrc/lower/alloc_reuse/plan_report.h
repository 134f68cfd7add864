// The report of a shared-memory plan (docs/reading-the-report.md) in three forms: a text
// table with an ASCII timeline, JSON, and an SVG picture (x = program
// position, y = address).
//
// Guarantees: every form lists every buffer in input order with name, dtype,
// bytes, alignment, address, live interval and aliased-to, plus the total, the
// lower bound, the no-reuse total and the winning strategy. JSON strings are
// escaped; symbolic values appear as expression strings. The SVG needs numbers:
// symbolic sizes and addresses are evaluated with `symbol_values` (a
// smelt::Error names any unbound symbol).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse {

struct InsertedBarrier {
  int64_t position = 0;
  std::string reason;  // e.g. "promoteReuse(T0): reuse by T4"
};

// What the caller knows beyond the plan itself.
struct ReportContext {
  std::vector<std::string> aliased_to;  // per buffer; empty entries (or vector) mean none
  std::vector<int64_t> barrier_positions;  // barriers that already existed
  std::vector<InsertedBarrier> inserted_barriers;
  std::map<std::string, int64_t> symbol_values;  // for the SVG of symbolic plans
};

std::string planReportText(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                           const ReportContext& context = {});
std::string planReportJson(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                           const ReportContext& context = {});
std::string planReportSvg(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                          const ReportContext& context = {});

// JSON string literal (with quotes) for arbitrary text.
std::string jsonQuote(const std::string& text);

}  // namespace smelt::alloc_reuse
