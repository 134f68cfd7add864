// Small builders shared by the alloc_reuse tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse::testing {

inline Buffer makeBuffer(const std::string& name, IntExpr bytes, int64_t first_write,
                         int64_t last_read, int64_t creation_order, int64_t alignment = 16) {
  Buffer b;
  b.name = name;
  b.dtype = "float";
  b.bytes = std::move(bytes);
  b.alignment = alignment;
  b.first_write = first_write;
  b.last_read = last_read;
  b.creation_order = creation_order;
  return b;
}

inline std::vector<int64_t> constantAddresses(const AddressPlan& plan) {
  std::vector<int64_t> result;
  for (const IntExpr& a : plan.addresses) result.push_back(a.constant().value_or(-1));
  return result;
}

inline int64_t constantTotal(const AddressPlan& plan) {
  return plan.total_bytes.constant().value_or(-1);
}

}  // namespace smelt::alloc_reuse::testing
