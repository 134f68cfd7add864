// Uses the installed smelt headers and library from outside the source tree.
// Exits 0 iff everything below behaves; prints what went wrong otherwise.
#include <fusion/error.h>
#include <fusion/int_expr.h>

#include <cstdint>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "FAILED: " << what << "\n";
    ++failures;
  }
}
}  // namespace

int main() {
  using smelt::IntExpr;

  // A symbolic padded extent: ceilDiv(n, 4) * 4.
  const IntExpr n = IntExpr::symbol("n");
  const IntExpr padded = ceilDiv(n, 4) * 4;
  expect(!padded.isConstant(), "ceilDiv(n, 4) * 4 is symbolic");

  std::ostringstream text;
  text << padded;
  std::cout << "padded extent: " << text.str() << "\n";
  expect(text.str().find('n') != std::string::npos, "printed expression mentions n: " + text.str());
  expect(text.str() == padded.toString(), "operator<< matches toString()");

  const int64_t value = padded.evaluate({{"n", 10}});
  std::cout << "with n = 10: " << value << "\n";
  expect(value == 12, "ceilDiv(10, 4) * 4 == 12, got " + std::to_string(value));

  // Constants fold on construction.
  expect((IntExpr(3) * 4).constant() == 12, "3 * 4 folds to 12");

  // An unbound symbol is reported as a smelt::Error naming it.
  const IntExpr unbound = padded + IntExpr::symbol("block_size");
  bool threw = false;
  try {
    (void)unbound.evaluate({{"n", 10}});
  } catch (const smelt::Error& e) {
    threw = true;
    std::cout << "unbound symbol: " << e.what() << "\n";
    expect(std::string(e.what()).find("block_size") != std::string::npos,
           "error message names the unbound symbol");
  } catch (const std::exception& e) {
    expect(false, std::string("expected smelt::Error, got another exception: ") + e.what());
  }
  expect(threw, "evaluating with an unbound symbol throws smelt::Error");

  // smelt::Error is a std::exception.
  try {
    throw smelt::Error("probe");
  } catch (const std::exception& e) {
    expect(std::string(e.what()) == "probe", "smelt::Error caught as std::exception");
  }

  if (failures) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "external consumer OK\n";
  return 0;
}
