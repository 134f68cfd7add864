"""fd.execute from several Python threads at once: the fusion cache builds one
executor per fusion and device, the executor runs concurrently (the
extension releases the GIL), and every result is right."""
import threading

import torch

from smelt import FusionDefinition, fusion_cache

THREADS = 8
RUNS = 4


def define(scale):
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1])
        b = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.add(fd.ops.mul(fd.ops.mul(a, b), scale), fd.ops.exp(a)))
    fd.inline_all()
    return fd


def hammer(body):
    errors = []

    def run(t):
        try:
            body(t)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a thread hung"
    assert not errors, "\n".join(errors)


def test_one_definition_executed_from_many_threads():
    fusion_cache().clear()
    fd = define(0.25)

    def body(t):
        for run in range(RUNS):
            a, b = torch.randn(1 + (t + run) % 3, 8), torch.randn(1 + (t + run) % 3, 8)
            out, = fd.execute([a, b])
            torch.testing.assert_close(out, a * b * 0.25 + torch.exp(a))

    hammer(body)
    stats = fusion_cache().stats()
    assert stats.executors_built == 1
    assert stats.entries == 1


def test_threads_defining_the_same_fusion_share_its_executor():
    fusion_cache().clear()

    def body(t):
        fd = define(1.5 + t % 2)  # two distinct fusions, each defined by four threads
        for _ in range(RUNS):
            a, b = torch.randn(2, 8), torch.randn(2, 8)
            out, = fd.execute([a, b])
            torch.testing.assert_close(out, a * b * (1.5 + t % 2) + torch.exp(a))

    hammer(body)
    stats = fusion_cache().stats()
    assert stats.executors_built == 2
    assert stats.entries == 2
    assert stats.hits + stats.misses == THREADS * RUNS
