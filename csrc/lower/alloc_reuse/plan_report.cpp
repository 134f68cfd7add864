#include "lower/alloc_reuse/plan_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "fusion/error.h"

namespace smelt::alloc_reuse {

namespace {

std::string aliasOf(const ReportContext& context, size_t i) {
  return i < context.aliased_to.size() ? context.aliased_to[i] : std::string();
}

std::string interval(const Buffer& b) {
  return "[" + std::to_string(b.first_write) + ", " + std::to_string(b.last_read) + "]";
}

std::string planStatus(const AddressPlan& plan) {
  const std::string status = planStatusName(plan);
  if (status == "bound reached") return "optimal: lower bound reached";
  if (status == "optimal") return "optimal: proved by exhaustive search";
  return status == "symbolic" ? "symbolic layout" : "heuristic";
}

// Left-aligned columns separated by two spaces.
std::string formatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::ostringstream os;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    os << "  " << line << "\n";
  }
  return os.str();
}

// One row per buffer, '#' over its live interval; the header marks barriers
// ('|' existing, '!' inserted).
std::string asciiTimeline(const std::vector<Buffer>& buffers, const ReportContext& context) {
  if (buffers.empty()) return "";
  int64_t lo = buffers.front().first_write;
  int64_t hi = buffers.front().last_read;
  for (const Buffer& b : buffers) {
    lo = std::min(lo, b.first_write);
    hi = std::max(hi, b.last_read);
  }
  constexpr int64_t kMaxColumns = 64;
  const int64_t span = hi - lo + 1;
  const int64_t columns = std::min(span, kMaxColumns);
  auto column = [&](int64_t pos) {
    return span <= 1 ? int64_t{0} : (pos - lo) * (columns - 1) / (span - 1);
  };
  size_t name_width = 0;
  for (const Buffer& b : buffers) name_width = std::max(name_width, b.name.size());

  std::string marks(static_cast<size_t>(columns), ' ');
  auto mark = [&](int64_t pos, char c) {
    if (pos >= lo && pos <= hi) marks[static_cast<size_t>(column(pos))] = c;
  };
  for (int64_t pos : context.barrier_positions) mark(pos, '|');
  for (const InsertedBarrier& b : context.inserted_barriers) mark(b.position, '!');

  std::ostringstream os;
  os << "timeline: positions " << lo << ".." << hi
     << " ('|' barrier, '!' inserted barrier)\n";
  os << "  " << std::string(name_width, ' ') << "  " << marks << "\n";
  for (const Buffer& b : buffers) {
    std::string row(static_cast<size_t>(columns), '.');
    for (int64_t c = column(b.first_write); c <= column(b.last_read); ++c) {
      row[static_cast<size_t>(c)] = '#';
    }
    os << "  " << b.name << std::string(name_width - b.name.size(), ' ') << "  " << row << "\n";
  }
  return os.str();
}

// A number when constant, else a quoted expression.
std::string jsonValue(const IntExpr& e) {
  if (auto value = e.constant()) return std::to_string(*value);
  return jsonQuote(e.toString());
}

std::string xmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string jsonQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string planReportText(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                           const ReportContext& context) {
  std::ostringstream os;
  os << "shared-memory plan: " << plan.strategy << " (" << planStatus(plan) << ")\n";
  std::vector<std::vector<std::string>> rows = {
      {"name", "dtype", "bytes", "align", "address", "live", "aliased-to"}};
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    std::string alias = aliasOf(context, i);
    rows.push_back({b.name, b.dtype, b.bytes.toString(), std::to_string(b.alignment),
                    plan.addresses.at(i).toString(), interval(b), alias.empty() ? "-" : alias});
  }
  os << formatTable(rows);
  os << "total " << plan.total_bytes << " B, lower bound " << plan.lower_bound_bytes
     << " B, no reuse " << plan.no_reuse_bytes << " B\n";
  if (!context.barrier_positions.empty()) {
    os << "barriers at:";
    for (int64_t pos : context.barrier_positions) os << " " << pos;
    os << "\n";
  }
  for (const InsertedBarrier& b : context.inserted_barriers) {
    os << "inserted barrier at " << b.position << ": " << b.reason << "\n";
  }
  if (!plan.attempts.empty()) {
    os << "strategies tried:";
    for (const PlanAttempt& a : plan.attempts) os << " " << a.strategy << "=" << a.total_bytes;
    os << "\n";
  }
  for (const std::string& note : plan.notes) os << "note: " << note << "\n";
  os << asciiTimeline(buffers, context);
  return os.str();
}

