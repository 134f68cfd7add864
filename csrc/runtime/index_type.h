// The index type of a launch: 32-bit index arithmetic when every extent and
// offset the kernel can compute fits in int32, 64-bit otherwise. Chosen per
// launch from the sizes and strides of its tensors (as nvFuser does); the two
// variants of a kernel are compiled and cached separately
// (CodegenOptions::index_type, FusionExecutor).
//
// What the kernel computes: loop indices below their extents (a merged
// extent is at most a tensor's element count), split extents rounded up to
// their factor (by less than the factor: a product of block sizes, unroll and
// vector widths, far below 2^30), and element offsets, sums of index times
// stride. So 32-bit indices are safe when, for every tensor, the
// element count and the largest offset sum_d (size_d - 1) * |stride_d| are at
// most kMaxNarrowIndex = 2^30, half of int32's range (the other half absorbs
// the rounding), and so is every integer scalar that extents are built from.
// The simulator checks the claim on every run of a 32-bit variant
// (IndexCode::requireInt32).
#pragma once

#include <cstdint>
#include <vector>

#include "fusion/types.h"

namespace smelt {

constexpr int64_t kMaxNarrowIndex = int64_t{1} << 30;

// Sizes and strides (in elements) of one tensor a launch reads or writes.
struct TensorExtents {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// DataType::Int32 when 32-bit index arithmetic is safe for a launch on
// `tensors` with integer scalar inputs `scalars` (see above), else
// DataType::Int. Throws smelt::Error when a tensor's sizes and strides differ
// in rank or a size is negative.
DataType chooseIndexType(const std::vector<TensorExtents>& tensors,
                         const std::vector<int64_t>& scalars = {});

// "int32" or "int64", for cache keys and reports.
const char* indexTypeName(DataType index_type);

}  // namespace smelt
