"""Grouped-query attention's key/value heads repeated for SDPA (LLaMA's
repeat_kv from transformers: kv[:, :, None].expand(...).reshape(...)) after
the projections: each repeated tensor is written once, by the kernel that
computes it, and its reshape into the heads is a view (no kernel of its
own). Values and strides against eager, and the kernels launched."""
import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import repeat_kv

import smelt.backend

BATCH, SEQ, HEADS, KV_HEADS, HEAD_DIM = 2, 8, 4, 2, 8


def projections_and_attention(x, wq, wk, wv):
    def heads(w, n):
        return F.linear(x, w).view(BATCH, SEQ, n, HEAD_DIM).transpose(1, 2)

    q, k, v = heads(wq, HEADS), heads(wk, KV_HEADS), heads(wv, KV_HEADS)
    k, v = repeat_kv(k, HEADS // KV_HEADS), repeat_kv(v, HEADS // KV_HEADS)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True), k, v


def test_repeated_heads_are_written_by_their_kernel_and_viewed():
    g = torch.Generator().manual_seed(0)
    hidden = HEADS * HEAD_DIM
    x = torch.randn(BATCH, SEQ, hidden, generator=g)
    wq = torch.randn(hidden, hidden, generator=g) / hidden ** 0.5
    wk = torch.randn(KV_HEADS * HEAD_DIM, hidden, generator=g) / hidden ** 0.5
    wv = torch.randn(KV_HEADS * HEAD_DIM, hidden, generator=g) / hidden ** 0.5
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    compiled = torch.compile(projections_and_attention, backend="smelt")
    with torch.no_grad():
        expected = projections_and_attention(x, wq, wk, wv)
        actual = compiled(x, wq, wk, wv)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
        assert a.stride() == e.stride()
    (report,) = smelt.backend.reports()
    (partition,) = report.partitions
    run = partition.last_run
    # Three projections and one copy per repeated tensor; the reshape of
    # each copy into the heads (the segment after it) runs no kernel.
    assert report.smelt_kernels() == 5, run
    segments = [line.split()[1] for line in run.splitlines() if line[:1].isdigit()]
    copies = [i for i, s in enumerate(segments) if s == "pointwise"]
    assert len(copies) == 2 and all(segments[i + 1] == "view:" for i in copies), run
