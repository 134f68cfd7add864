// Packs kernel parameters the way generateCuda declares them, for
// cuLaunchKernel: one pointer per parameter, to bytes laid out as the
// parameter's type. A tensor is smelt::Tensor<T, N> = { T* data;
// index_t size[N]; index_t stride[N]; } (strides in elements; index_t is
// int64_t or int, the kernel variant's CodegenOptions::index_type), a scalar
// its CUDA type.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "fusion/types.h"

namespace smelt {

class KernelArguments {
 public:
  // `index_type` Int32: sizes and strides as int32 (each must fit; the
  // launch's index type says they do, so one that does not is an error).
  void addTensor(const void* data, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& strides, DataType index_type = DataType::Int);

  template <typename T>
  void addScalar(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel scalars are plain values");
    addBytes(&value, sizeof(T));
  }

  // One pointer per parameter, in the order added; valid while this lives.
  const std::vector<void*>& pointers() const { return pointers_; }
  size_t size() const { return pointers_.size(); }

 private:
  void addBytes(const void* bytes, size_t size);
  // Each parameter's bytes in its own 8-byte-aligned block, so its address
  // stays put as more are added.
  std::vector<std::unique_ptr<int64_t[]>> storage_;
  std::vector<void*> pointers_;
};

}  // namespace smelt
