"""The fusion cache: the same definition again reuses its executors; any
difference in the record (ops, constants, schedule) is a different fusion."""
import torch

from smelt import FusionDefinition, ParallelType, fusion_cache


def scaled_exp(scale=2.0, threads=32):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = fd.ops.mul(fd.ops.exp(x), scale)
        fd.add_output(y)
    y.split(0, threads).axis(1).parallelize(ParallelType.TIDx)
    y.propagate_schedule()
    fd.inline_all()
    return fd


def test_same_definition_reuses_the_executor():
    fusion_cache().clear()
    x = torch.randn(40)
    first = scaled_exp().execute([x])[0]
    second = scaled_exp().execute([x])[0]
    third = scaled_exp().execute([torch.randn(70)])[0]  # new size, same fusion
    stats = fusion_cache().stats()
    assert (stats.entries, stats.misses, stats.hits, stats.executors_built) == (1, 1, 2, 1)
    torch.testing.assert_close(first, second)
    assert third.shape == (70,)


def test_records_are_the_key():
    fusion_cache().clear()
    assert scaled_exp(2.0).records == scaled_exp(2.0).records
    assert scaled_exp(2.0).records != scaled_exp(3.0).records
    assert scaled_exp(2.0).records != scaled_exp(2.0, threads=64).records
    x = torch.randn(50)
    for scale, threads in [(2.0, 32), (3.0, 32), (2.0, 64)]:
        fd = scaled_exp(scale, threads)
        torch.testing.assert_close(fd.execute([x])[0], x.exp() * scale)
        assert fd.last_kernels()[0].block == (threads, 1, 1)
    assert fusion_cache().stats().entries == 3


def test_a_definition_keeps_its_key_until_its_record_grows():
    """execute() looks the fusion up by a key hashed once per record state,
    not by hashing every record on every call; scheduling after a run makes
    a new key (a different fusion)."""
    fusion_cache().clear()
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = fd.ops.exp(x)
        fd.add_output(y)
    key = fd.cache_key
    fd.execute([torch.randn(8)])
    fd.execute([torch.randn(8)])
    assert fd.cache_key is key
    assert fusion_cache().stats().hits == 1
    y.split(0, 4).axis(1).parallelize(ParallelType.TIDx)
    assert fd.cache_key is not key and fd.cache_key != key
    torch.testing.assert_close(fd.execute([torch.ones(8)])[0], torch.ones(8).exp())
    assert fusion_cache().stats().entries == 2


def test_an_equal_definition_adopts_the_cached_key():
    """Equal fusions defined apart (each repeated layer of a model is a
    partition of its own) share an entry; after its first run each holds the
    entry's key object, so a lookup matches by identity instead of comparing
    every record. Its schedule state is cached per record count too."""
    fusion_cache().clear()
    first, second = scaled_exp(), scaled_exp()
    assert first.cache_key is not second.cache_key
    first.execute([torch.randn(8)])
    second.execute([torch.randn(8)])
    assert second.cache_key is first.cache_key
    assert fusion_cache().stats().entries == 1 and second.is_scheduled


def test_record_is_printable():
    text = repr(scaled_exp())
    assert "define_tensor((-1,)" in text and "mul(%1, 2.0)" in text and "add_output(%2)" in text
    assert "split(%2, 0, 32, True)" in text and "inline_all()" in text
