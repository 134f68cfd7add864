// smelt::Error and the SMELT_CHECK family: every failure reachable from the
// public API is reported as an exception carrying a readable message that
// names the tensor, axis or op involved. Nothing in smelt calls assert/abort.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace smelt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
inline void appendAll(std::ostringstream&) {}
template <typename T, typename... Rest>
void appendAll(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  appendAll(os, rest...);
}
}  // namespace detail

// Builds a message from any streamable pieces: errorMessage("tensor ", tv, " axis ", i).
template <typename... Args>
std::string errorMessage(const Args&... args) {
  std::ostringstream os;
  detail::appendAll(os, args...);
  return os.str();
}

}  // namespace smelt

// Throws smelt::Error with the streamed message when `cond` is false.
#define SMELT_CHECK(cond, ...)                                 \
  do {                                                         \
    if (!(cond)) {                                             \
      throw ::smelt::Error(::smelt::errorMessage(__VA_ARGS__)); \
    }                                                          \
  } while (false)

// Internal invariant: a failure here is a bug in smelt, still reported as an
// exception (never an abort) so a user program can recover and report it.
#define SMELT_INTERNAL_CHECK(cond, ...)                                       \
  do {                                                                        \
    if (!(cond)) {                                                            \
      throw ::smelt::Error(::smelt::errorMessage(                             \
          "smelt internal error at ", __FILE__, ":", __LINE__, ": ", #cond,   \
          ". ", ##__VA_ARGS__));                                              \
    }                                                                         \
  } while (false)
