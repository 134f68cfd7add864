#include "fusion/dump.h"

#include <cstdlib>
#include <sstream>

namespace smelt {

bool dumpEnabled(const std::string& what) {
  const char* env = std::getenv("SMELT_DUMP");
  if (env == nullptr) return false;
  std::stringstream items(env);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == what) return true;
  }
  return false;
}

}  // namespace smelt
