#include "runtime/nvrtc_batch.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>

#include "fusion/dump.h"
#include "fusion/error.h"

namespace smelt {
namespace {

// The text that decides whether two requests may share a program.
std::string optionsText(const NvrtcOptions& options) {
  std::string text = std::to_string(options.arch) + (options.arch_specific ? "a" : "");
  for (const std::string& option : options.extra_options) text += " " + option;
  return text;
}

}  // namespace

std::string batchSource(const std::vector<NvrtcRequest>& requests) {
  // #include lines go before every namespace: a header included inside one
  // would declare its types there.
  std::vector<std::string> includes;
  std::ostringstream bodies;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string space = "smelt_batch_" + std::to_string(i);
    bodies << "namespace " << space << " {\n";
    std::istringstream lines(requests[i].source);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("#include", 0) == 0) {
        if (std::find(includes.begin(), includes.end(), line) == includes.end()) includes.push_back(line);
        continue;
      }
      bodies << line << "\n";
    }
    bodies << "}  // namespace " << space << "\n";
  }
  std::ostringstream source;
  source << "// smelt: " << requests.size() << " kernels in one program.\n";
  for (const std::string& include : includes) source << include << "\n";
  source << bodies.str();
  return source.str();
}

std::vector<CompiledKernel> compileCudaBatch(const std::vector<NvrtcRequest>& requests) {
  SMELT_CHECK(!requests.empty(), "compileCudaBatch: no kernels to compile");
  std::unordered_set<std::string> names;
  for (const NvrtcRequest& request : requests) {
    SMELT_CHECK(names.insert(request.kernel_name).second, "compileCudaBatch: kernel ",
                request.kernel_name, " is asked for twice");
    SMELT_CHECK(optionsText(request.options) == optionsText(requests.front().options),
                "compileCudaBatch: kernel ", request.kernel_name, " has other NVRTC options than ",
                requests.front().kernel_name);
  }
  if (dumpEnabled("cuda")) {
    for (const NvrtcRequest& r : requests) std::cout << "=== CUDA " << r.kernel_name << " ===\n" << r.source;
  }
  const NvrtcOutput output = compileProgram(batchSource(requests), requests.front().kernel_name + "_batch",
                                            requests.front().options);
  std::vector<CompiledKernel> compiled(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    CompiledKernel& kernel = compiled[i];
    kernel.kernel_name = requests[i].kernel_name;
    kernel.arch = requests[i].options.arch;
    kernel.cubin = output.cubin;
    kernel.log = output.log;
    kernel.compile_ms = output.compile_ms / static_cast<double>(requests.size());
    kernel.ptxas = parsePtxasInfo(kernel.log, kernel.kernel_name);
    dumpPtxasInfo(kernel);
  }
  return compiled;
}

std::vector<std::vector<size_t>> planBatches(const std::vector<NvrtcRequest>& requests, int batches) {
  SMELT_CHECK(batches >= 1, "planBatches: ", batches, " batches");
  // Requests by options, in order of first appearance; repeated names left out.
  std::vector<std::string> option_order;
  std::vector<std::vector<size_t>> by_options;
  std::set<std::string> names;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!names.insert(requests[i].kernel_name).second) continue;
    const std::string text = optionsText(requests[i].options);
    const auto it = std::find(option_order.begin(), option_order.end(), text);
    if (it == option_order.end()) {
      option_order.push_back(text);
      by_options.push_back({i});
    } else {
      by_options[it - option_order.begin()].push_back(i);
    }
  }
  size_t total = 0;
  for (const auto& group : by_options) total += group.size();
  // Each options group gets batches in proportion to its size (at least one),
  // then is cut into that many runs of near-equal length.
  std::vector<std::vector<size_t>> plan;
  for (const std::vector<size_t>& group : by_options) {
    const size_t share =
        std::max<size_t>(1, group.size() * static_cast<size_t>(batches) / std::max<size_t>(total, 1));
    const size_t parts = std::min(share, group.size());
    for (size_t p = 0, begin = 0; p < parts; ++p) {
      const size_t end = begin + (group.size() - begin) / (parts - p);
      plan.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(begin),
                        group.begin() + static_cast<std::ptrdiff_t>(end));
      begin = end;
    }
  }
  return plan;
}

std::vector<std::shared_future<void>> compileInBatches(
    CompilePool& pool, const std::vector<NvrtcRequest>& requests,
    const std::function<void(size_t, const PrecompiledKernel*)>& finish) {
  std::vector<std::shared_future<void>> done(requests.size());
  if (requests.empty()) return done;
  // The requests repeating each first request's name (planBatches leaves them out).
  std::map<std::string, size_t> first;
  std::vector<std::vector<size_t>> repeats(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto [it, fresh] = first.emplace(requests[i].kernel_name, i);
    if (!fresh) repeats[it->second].push_back(i);
  }
  for (const std::vector<size_t>& batch : planBatches(requests, std::max(1, pool.threads()))) {
    // Per member of the batch: its request, then those repeating its name.
    std::vector<std::vector<size_t>> finished;
    // One promise per request: a finish that throws fails its kernel alone.
    auto promises = std::make_shared<std::map<size_t, std::promise<void>>>();
    std::vector<NvrtcRequest> members;
    for (size_t i : batch) {
      finished.push_back({i});
      finished.back().insert(finished.back().end(), repeats[i].begin(), repeats[i].end());
      for (size_t r : finished.back()) done[r] = (*promises)[r].get_future().share();
      members.push_back(requests[i]);
    }
    pool.submit([finish, finished, promises, members = std::move(members)]() mutable {
      std::vector<PrecompiledKernel> precompiled;
      if (members.size() > 1) {
        try {
          std::vector<CompiledKernel> compiled = compileCudaBatch(members);
          for (size_t j = 0; j < members.size(); ++j) {
            precompiled.push_back(PrecompiledKernel{std::move(members[j]), std::move(compiled[j])});
          }
        } catch (...) {
          precompiled.clear();  // each kernel compiles alone and reports its own error
        }
      }
      for (size_t j = 0; j < finished.size(); ++j) {
        for (size_t i : finished[j]) {
          try {
            finish(i, precompiled.empty() ? nullptr : &precompiled[j]);
            (*promises)[i].set_value();
          } catch (...) {
            (*promises)[i].set_exception(std::current_exception());
          }
        }
      }
    });
  }
  return done;
}

}  // namespace smelt
