// Fusions of one scan for the scan kernel tests (serial and block scans):
// out = epilogue(scan(prologue(in), dim, combine)), `in` a concrete input.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ops.h"

namespace smelt::testing {

inline constexpr ScanCombine kScanCombines[] = {ScanCombine::Add, ScanCombine::Mul, ScanCombine::Max,
                                                ScanCombine::Min, ScanCombine::LogAddExp};

inline std::unique_ptr<Fusion> scanFusion(const std::vector<int64_t>& shape, int64_t dim,
                                          ScanCombine combine, DataType dtype = DataType::Float,
                                          TensorView* (*prologue)(TensorView*) = nullptr,
                                          TensorView* (*epilogue)(TensorView*) = nullptr) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* in = makeConcreteTensor(shape, dtype);
  fusion->addInput(in);
  TensorView* out = scan(prologue ? prologue(in) : in, dim, combine);
  fusion->addOutput(epilogue ? epilogue(out) : out);
  return fusion;
}

}  // namespace smelt::testing