std::string planReportJson(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                           const ReportContext& context) {
  std::ostringstream os;
  os << "{\n  \"strategy\": " << jsonQuote(plan.strategy) << ",\n  \"buffers\": [";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    std::string alias = aliasOf(context, i);
    os << (i ? ",\n" : "\n") << "    {\"name\": " << jsonQuote(b.name)
       << ", \"dtype\": " << jsonQuote(b.dtype) << ", \"bytes\": " << jsonValue(b.bytes)
       << ", \"alignment\": " << b.alignment << ", \"address\": " << jsonValue(plan.addresses.at(i))
       << ", \"first_write\": " << b.first_write << ", \"last_read\": " << b.last_read
       << ", \"creation_order\": " << b.creation_order
       << ", \"aliased_to\": " << (alias.empty() ? "null" : jsonQuote(alias)) << "}";
  }
  os << "\n  ],\n  \"total_bytes\": " << jsonValue(plan.total_bytes)
     << ",\n  \"lower_bound_bytes\": " << plan.lower_bound_bytes
     << ",\n  \"no_reuse_bytes\": " << jsonValue(plan.no_reuse_bytes)
     << ",\n  \"lower_bound_reached\": " << (plan.lower_bound_reached ? "true" : "false")
     << ",\n  \"optimal\": " << (plan.optimal ? "true" : "false")
     << ",\n  \"status\": " << jsonQuote(planStatusName(plan))
     << ",\n  \"symbolic\": " << (plan.symbolic ? "true" : "false") << ",\n  \"barriers\": [";
  for (size_t k = 0; k < context.barrier_positions.size(); ++k) {
    os << (k ? ", " : "") << context.barrier_positions[k];
  }
  os << "],\n  \"inserted_barriers\": [";
  for (size_t k = 0; k < context.inserted_barriers.size(); ++k) {
    os << (k ? ", " : "") << "{\"position\": " << context.inserted_barriers[k].position
       << ", \"reason\": " << jsonQuote(context.inserted_barriers[k].reason) << "}";
  }
  os << "],\n  \"attempts\": [";
  for (size_t k = 0; k < plan.attempts.size(); ++k) {
    os << (k ? ", " : "") << "{\"strategy\": " << jsonQuote(plan.attempts[k].strategy)
       << ", \"total_bytes\": " << plan.attempts[k].total_bytes << "}";
  }
  os << "],\n  \"notes\": [";
  for (size_t k = 0; k < plan.notes.size(); ++k) {
    os << (k ? ", " : "") << jsonQuote(plan.notes[k]);
  }
  os << "]\n}\n";
  return os.str();
}

std::string planReportSvg(const std::vector<Buffer>& buffers, const AddressPlan& plan,
                          const ReportContext& context) {
  const auto& values = context.symbol_values;
  int64_t lo = 0;
  int64_t hi = 1;
  if (!buffers.empty()) {
    lo = buffers.front().first_write;
    hi = buffers.front().last_read;
  }
  for (const Buffer& b : buffers) {
    lo = std::min(lo, b.first_write);
    hi = std::max(hi, b.last_read);
  }
  const int64_t total = std::max<int64_t>(plan.total_bytes.evaluate(values), 1);
  constexpr double kLeft = 70, kTop = 30, kWidth = 720, kHeight = 360;
  const double x_scale = kWidth / static_cast<double>(hi - lo + 1);
  const double y_scale = kHeight / static_cast<double>(total);
  auto x_of = [&](double pos) { return kLeft + (pos - static_cast<double>(lo)) * x_scale; };
  auto y_of = [&](double addr) { return kTop + kHeight - addr * y_scale; };

  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLeft + kWidth + 20
     << "\" height=\"" << kTop + kHeight + 40 << "\" font-family=\"monospace\" font-size=\"11\">\n";
  os << "  <text x=\"" << kLeft << "\" y=\"18\">" << xmlEscape(plan.strategy) << ": total "
     << total << " B, lower bound " << plan.lower_bound_bytes << " B</text>\n";
  os << "  <rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth << "\" height=\""
     << kHeight << "\" fill=\"none\" stroke=\"black\"/>\n";
  os << "  <text x=\"4\" y=\"" << y_of(0) << "\">0</text>\n";
  os << "  <text x=\"4\" y=\"" << y_of(static_cast<double>(total)) + 10 << "\">" << total
     << "</text>\n";
  os << "  <text x=\"" << kLeft << "\" y=\"" << kTop + kHeight + 16 << "\">position " << lo
     << "</text>\n";
  os << "  <text x=\"" << kLeft + kWidth - 90 << "\" y=\"" << kTop + kHeight + 16
     << "\">position " << hi << "</text>\n";
  static const char* kFills[] = {"#8dd3c7", "#bebada", "#fb8072", "#80b1d3",
                                 "#fdb462", "#b3de69", "#fccde5", "#d9d9d9"};
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const double addr = static_cast<double>(plan.addresses.at(i).evaluate(values));
    const double bytes = static_cast<double>(b.bytes.evaluate(values));
    const double x0 = x_of(static_cast<double>(b.first_write));
    const double x1 = x_of(static_cast<double>(b.last_read + 1));
    const double y0 = y_of(addr + bytes);
    const double y1 = y_of(addr);
    os << "  <rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << x1 - x0 << "\" height=\""
       << y1 - y0 << "\" fill=\"" << kFills[i % 8] << "\" stroke=\"black\">"
       << "<title>" << xmlEscape(b.name) << ": " << bytes << " B at " << addr << ", live "
       << interval(b) << "</title></rect>\n";
    os << "  <text x=\"" << x0 + 2 << "\" y=\"" << (y0 + y1) / 2 + 4 << "\">"
       << xmlEscape(b.name) << "</text>\n";
  }
  auto barrier = [&](int64_t pos, const char* color, const std::string& title) {
    const double x = x_of(static_cast<double>(pos) + 0.5);
    os << "  <line x1=\"" << x << "\" y1=\"" << kTop << "\" x2=\"" << x << "\" y2=\""
       << kTop + kHeight << "\" stroke=\"" << color << "\" stroke-width=\"2\""
       << " stroke-dasharray=\"4 2\"><title>" << xmlEscape(title) << "</title></line>\n";
  };
  for (int64_t pos : context.barrier_positions) {
    barrier(pos, "#555555", "barrier at " + std::to_string(pos));
  }
  for (const InsertedBarrier& b : context.inserted_barriers) {
    barrier(b.position, "#d62728",
            "inserted barrier at " + std::to_string(b.position) + ": " + b.reason);
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace smelt::alloc_reuse
