"""The four real-size models of issue 41's first table, in bf16: what a
torch.compile user runs on a GPU, beside the small public zoo (zoo.py).
Randomly initialised from configs (transformers, timm): nothing is
downloaded.

CASES = {name: (build, make_inputs)} at full size, the zoo's format (so
../shared/peers/inductor/inductor_kernels.py --cases reads this file too).
They are GPU-only: far too big for the CPU simulator. TINY_CASES has the
same models at a size eager runs on a CPU in a second (resnet50 keeps its
layers and takes a 32 px image), so their definitions are tested without
a GPU (tests/python/test_real_size_models.py).
"""

from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import torch

if __package__:
    from .zoo import _randn, _seeded, _token_ids
else:  # read as a file: the peer tool puts this folder on sys.path
    from zoo import _randn, _seeded, _token_ids

Case = Tuple[Callable[[], torch.nn.Module], Callable[[int], Tuple[tuple, dict]]]


@dataclass(frozen=True)
class Transformer:
    width: int
    layers: int
    heads: int
    kv_heads: int
    mlp: int  # the MLP's hidden width
    vocab: int
    batch: int
    seq: int


@dataclass(frozen=True)
class Images:
    batch: int
    pixels: int


@dataclass(frozen=True)
class MLPSize:
    width: int
    hidden: int
    batch: int
    seq: int


# Each model's (full size, tiny size).
GPT2 = (Transformer(width=1024, layers=4, heads=16, kv_heads=16, mlp=4096, vocab=32000,
                    batch=8, seq=512),
        Transformer(width=32, layers=1, heads=2, kv_heads=2, mlp=128, vocab=64, batch=2, seq=8))
LLAMA = (Transformer(width=2048, layers=2, heads=16, kv_heads=8, mlp=5632, vocab=32000,
                     batch=4, seq=512),
         Transformer(width=32, layers=1, heads=4, kv_heads=2, mlp=64, vocab=64, batch=2, seq=8))
RESNET50 = (Images(batch=32, pixels=224), Images(batch=1, pixels=32))
MLP_BLOCK = (MLPSize(width=4096, hidden=11008, batch=8, seq=512),
             MLPSize(width=32, hidden=64, batch=2, seq=8))


def gpt2(size: Transformer) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=size.vocab, n_positions=size.seq,
                                      n_embd=size.width, n_layer=size.layers, n_head=size.heads,
                                      n_inner=size.mlp, bos_token_id=0, eos_token_id=0))


def llama(size: Transformer) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(vocab_size=size.vocab, hidden_size=size.width,
                                        intermediate_size=size.mlp,
                                        num_hidden_layers=size.layers,
                                        num_attention_heads=size.heads,
                                        num_key_value_heads=size.kv_heads,
                                        max_position_embeddings=size.seq))


def resnet50() -> torch.nn.Module:
    import timm
    return timm.create_model("resnet50", pretrained=False)


class MLPBlock(torch.nn.Module):
    """x + fc2(gelu(fc1(layer_norm(x)))): a transformer's MLP half."""

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


def _bf16(build: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    return _seeded(lambda: build().to(torch.bfloat16))


def _cases(tiny: bool) -> Dict[str, Case]:
    g, l, r, m = (sizes[tiny] for sizes in (GPT2, LLAMA, RESNET50, MLP_BLOCK))
    bf16 = torch.bfloat16
    return {
        "gpt2_1024x4_bf16": (_bf16(lambda: gpt2(g)), _token_ids(g.seq, g.batch, g.vocab)),
        "llama_2048x2_bf16": (_bf16(lambda: llama(l)), _token_ids(l.seq, l.batch, l.vocab)),
        "resnet50_bf16": (_bf16(resnet50), _randn((r.batch, 3, r.pixels, r.pixels), bf16)),
        "mlp_4096_bf16": (_bf16(lambda: MLPBlock(m.width, m.hidden)),
                          _randn((m.batch, m.seq, m.width), bf16)),
    }


CASES: Dict[str, Case] = _cases(tiny=False)
TINY_CASES: Dict[str, Case] = _cases(tiny=True)
