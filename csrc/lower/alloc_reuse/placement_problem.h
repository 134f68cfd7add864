// Internal to the address planner (address_planner.cpp, exact_search.cpp):
// the constant-size placement problem, its connected components, and the
// section cliques whose stacked sizes bound every layout from below.
//
// Guarantees: a Problem holds the non-empty constant-size buffers of a plan
// (local indices 0..n-1, `global` maps back) and their conflicts; buffers of
// different components never conflict; every section is a clique of
// pairwise-conflicting buffers, so its lowest stack (and paddedSectionBound())
// is a true lower bound.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse::placement {

// Alignments are powers of two (validateBuffers), so is every granule taken
// from them: a mask, not a division, in the search's innermost loops.
inline int64_t alignUpConstant(int64_t value, int64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

constexpr size_t kMaxSearchBuffers = 64;  // buffer sets are bit masks

// Constant-size placement problem (local indices 0..n-1).
struct Problem {
  std::vector<size_t> global;  // local -> input index
  std::vector<int64_t> bytes, align, first_write, last_read;
  std::vector<std::vector<int>> neighbors;  // local conflicting indices
  int64_t lower_bound = 0;

  size_t size() const { return global.size(); }
};

Problem makeProblem(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                    int64_t lower_bound);

struct Layout {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};

// Connected components of the conflict graph, each sorted, in order of their
// smallest member. Buffers of different components never conflict, so each
// component can be laid out from offset 0 on its own.
std::vector<std::vector<int>> components(const Problem& p);

// The problem restricted to `members` (local indices of `p`), with `target`
// as its lower bound: nothing below it is worth finding.
Problem subProblem(const Problem& p, const std::vector<int>& members, int64_t target);

// Sections: cliques of pairwise-conflicting buffers, one per buffer: the
// buffer and its conflicting neighbours that start no later than it (first
// write, then index), largest first, each kept while it conflicts with every
// member kept so far. For interval conflicts these are the buffers live at
// each first write, which include every maximal clique: the sections' bounds
// are then the max-live cut at every program point. A section contained in
// another is dropped (its bound is never the larger one).
struct Sections {
  std::vector<uint64_t> members;
  // Every start is a multiple of the smallest alignment `granule` of the
  // section, so a member stacked under another occupies its size rounded up
  // to it; only the topmost member saves its rounding.
  std::vector<int64_t> granule, padded_bytes;
  // Per section, its members with their rounding, most rounding first: the
  // top of a stack of some members saves at most the most of theirs.
  std::vector<std::vector<std::pair<int, int64_t>>> by_rounding;
  // The lowest total of the whole section stacked from 0: exact where its
  // members' alignments differ and they are few, stackBound() otherwise.
  std::vector<int64_t> lowest_stack;
  std::vector<std::vector<int>> of_buffer;  // the sections holding each buffer

  size_t size() const { return members.size(); }
  int64_t padded(size_t s, int64_t bytes) const { return alignUpConstant(bytes, granule[s]); }
  // Lowest total of a stack of the members `open` (pairwise conflicting)
  // above `base`, of `open_padded` padded bytes.
  int64_t stackBound(size_t s, int64_t base, int64_t open_padded, int64_t slack) const {
    return alignUpConstant(base, granule[s]) + open_padded - slack;
  }
  // The most rounding the top of a stack of the members `open` can save.
  int64_t topSlack(size_t s, uint64_t open) const {
    for (const auto& [i, rounding] : by_rounding[s]) {
      if ((open >> i) & 1) return rounding;
    }
    return 0;
  }

  // Sections whose members' alignments differ (and are few): the exact
  // lowest stack of any subset of members above any base, which the padded
  // sum misses by up to an alignment per larger-aligned member.
  struct MixedStacks {
    std::vector<int> list;  // the members
    int64_t modulus = 0;    // their largest alignment
    int granule_shift = 0;  // log2 of the granule
    // rises[subset * residues + r]: lowest top less the base, for a base of
    // r granules modulo `modulus`.
    std::vector<int64_t> rises;
    size_t residues() const { return static_cast<size_t>(modulus >> granule_shift); }
  };
  std::vector<MixedStacks> mixed;  // per section; empty `list` where not kept

  // Lowest total of the members `open` stacked above `base` (a section
  // that keeps a table).
  int64_t mixedStackBound(size_t s, int64_t base, uint64_t open) const {
    const MixedStacks& m = mixed[s];
    size_t subset = 0;
    for (size_t k = 0; k < m.list.size(); ++k) subset |= ((open >> m.list[k]) & 1) << k;
    const int64_t start = alignUpConstant(base, granule[s]);
    const size_t residue = static_cast<size_t>((start & (m.modulus - 1)) >> m.granule_shift);
    return start + m.rises[subset * m.residues() + residue];
  }
};

// Bit j of adjacencyMasks(q)[i]: i and j conflict (at most kMaxSearchBuffers).
std::vector<uint64_t> adjacencyMasks(const Problem& q);
Sections sectionCliques(const Problem& q, const std::vector<uint64_t>& adjacency);
// The largest section stacked from 0: a lower bound that counts alignment
// padding, so above the max-live bound when sizes are not multiples of the
// alignments.
int64_t paddedSectionBound(const Sections& sections);

}  // namespace smelt::alloc_reuse::placement
