"""index_select / embedding / gather: a table read at the values of an index tensor,
against torch (values, strides, kernel counts), the errors a user sees, and
models' embeddings fused with what follows them under torch.compile."""
import pytest
import torch

import smelt
import smelt.backend
from smelt import FusionDefinition, SmeltError
from frontend_helpers import assert_matches


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def indices(high, *shape, seed=0, dtype=torch.int64):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def define(build, inputs):
    with FusionDefinition() as fd:
        args = [fd.from_pytorch(x, static_sizes=True) for x in inputs]
        fd.add_output(build(fd, *args))
    return fd


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_along_a_dimension(dim):
    table, index = randn(5, 7, 3, seed=1), indices(3 if dim == -1 else (5, 7)[dim], 6, seed=2)
    fd = define(lambda fd, x, i: fd.ops.index_select(x, i, dim), [table, index])
    (out,) = fd.execute([table, index])
    expected = torch.index_select(table, dim, index)
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.stride()
    assert len(fd.last_kernels()) == 1


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_embedding_then_a_row_normalization_is_one_kernel(index_dtype):
    # GPT-2's first block: token + position embeddings, then a layer norm's
    # statistics, in the normalization kernel's prologue.
    wte, wpe = randn(50, 16, seed=3), randn(8, 16, seed=4)
    ids = indices(50, 2, 8, seed=5, dtype=index_dtype)

    def build(fd, wte, wpe, ids):
        h = fd.ops.add(fd.ops.index_select(wte, ids, 0), wpe)
        mean = fd.ops.div(fd.ops.sum(h, [2], keepdim=True), 16.0)
        return fd.ops.sub(h, mean)

    fd = define(build, [wte, wpe, ids])
    h = torch.nn.functional.embedding(ids, wte) + wpe
    assert_matches(fd.execute([wte, wpe, ids]), h - h.mean(2, keepdim=True), "cpu")
    assert len(fd.last_kernels()) == 1, fd.last_run_report()


@pytest.mark.parametrize("bad", [50, -1])
def test_an_index_outside_the_table_is_an_error(bad):
    wte, ids = randn(50, 4, seed=6), indices(50, 6, seed=7)
    ids[3] = bad
    fd = define(lambda fd, w, i: fd.ops.index_select(w, i, 0), [wte, ids])
    with pytest.raises(SmeltError, match=f"index_select: index value {bad} is outside the table's extent 50"):
        fd.execute([wte, ids])


def test_index_select_errors_name_the_tensors():
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 3])
        f = fd.define_tensor([2])
        with pytest.raises(SmeltError, match="index_select: index T1 has dtype float; indices are integers"):
            fd.ops.index_select(x, f, 0)
        i = fd.define_tensor([2], dtype=smelt.DataType.Int)
        with pytest.raises(SmeltError, match="index_select: dimension 2 is out of range for T0 of rank 2"):
            fd.ops.index_select(x, i, 2)
        fd.add_output(fd.ops.index_select(x, i, 1))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_along_a_dimension(dim):
    x = randn(4, 6, 5, seed=9)
    index = indices(x.shape[dim], 4, 6, 5, seed=10)
    fd = define(lambda fd, x, i: fd.ops.gather(x, i, dim), [x, index])
    (out,) = fd.execute([x, index])
    assert_matches([out], torch.gather(x, dim, index), "cpu")
    assert len(fd.last_kernels()) == 1


def test_gather_errors_name_the_tensors():
    # An index smaller than the table outside `dim` is torch's gather (values in
    # test_nvfuser_compat_ops.py); a larger one, or another rank, is an error.
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 3])
        wide = fd.define_tensor([4, 5], dtype=smelt.DataType.Int)
        with pytest.raises(SmeltError, match="gather: index T1 has extent 5 in dimension 1, "
                                             "larger than 3 of T0"):
            fd.ops.gather(x, wide, 0)
        flat = fd.define_tensor([4], dtype=smelt.DataType.Int)
        with pytest.raises(SmeltError, match="gather: index T2 has rank 1 but T0 has rank 2"):
            fd.ops.gather(x, flat, 0)
        short = fd.define_tensor([2, 3], dtype=smelt.DataType.Int)
        fd.add_output(fd.ops.gather(x, short, 1))
    X = torch.randn(4, 3)
    index = torch.tensor([[0, 2, 1], [2, 2, 0]])
    out = fd.execute([X, torch.zeros(4, 5, dtype=torch.long), torch.zeros(4, dtype=torch.long),
                      index])[0]
    torch.testing.assert_close(out, torch.gather(X, 1, index), rtol=0, atol=0)


def test_compiled_bert_token_types_gather_then_embedding():
    # BERT's buffered token_type_ids: gather of an expanded buffer at the
    # position ids, then an embedding of the result.
    buffer = torch.zeros(1, 16, dtype=torch.int64)
    buffer[0, 5:] = 1
    table = randn(2, 8, seed=11)

    def fn(position_ids):
        token_types = torch.gather(buffer.expand(1, -1), 1, position_ids).expand(2, 6)
        return torch.nn.functional.embedding(token_types, table) * 2

    position_ids = torch.arange(3, 9).unsqueeze(0)
    smelt.backend.reset_reports()
    compiled = torch.compile(fn, backend="smelt", fullgraph=True)
    out = compiled(position_ids)
    torch._dynamo.reset()
    assert_matches([out], fn(position_ids), "cpu")
    (report,) = smelt.backend.reports()
    assert report.fused_ops()["gather.default"] == 1, str(report)
    assert report.torch_launches() == 0 and report.fallback_runs == 0, str(report)


def test_compiled_embeddings_fuse_with_what_follows():
    emb = torch.nn.Embedding(40, 16)
    pos = torch.nn.Embedding(8, 16)
    norm = torch.nn.LayerNorm(16)

    def fn(ids):
        positions = torch.arange(ids.shape[1])
        return norm(emb(ids) + pos(positions))

    ids = indices(40, 2, 8, seed=8)
    smelt.backend.reset_reports()
    compiled = torch.compile(fn, backend="smelt", fullgraph=True)
    with torch.no_grad():
        out = compiled(ids)
        expected = fn(ids)
    torch._dynamo.reset()
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.stride()
    (report,) = smelt.backend.reports()
    assert report.fused_ops()["embedding.default"] == 2, str(report)
    assert report.torch_launches() == 0 and report.fallback_runs == 0, str(report)
    assert report.smelt_kernels() == 1, report.partitions[0].last_run
