// Statement families of the kernel IR that its consumers (codegen, the
// simulator's program, printing) dispatch as a whole: each family's case
// labels are listed here once, so a new member is added in one place. A
// switch using them still names every StmtKind, so the compiler checks that
// it covers them all.
#pragma once

#include "lower/kir.h"

// The sm_80 tensor-core pipeline: cp.async and its groups, ldmatrix, mma.sync.
#define SMELT_KIR_TENSOR_CORE_CASES            \
  case ::smelt::kir::StmtKind::CpAsync:        \
  case ::smelt::kir::StmtKind::CpAsyncCommit:  \
  case ::smelt::kir::StmtKind::CpAsyncWait:    \
  case ::smelt::kir::StmtKind::LdMatrix:       \
  case ::smelt::kir::StmtKind::Mma

// The sm_90 operations: mbarriers, TMA loads, the async-proxy fence, wgmma.
#define SMELT_KIR_HOPPER_CASES                  \
  case ::smelt::kir::StmtKind::MbarrierInit:    \
  case ::smelt::kir::StmtKind::MbarrierArrive:  \
  case ::smelt::kir::StmtKind::MbarrierWait:    \
  case ::smelt::kir::StmtKind::TmaLoad:         \
  case ::smelt::kir::StmtKind::FenceProxyAsync: \
  case ::smelt::kir::StmtKind::Wgmma:           \
  case ::smelt::kir::StmtKind::WgmmaFence:      \
  case ::smelt::kir::StmtKind::WgmmaCommit:     \
  case ::smelt::kir::StmtKind::WgmmaWait

namespace smelt::kir {

inline bool isTensorCoreStmt(StmtKind kind) {
  switch (kind) {
    SMELT_KIR_TENSOR_CORE_CASES: return true;
    default: return false;
  }
}

inline bool isHopperStmt(StmtKind kind) {
  switch (kind) {
    SMELT_KIR_HOPPER_CASES: return true;
    default: return false;
  }
}

}  // namespace smelt::kir
