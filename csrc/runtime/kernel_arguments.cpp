#include "runtime/kernel_arguments.h"

#include <algorithm>

#include "fusion/error.h"

namespace smelt {

namespace {

// The sizes then the strides, as `Index` values.
template <typename Index>
void appendExtents(std::vector<unsigned char>& bytes, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& strides) {
  for (const std::vector<int64_t>* values : {&sizes, &strides}) {
    for (int64_t value : *values) {
      const auto narrowed = static_cast<Index>(value);
      SMELT_CHECK(static_cast<int64_t>(narrowed) == value, "kernel argument: size or stride ", value,
                  " does not fit the kernel's ", sizeof(Index) * 8, "-bit index type");
      const auto* raw = reinterpret_cast<const unsigned char*>(&narrowed);
      bytes.insert(bytes.end(), raw, raw + sizeof(Index));
    }
  }
}

}  // namespace

void KernelArguments::addTensor(const void* data, const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& strides, DataType index_type) {
  SMELT_CHECK(sizes.size() == strides.size(), "kernel argument: tensor has ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  SMELT_CHECK(index_type == DataType::Int || index_type == DataType::Int32,
              "kernel argument: the index type is Int or Int32, not ", index_type);
  static_assert(sizeof(void*) == sizeof(int64_t), "the Tensor struct assumes 64-bit pointers");
  std::vector<unsigned char> bytes(sizeof(void*));
  std::memcpy(bytes.data(), &data, sizeof(void*));
  if (index_type == DataType::Int32) {
    appendExtents<int32_t>(bytes, sizes, strides);
  } else {
    appendExtents<int64_t>(bytes, sizes, strides);
  }
  addBytes(bytes.data(), bytes.size());
}

void KernelArguments::addBytes(const void* bytes, size_t size) {
  auto block = std::make_unique<int64_t[]>((size + sizeof(int64_t) - 1) / sizeof(int64_t));
  std::memcpy(block.get(), bytes, size);
  pointers_.push_back(block.get());
  storage_.push_back(std::move(block));
}

}  // namespace smelt
