// The `allocator=stack` mode: nvFuser's stack-based shared-memory allocator,
// reproduced on abstract buffers exactly as docs/planning.md §5 describes.
//
// Guarantees (given buffers with closed outer intervals [first_write,
// last_read] and the positions of block-synchronizing expressions):
// - Positions are walked in order. A buffer joins the waiting set at its first
//   write (before the synchronization at that same position is considered).
// - At each synchronizing position: if any waiting buffer is dead (last read
//   <= here) the whole waiting set is pushed; if every waiting buffer is still
//   live nothing else happens at this sync. Then buffers are popped from the
//   top while the top's last read <= here. At the end, what still waits is
//   pushed.
// - A set is pushed sorted by last read descending, ties: the later-created
//   buffer first. The first buffer on an empty stack gets address 0; each next
//   one alignUp(top.address + top.bytes, its own alignment), an expression when
//   sizes are symbolic (stacked_on records the buffer below).
// - The plan never overlaps two buffers whose intervals are not separated by a
//   sync in [X.last_read, Y.first_write), i.e. it is valid for
//   conflictsFromBarriers(buffers, sync_positions).
#pragma once

#include <cstdint>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse {

// `sync_positions`: positions of block-synchronizing expressions (BlockSync,
// block reductions and broadcasts), any order; `end_position`: the kernel's
// last position, no earlier than every sync, first write and last read.
AddressPlan planStackAddresses(const std::vector<Buffer>& buffers,
                               std::vector<int64_t> sync_positions, int64_t end_position);

}  // namespace smelt::alloc_reuse
