"""A zoo of small, randomly initialised real models (transformers, timm),
built from configs: nothing is downloaded. Each entry builds the model with
its library's default choices (attention implementation included) at a size
the CPU simulator runs in seconds.

CASES = {name: (build, make_inputs)}: build() returns the nn.Module (eval
mode, fp32, seeded); make_inputs(seed) returns (args, kwargs). The format is
the one ../shared/peers/inductor/inductor_kernels.py --cases reads, so the
same models can be compiled by Inductor for comparison.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Tuple

import torch

VOCAB = 64
SEQ = 8
BATCH = 2


def _seeded(build: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    def seeded() -> torch.nn.Module:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build().eval()
    seeded.__name__ = getattr(build, "__name__", "model")
    return seeded


def _token_ids(seq: int = SEQ, batch: int = BATCH,
               vocab: int = VOCAB) -> Callable[[int], Tuple[tuple, dict]]:
    def make(seed: int) -> Tuple[tuple, dict]:
        g = torch.Generator().manual_seed(seed)
        return (torch.randint(0, vocab, (batch, seq), generator=g),), {}
    return make


def _randn(shape: Tuple[int, ...],
           dtype: torch.dtype = torch.float) -> Callable[[int], Tuple[tuple, dict]]:
    def make(seed: int) -> Tuple[tuple, dict]:
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(shape, generator=g).to(dtype),), {}
    return make


def _images(batch: int, size: int,
            dtype: torch.dtype = torch.float) -> Callable[[int], Tuple[tuple, dict]]:
    return _randn((batch, 3, size, size), dtype)


@_seeded
def gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2,
                                      n_head=2, bos_token_id=0, eos_token_id=0))


@_seeded
def bert() -> torch.nn.Module:
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64,
                                max_position_embeddings=32))


@_seeded
def llama() -> torch.nn.Module:
    """LLaMA with grouped-query attention (4 query heads share 2 KV heads)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, max_position_embeddings=32))


@_seeded
def vit() -> torch.nn.Module:
    from transformers import ViTConfig, ViTModel
    return ViTModel(ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, image_size=16, patch_size=4, num_channels=3),
                    add_pooling_layer=False)


@_seeded
def resnet18() -> torch.nn.Module:
    import timm
    return timm.create_model("resnet18", pretrained=False, num_classes=10)


@_seeded
def convnext() -> torch.nn.Module:
    import timm
    return timm.create_model("convnext_atto", pretrained=False, num_classes=10)


CASES: Dict[str, Tuple[Callable[[], torch.nn.Module], Callable[[int], Tuple[tuple, dict]]]] = {
    "gpt2": (gpt2, _token_ids()),
    "bert": (bert, _token_ids()),
    "llama": (llama, _token_ids()),
    "vit": (vit, _images(BATCH, 16)),
    "resnet18": (resnet18, _images(1, 32)),
    "convnext": (convnext, _images(1, 32)),
}


def output_tensors(out: Any) -> list:
    """The tensors of a model's output (a tensor, a tuple, or a
    transformers ModelOutput), in order."""
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    result = []
    for item in out if isinstance(out, (tuple, list)) else []:
        result.extend(output_tensors(item))
    return result
