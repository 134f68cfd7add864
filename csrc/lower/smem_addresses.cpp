// Pass smem_addresses: gives every Shared buffer a byte offset in the kernel's
// dynamic shared-memory array. For now each buffer gets its own region, in
// allocation order and aligned (no reuse); csrc/lower/alloc_reuse/ plans
// reuse. Guarantees every Shared buffer has an aligned address and the total
// fits the per-block limit (otherwise a smelt::Error listing the buffers).
#include <sstream>

#include "fusion/error.h"
#include "lower/passes.h"

namespace smelt {

void assignSharedAddresses(LoweringContext& ctx) {
  IntExpr end = 0;
  for (const auto& buffer : ctx.kernel.buffers) {
    if (buffer->memory != MemoryType::Shared) continue;
    buffer->address = alignUp(end, buffer->alignment);
    end = *buffer->address + buffer->bytes();
  }
  auto total = end.constant();
  if (total && *total > ctx.options.max_shared_memory_bytes) {
    std::ostringstream os;
    os << "shared memory plan needs " << *total << " B per block, over the limit of "
       << ctx.options.max_shared_memory_bytes << " B:";
    for (const kir::Buffer* b : ctx.kernel.sharedBuffers()) {
      os << " " << b->name << " (" << b->bytes() << " B @ " << *b->address << ")";
    }
    throw Error(os.str());
  }
}

}  // namespace smelt
