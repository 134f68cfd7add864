#include "runtime/index_type.h"

#include <cstdlib>

#include "fusion/error.h"

namespace smelt {

namespace {

// Element count and largest offset of one tensor, saturating at `limit` + 1
// so that no product overflows int64 on the way.
bool fitsNarrowIndex(const TensorExtents& t, int64_t limit) {
  SMELT_CHECK(t.sizes.size() == t.strides.size(), "index type: a tensor has ", t.sizes.size(),
              " sizes but ", t.strides.size(), " strides");
  int64_t elements = 1;
  int64_t offset = 0;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    const int64_t size = t.sizes[d];
    SMELT_CHECK(size >= 0, "index type: negative size ", size, " in dimension ", d);
    if (size == 0) return true;  // an empty tensor launches nothing
    const int64_t stride = std::llabs(t.strides[d]);
    if (size > limit || stride > limit) return false;
    elements *= size;  // both factors <= 2^30: no overflow
    offset += (size - 1) * stride;
    if (elements > limit || offset > limit) return false;
  }
  return true;
}

}  // namespace

DataType chooseIndexType(const std::vector<TensorExtents>& tensors, const std::vector<int64_t>& scalars) {
  for (int64_t scalar : scalars) {
    if (scalar > kMaxNarrowIndex || scalar < -kMaxNarrowIndex) return DataType::Int;
  }
  for (const TensorExtents& t : tensors) {
    if (!fitsNarrowIndex(t, kMaxNarrowIndex)) return DataType::Int;
  }
  return DataType::Int32;
}

const char* indexTypeName(DataType index_type) {
  SMELT_CHECK(index_type == DataType::Int || index_type == DataType::Int32,
              "the index type is Int or Int32, not ", index_type);
  return index_type == DataType::Int32 ? "int32" : "int64";
}

}  // namespace smelt
