"""Tests for scaling_lib.models: every preset against its published total; lookup."""
import pytest

from scaling_lib import models
from scaling_lib.transformer import TransformerConfig

# Exact HF checkpoint counts where published as exact numbers; papers round (GPT-3 "175.0B",
# DeepSeek-V3 "671B").
TOL = {"GPT-3-175B": 3e-3, "DeepSeek-V3": 1e-4, "PaLM-540B": 2e-5, "Megatron-1T": 5e-5}   # rounded in the papers


@pytest.mark.parametrize("name", models.names())
def test_preset_matches_published_total(name):
    c = models.get(name)
    pub = models.PUBLISHED_PARAMS[name]
    if name in TOL:
        assert c.params() == pytest.approx(pub, rel=TOL[name])
    else:
        assert c.params() == pub


def test_every_preset_has_source_and_total():
    for name, c in models.PRESETS.items():
        assert c.name == name
        assert len(c.source) > 20
        assert name in models.PUBLISHED_PARAMS


@pytest.mark.parametrize("query,name", [("llama3-70b", "LLaMA-3-70B"), ("LLaMA-3 70B", "LLaMA-3-70B"),
                                        ("llama_3_8b", "LLaMA-3-8B"), ("llama-2-13b", "LLaMA-2-13B"),
                                        ("Mixtral 8x7B", "Mixtral-8x7B"), ("mixtral-8×7b", "Mixtral-8x7B"),
                                        ("deepseek-v3", "DeepSeek-V3"), ("gpt-3", "GPT-3-175B"),
                                        ("llama-3.1-405b", "LLaMA-3.1-405B"), ("toy", "P4.1 toy")])
def test_lookup(query, name):
    assert models.get(query).name == name


def test_passthrough_and_errors():
    c = models.LLAMA3_8B
    assert models.get(c) is c
    with pytest.raises(KeyError, match="did you mean"):
        models.get("llama-3-7b")
    with pytest.raises(TypeError):
        models.get(70)


def test_canon_configs():                 # CANON §2: LLaMA-3-70B F = 28,672 etc.
    c = models.LLAMA3_70B
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_head, c.d_ff, c.vocab) == \
        (80, 8192, 64, 8, 128, 28672, 128256)
    assert isinstance(models.LLAMA2_13B, TransformerConfig)
    assert models.LLAMA2_13B.attention_kind == "MHA" and c.attention_kind == "GQA"
    assert models.get("deepseek-v3").attention_kind == "MLA"
