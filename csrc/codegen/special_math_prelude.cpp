#include "codegen/special_math_prelude.h"

#include <map>
#include <sstream>
#include <vector>

#include "codegen/special_math_source.h"
#include "fusion/error.h"

namespace smelt::codegen {
namespace {

struct Section {
  std::vector<std::string> deps;
  std::string text;
  size_t order = 0;
};

// special_math.h's sections: `//@ name: deps` starts one, `//@ end` ends the last.
const std::map<std::string, Section>& sections() {
  static const std::map<std::string, Section> parsed = [] {
    std::map<std::string, Section> result;
    std::istringstream in(kSpecialMathSource);
    std::string line;
    Section* current = nullptr;
    while (std::getline(in, line)) {
      if (line.rfind("//@ ", 0) != 0) {
        if (current != nullptr) current->text += line + "\n";
        continue;
      }
      const std::string header = line.substr(4);
      if (header == "end") {
        current = nullptr;
        continue;
      }
      const size_t colon = header.find(':');
      SMELT_INTERNAL_CHECK(colon != std::string::npos, "special_math.h: section line '", line,
                           "' has no ':'");
      const std::string name = header.substr(0, colon);
      SMELT_INTERNAL_CHECK(result.count(name) == 0, "special_math.h: section ", name, " twice");
      current = &result[name];
      current->order = result.size();
      std::istringstream deps(header.substr(colon + 1));
      for (std::string dep; deps >> dep;) {
        SMELT_INTERNAL_CHECK(result.count(dep) == 1, "special_math.h: section ", name,
                             " needs ", dep, ", which is not defined before it");
        current->deps.push_back(dep);
      }
    }
    return result;
  }();
  return parsed;
}

void require(const std::string& name, std::map<size_t, const Section*>& needed) {
  const auto& all = sections();
  const auto it = all.find(name);
  SMELT_CHECK(it != all.end(), "codegen: no special function ", name, " in special_math.h");
  if (!needed.emplace(it->second.order, &it->second).second) return;
  for (const std::string& dep : it->second.deps) require(dep, needed);
}

}  // namespace

std::string specialMathPrelude(const std::set<std::string>& functions) {
  if (functions.empty()) return "";
  std::map<size_t, const Section*> needed;  // by position in the file: definitions before uses
  for (const std::string& name : functions) require(name, needed);
  std::string out = "\n// torch's special functions (special_math.h)\nnamespace smelt {\nnamespace special {\n";
  for (const auto& [order, section] : needed) out += section->text;
  return out + "}  // namespace special\n}  // namespace smelt\n";
}

}  // namespace smelt::codegen
