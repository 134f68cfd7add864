# torch_program_fuzz seed 9406323
import torch
import torch.nn.functional as F
import smelt.backend

def fn(x0):
    v1 = torch.cat([x0, x0.narrow(3, 0, 1)], dim=3)
    v2 = v1 + 0.5
    v3 = torch.where(x0 < -0.45, x0, v2)
    v4 = v2.sum(dim=(0, 1, 2))
    v5 = torch.maximum(v4, v3)
    v6 = v1.narrow(2, 1, 2)
    v7 = v4.expand(2, -1)
    return (v5, v6, v7)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.rand(*shape, generator=g) * 4 - 2
    x0 = r(4, 6, 3, 1)
    return [x0]


for seed in (1, 2):
    inputs = make_inputs(seed)
    expected = fn(*inputs)
    actual = torch.compile(fn, backend="smelt", dynamic=False)(*inputs)
    for e, a in zip(expected, actual):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
        assert a.shape == e.shape and all(
            x == y for n, x, y in zip(e.shape, a.stride(), e.stride()) if n > 1), \
            (a.stride(), e.stride())
    print(smelt.backend.last_report())
