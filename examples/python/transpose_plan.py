"""An example for `smelt plan`: a 2-D tile transposed through shared memory.

    smelt plan examples/python/transpose_plan.py --svg plans/

Every FusionDefinition left at module level is reported.
"""
from smelt import FusionDefinition, MemoryType, ParallelType

with FusionDefinition() as transpose:
    x = transpose.define_tensor([32, 32])
    y = transpose.ops.set(transpose.ops.set(x))
    transpose.add_output(y)
# The tile is written row by row and read column by column: one RAW barrier.
tile = x.cache_after().set_memory_type(MemoryType.Shared).set_name("tile")
tile.axis(0).parallelize(ParallelType.TIDy)
tile.axis(1).parallelize(ParallelType.TIDx)
y.reorder({0: 1, 1: 0})
y.axis(0).parallelize(ParallelType.TIDy)
y.axis(1).parallelize(ParallelType.TIDx)
