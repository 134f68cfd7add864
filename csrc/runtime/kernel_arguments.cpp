#include "runtime/kernel_arguments.h"

#include <algorithm>

#include "fusion/error.h"

namespace smelt {

void KernelArguments::addTensor(const void* data, const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& strides) {
  SMELT_CHECK(sizes.size() == strides.size(), "kernel argument: tensor has ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  static_assert(sizeof(void*) == sizeof(int64_t), "the Tensor struct assumes 64-bit pointers");
  std::vector<int64_t> words(1 + 2 * sizes.size());
  std::memcpy(words.data(), &data, sizeof(void*));
  std::copy(sizes.begin(), sizes.end(), words.begin() + 1);
  std::copy(strides.begin(), strides.end(), words.begin() + 1 + sizes.size());
  addBytes(words.data(), words.size() * sizeof(int64_t));
}

void KernelArguments::addBytes(const void* bytes, size_t size) {
  auto block = std::make_unique<int64_t[]>((size + sizeof(int64_t) - 1) / sizeof(int64_t));
  std::memcpy(block.get(), bytes, size);
  pointers_.push_back(block.get());
  storage_.push_back(std::move(block));
}

}  // namespace smelt
