"""The models bench_compile_cost.py compiles: the public zoo
(tests/python/models/zoo.py), GPT-2 tiny with 1, 2, 4 and 8 layers (how
compile time grows per layer) and transformers' Mamba with its reference
scan (no mamba_ssm kernels: the selective scan unrolled over 16 steps, one
long fusion). Randomly initialised from configs; nothing is downloaded.

CASES has the format ../shared/peers/inductor/inductor_kernels.py --cases
reads, so Inductor compiles the same models.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from models.zoo import CASES as ZOO, _seeded, _token_ids  # noqa: E402


def _gpt2(layers: int):
    def gpt2():
        from transformers import GPT2Config, GPT2LMHeadModel
        return GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=layers,
                                          n_head=2, bos_token_id=0, eos_token_id=0))
    gpt2.__name__ = f"gpt2_{layers}_layers"
    return _seeded(gpt2)


def _mamba(layers: int):
    def mamba():
        from transformers import MambaConfig, MambaForCausalLM
        return MambaForCausalLM(MambaConfig(vocab_size=256, hidden_size=64, state_size=8,
                                            num_hidden_layers=layers, use_mambapy=False))
    mamba.__name__ = f"mamba_{layers}_layers"
    return _seeded(mamba)


CASES = dict(ZOO)
for _layers in (1, 2, 4, 8):
    CASES[f"gpt2_L{_layers}"] = (_gpt2(_layers), _token_ids())
CASES["mamba_L1"] = (_mamba(1), _token_ids(seq=16, batch=1, vocab=256))
CASES["mamba_L2"] = (_mamba(2), _token_ids(seq=16, batch=1, vocab=256))
