#!/usr/bin/env python3
"""Builds tiny random LLaMA-family and GPT-NeoX models with Hugging Face transformers and records
HF's outputs.

The tests never run this script: they read what it committed under tests/fixtures/families/ (see
the README.md there for the format of expected.json; it follows tests/fixtures/opt/). It is
needed only to regenerate the fixtures, in a throwaway virtual environment OUTSIDE the
repository:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
        # if that index is unreachable: /tmp/hfvenv/bin/pip install torch   (wheel from PyPI)
    /tmp/hfvenv/bin/pip install transformers safetensors numpy

    /tmp/hfvenv/bin/python tools/gen_family_fixtures.py        # -> tests/fixtures/families/

Fixture models (computed in fp32 with attn_implementation "eager", fixed seeds):
  llama-gqa           LlamaForCausalLM: hidden 64, 8 heads, 2 KV heads, head_dim 8, ffn 160,
                      3 layers, vocab 1000, untied lm_head, rope_theta 1e4
  llama-gqa-bf16      the same weights saved in bfloat16 (reference computed in fp32 from them)
  llama3-rope         Llama with llama3 rope_scaling (factor 8, original context 64), theta 5e5,
                      hidden 48 with 4 heads of head_dim 16 (heads * head_dim != hidden), 2 layers
  llama-tied-sharded  Llama with tied embeddings, linear rope_scaling in the old "type" spelling,
                      4 heads sharing 1 KV head, saved as >= 2 shards plus the index
  qwen2-bias          Qwen2ForCausalLM with q/k/v biases, 4 heads / 2 KV heads, untied,
                      use_sliding_window false
  neox-partial        GPTNeoXForCausalLM: hidden 64, 4 heads, rotary_pct 0.25, parallel residual,
                      ffn 256, 2 layers, gelu, vocab 1000, untied embed_out
  neox-sequential     GPT-NeoX with use_parallel_residual false and rotary_pct 1.0
and config-only directories under bad/ that a loader must reject.

Every parameter is re-drawn (HF's 0/1 init of biases and norms would hide bugs): matrices
N(0, 1/fan_in), linear biases N(0, 0.2^2), norm weights N(1, 0.2^2) and LayerNorm biases
N(0, 0.2^2), token embeddings N(0, s^2) with s per model, the last norm's weight around a gain
per model. Seeds are accepted by the rules of tools/gen_opt_fixtures.py (top-2 gap, torch bf16
teacher-forced same tokens, >= 3 distinct tokens per sequence), applied to the bf16-rounded
weights too for llama-gqa. The script also asserts that HF reloads every saved directory to the
same logits, that the rope scaling is in effect (inv_freq against an independent computation and
the logits against unscaled rope), and that biases and norm weights change the logits.
"""

import copy
import json
import math
import os
import shutil
import sys

import numpy as np
import safetensors
import torch
import transformers
from transformers import (AutoModelForCausalLM, GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig,
                          LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM)

from hf_fixture_common import (GREEDY_STEPS, PROMPT_LENGTHS, check_reference, dir_size, greedy,
                               make_prompts, positions_from_mask, reference_entry, save_hf,
                               teacher_forced_step_logits, tensor_stats)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "families")

SPECIAL_IDS = {"llama": dict(pad_id=0, bos_id=1, eos_id=2),
               "neox": dict(pad_id=1, bos_id=0, eos_id=0)}
PROMPT_SEED = 7
PROMPT_VOCAB = 256  # prompt ids are drawn from [4, 256): valid for every model's vocab
BIAS_STD, NORM_STD = 0.2, 0.2
SEED_TRIES = 500

# Each spec: the HF classes, config arguments, the config.json style to commit, and the
# distributions of the embedding and the last norm. "hub" configs are rewritten to the keys that
# checkpoints written by transformers 4.x carry (rope_theta / rope_scaling / rotary_pct /
# rotary_emb_base / torch_dtype at the top level, hub_rope_scaling verbatim);
# "transformers5" configs are kept as this transformers writes them (rope_parameters, dtype).
LLAMA_GQA = dict(
    family="llama", config_cls=LlamaConfig, model_cls=LlamaForCausalLM, first_seed=3000,
    config=dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=8,
                intermediate_size=160, num_hidden_layers=3, vocab_size=1000,
                max_position_embeddings=128, tie_word_embeddings=False, rope_theta=10000.0,
                rms_norm_eps=1e-5),
    config_style="hub", hub_rope_scaling=None, embed_std=1.0, final_norm_gain=3.0)
LLAMA3_ROPE = dict(
    family="llama", config_cls=LlamaConfig, model_cls=LlamaForCausalLM, first_seed=4000,
    config=dict(hidden_size=48, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                intermediate_size=128, num_hidden_layers=2, vocab_size=256,
                max_position_embeddings=256, tie_word_embeddings=False, rope_theta=500000.0,
                rms_norm_eps=1e-5,
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    config_style="hub",
    hub_rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
    embed_std=1.0, final_norm_gain=3.0)
LLAMA_TIED_SHARDED = dict(
    family="llama", config_cls=LlamaConfig, model_cls=LlamaForCausalLM, first_seed=5000,
    config=dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                intermediate_size=128, num_hidden_layers=2, vocab_size=256,
                max_position_embeddings=128, tie_word_embeddings=True, rope_theta=10000.0,
                rms_norm_eps=1e-5, rope_scaling={"type": "linear", "factor": 2.0}),
    config_style="hub", hub_rope_scaling={"type": "linear", "factor": 2.0},
    # Tied: a small embedding keeps the residual from echoing the input token back.
    embed_std=0.15, final_norm_gain=3.0, max_shard_size="100KB")
QWEN2_BIAS = dict(
    family="llama", config_cls=Qwen2Config, model_cls=Qwen2ForCausalLM, first_seed=6000,
    config=dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=128, num_hidden_layers=2, vocab_size=256,
                max_position_embeddings=128, tie_word_embeddings=False, rope_theta=1000000.0,
                rms_norm_eps=1e-6, use_sliding_window=False, sliding_window=8,
                max_window_layers=1),
    # Like the Qwen2 checkpoints on the Hub, the config names a sliding window that
    # use_sliding_window false switches off; 8 < the sequence length, so applying it shows.
    config_style="hub", hub_rope_scaling=None,
    hub_extra=dict(sliding_window=8, use_sliding_window=False, max_window_layers=1),
    hub_drop=("layer_types",), embed_std=1.0, final_norm_gain=3.0)
NEOX_PARTIAL = dict(
    family="neox", config_cls=GPTNeoXConfig, model_cls=GPTNeoXForCausalLM, first_seed=7000,
    config=dict(hidden_size=64, num_attention_heads=4, intermediate_size=256,
                num_hidden_layers=2, vocab_size=1000, max_position_embeddings=128,
                rotary_pct=0.25, rotary_emb_base=10000, use_parallel_residual=True,
                hidden_act="gelu", layer_norm_eps=1e-5, tie_word_embeddings=False,
                hidden_dropout=0.0, attention_dropout=0.0),
    config_style="hub", hub_rope_scaling=None, embed_std=1.0, final_norm_gain=3.0)
NEOX_SEQUENTIAL = dict(
    family="neox", config_cls=GPTNeoXConfig, model_cls=GPTNeoXForCausalLM, first_seed=8000,
    config=dict(hidden_size=64, num_attention_heads=4, intermediate_size=128,
                num_hidden_layers=2, vocab_size=256, max_position_embeddings=128,
                rotary_pct=1.0, rotary_emb_base=10000, use_parallel_residual=False,
                hidden_act="gelu", layer_norm_eps=1e-5, tie_word_embeddings=False,
                hidden_dropout=0.0, attention_dropout=0.0),
    config_style="transformers5", embed_std=1.0, final_norm_gain=3.0)

# Parameters neutralised (bias -> 0, norm weight -> 1) to check they change the logits.
SENSITIVE = {
    "llama": ("input_layernorm.weight", "post_attention_layernorm.weight", "model.norm.weight"),
    "qwen2": ("q_proj.bias", "k_proj.bias", "v_proj.bias", "input_layernorm.weight",
              "post_attention_layernorm.weight"),
    "gpt_neox": ("input_layernorm.weight", "input_layernorm.bias",
                 "post_attention_layernorm.weight", "post_attention_layernorm.bias",
                 "final_layer_norm.bias", "query_key_value.bias", "attention.dense.bias",
                 "dense_h_to_4h.bias", "dense_4h_to_h.bias"),
}
MIN_SENSITIVITY = 0.05  # of the logit std: the smallest max |change| a neutralised part may make


def make_config(spec, **override):
    kw = copy.deepcopy(spec["config"])  # HF adds keys to the rope dict it is given
    kw.update(override)
    ids = SPECIAL_IDS[spec["family"]]
    return spec["config_cls"](pad_token_id=ids["pad_id"], bos_token_id=ids["bos_id"],
                              eos_token_id=ids["eos_id"], attn_implementation="eager", **kw)


def is_final_norm(name):
    return name in ("model.norm.weight", "gpt_neox.final_layer_norm.weight")


def build_model(spec, seed, config=None):
    """A fresh model with every parameter re-drawn (distributions: module docstring)."""
    model = spec["model_cls"](config or make_config(spec)).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied parameter is listed once
            if p.dim() == 1 and "norm" in name:
                if name.endswith("weight"):
                    mean = spec["final_norm_gain"] if is_final_norm(name) else 1.0
                    mean, std = mean, NORM_STD
                else:
                    mean, std = 0.0, NORM_STD
            elif "embed_tokens" in name or "embed_in" in name:
                mean, std = 0.0, spec["embed_std"]
            elif name.endswith("bias"):
                mean, std = 0.0, BIAS_STD
            else:  # a Linear weight [out, in]
                assert p.dim() == 2, name
                mean, std = 0.0, p.shape[1] ** -0.5
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std + mean)
    head = model.get_output_embeddings().weight
    embed = model.get_input_embeddings().weight
    assert (head.data_ptr() == embed.data_ptr()) == spec["config"]["tie_word_embeddings"], \
        "lm_head must be tied exactly when tie_word_embeddings is set"
    return model


def bf16_copy(model):
    """torch's bf16 model as from_pretrained(dtype=bfloat16) gives it: parameters in bf16, the
    rope buffers (inv_freq) left in fp32."""
    copied = copy.deepcopy(model).to(torch.bfloat16)
    for (name, module), (_, source) in zip(copied.named_modules(), model.named_modules()):
        for key, buf in source._buffers.items():
            if buf is not None:
                module._buffers[key] = buf.clone()
    return copied


def bf16_rounded(model):
    """The fp32 model with its parameters rounded to bf16 (what loading the bf16 checkpoint and
    computing in fp32 gives); buffers untouched."""
    rounded = copy.deepcopy(model)
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    return rounded


def run_checks(model, ids, mask):
    return check_reference(model, ids, mask, model.base_model.forward, explicit_positions=True,
                           bf16_copy=bf16_copy)


def build_accepted(name, spec, ids, mask, also_bf16=False):
    """Tries seeds until the fp32 model (and its bf16 rounding) pass the acceptance checks."""
    first = spec["first_seed"]
    for seed in range(first, first + SEED_TRIES):
        model = build_model(spec, seed)
        info, ok, why = run_checks(model, ids, mask)
        bf16_info = None
        if ok and also_bf16:
            rounded = bf16_rounded(model)
            bf16_info, ok, why = run_checks(rounded, ids, mask)
            why = "bf16-rounded copy: " + why
        print(f"  {name} seed {seed}: {why} -> {'ok' if ok else 're-roll'}", file=sys.stderr)
        if ok:
            return model, seed, info, bf16_info
    raise RuntimeError(f"{name}: no acceptable seed in {SEED_TRIES} tries")


# ---------------------------------------------------------------------------------------------
# RoPE: an independent computation of the inverse frequencies each config must produce.

def rope_facts(spec):
    cfg = spec["config"]
    if spec["family"] == "neox":
        head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
        rotary_dim = int(head_dim * cfg["rotary_pct"])
        theta, scaling = float(cfg["rotary_emb_base"]), None
    else:
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        rotary_dim, theta, scaling = head_dim, float(cfg["rope_theta"]), cfg.get("rope_scaling")
    inv = 1.0 / theta ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    default = inv.copy()
    facts = {"type": "default", "theta": theta, "rotary_dim": rotary_dim}
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type"))
        facts["type"] = kind
        facts.update({k: v for k, v in scaling.items()
                      if k not in ("type", "rope_type", "rope_theta")})
        if kind == "linear":
            inv = inv / scaling["factor"]
        elif kind == "llama3":  # Meta's apply_scaling (llama3.1 reference code)
            factor, lo, hi = (scaling["factor"], scaling["low_freq_factor"],
                              scaling["high_freq_factor"])
            old = scaling["original_max_position_embeddings"]
            out = []
            for f in inv:
                wavelen = 2 * math.pi / f
                if wavelen < old / hi:
                    out.append(f)
                elif wavelen > old / lo:
                    out.append(f / factor)
                else:
                    smooth = (old / wavelen - lo) / (hi - lo)
                    out.append((1 - smooth) * f / factor + smooth * f)
            inv = np.array(out)
        else:
            raise ValueError(kind)
    facts["inv_freq"] = [float(np.float32(x)) for x in inv]
    return facts, inv, default


def check_rope(name, spec, model, ids, mask, tokens, steps):
    """inv_freq must match the independent computation; a scaled rope must move the logits."""
    facts, inv, default = rope_facts(spec)
    got = model.base_model.rotary_emb.inv_freq.double().numpy()
    assert got.shape == inv.shape and np.allclose(got, inv, rtol=1e-5, atol=0), \
        f"{name}: inv_freq {got} != expected {inv}"
    scaling = getattr(model.base_model.rotary_emb, "attention_scaling", 1.0)
    assert scaling == 1.0, f"{name}: attention_scaling {scaling}"
    if facts["type"] != "default":
        assert np.abs(got / default - 1).max() > 0.1, f"{name}: inv_freq is the default one"
        plain = build_model(spec, 0, make_config(spec, rope_scaling=None))
        plain.load_state_dict(model.state_dict())
        plain_steps = teacher_forced_step_logits(plain, ids, mask, tokens, explicit_positions=True)
        moved = (plain_steps - steps).abs().max().item()
        assert moved > MIN_SENSITIVITY * steps.std().item(), \
            f"{name}: the rope scaling barely changes the logits ({moved})"
        facts["max_logit_change_vs_unscaled_rope"] = moved
        print(f"  {name}: rope {facts['type']} moves the logits by up to {moved:.3g}",
              file=sys.stderr)
    return facts


def check_sensitivity(name, model, ids, mask, tokens, steps):
    """Neutralising each random bias / norm weight group must change the logits."""
    params = dict(model.named_parameters())
    std = steps.std().item()
    for pattern in SENSITIVE[model.config.model_type]:
        hits = [n for n in params if n.endswith(pattern)]
        assert hits, f"{name}: no parameter ends with {pattern}"
        probe = copy.deepcopy(model)
        with torch.no_grad():
            for n, p in probe.named_parameters():
                if n in hits:
                    p.fill_(0.0 if n.endswith("bias") else 1.0)
        moved = (teacher_forced_step_logits(probe, ids, mask, tokens, explicit_positions=True)
                 - steps).abs().max().item()
        assert moved > MIN_SENSITIVITY * std, f"{name}: {pattern} barely matters ({moved})"


# ---------------------------------------------------------------------------------------------
# Checkpoints

def write_config(path, cfg):
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def hub_style(cfg, spec):
    """This transformers' config.json -> the keys of a transformers 4.x (Hub) checkpoint."""
    cfg = dict(cfg)
    rope = dict(cfg.pop("rope_parameters"))
    if cfg["model_type"] == "gpt_neox":
        assert rope.pop("rope_type") == "default", rope
        cfg["rotary_pct"] = rope.pop("partial_rotary_factor")
        cfg["rotary_emb_base"] = rope.pop("rope_theta")
        assert not rope, rope
    else:
        cfg["rope_theta"] = rope["rope_theta"]
        cfg["rope_scaling"] = spec["hub_rope_scaling"]
    cfg["torch_dtype"] = cfg.pop("dtype")
    for key in spec.get("hub_drop", ()):
        cfg.pop(key)
    cfg.update(spec.get("hub_extra", {}))
    return cfg


def save_checkpoint(spec, model, dir_name, dtype):
    out_dir = os.path.join(FIXTURE_DIR, dir_name)
    files = save_hf(model.to(dtype), out_dir, spec.get("max_shard_size"))
    config_path = os.path.join(out_dir, "config.json")
    with open(config_path) as f:
        cfg = json.load(f)
    if spec["config_style"] == "hub":
        cfg = hub_style(cfg, spec)
    write_config(config_path, cfg)
    return files, cfg


@torch.no_grad()
def check_reload(name, dir_name, spec, source, info, ids, mask):
    """HF must load the committed directory (config as written) back to the same numbers."""
    loaded = AutoModelForCausalLM.from_pretrained(os.path.join(FIXTURE_DIR, dir_name),
                                                  dtype=torch.float32,
                                                  attn_implementation="eager").eval()
    assert type(loaded) is spec["model_cls"], type(loaded)
    assert loaded.config.rope_parameters == source.config.rope_parameters, \
        (loaded.config.rope_parameters, source.config.rope_parameters)
    assert torch.equal(loaded.base_model.rotary_emb.inv_freq,
                       source.base_model.rotary_emb.inv_freq)
    if spec["model_cls"] is Qwen2ForCausalLM:
        assert all(t == "full_attention" for t in loaded.config.layer_types), \
            loaded.config.layer_types
    tied = loaded.get_output_embeddings().weight.data_ptr() == \
        loaded.get_input_embeddings().weight.data_ptr()
    assert tied == spec["config"]["tie_word_embeddings"], f"{dir_name}: tied {tied}"
    prefill, steps, tokens = greedy(loaded, ids, mask, loaded.base_model.forward,
                                    explicit_positions=True)
    err = max((prefill - info["prefill"]).abs().max().item(),
              (steps - info["steps"]).abs().max().item())
    assert err <= 1e-5 and torch.equal(tokens, info["tokens"]), \
        f"{dir_name}: reloaded model differs from the reference by {err}"


def config_facts(spec, cfg, rope):
    c = spec["config"]
    neox = spec["family"] == "neox"
    heads = c["num_attention_heads"]
    facts = {
        "architecture": cfg["architectures"][0],
        "model_type": cfg["model_type"],
        "config_style": spec["config_style"],
        "hidden_size": c["hidden_size"],
        "num_layers": c["num_hidden_layers"],
        "num_heads": heads,
        "num_kv_heads": heads if neox else c["num_key_value_heads"],
        "head_dim": c["hidden_size"] // heads if neox else c.get("head_dim",
                                                                   c["hidden_size"] // heads),
        "intermediate_size": c["intermediate_size"],
        "vocab_size": c["vocab_size"],
        "max_position_embeddings": c["max_position_embeddings"],
        "tied": c["tie_word_embeddings"],
        "norm": "layernorm" if neox else "rmsnorm",
        "norm_eps": c["layer_norm_eps"] if neox else c["rms_norm_eps"],
        "hidden_act": c.get("hidden_act", "silu"),
        "mlp": "fc" if neox else "gated",  # gated: down(act(gate(x)) * up(x))
        "qkv_bias": neox or spec["model_cls"] is Qwen2ForCausalLM,
        "out_and_mlp_bias": neox,
        "parallel_residual": c["use_parallel_residual"] if neox else None,
        "sliding_window_in_effect": False,
        "rope": rope,
    }
    ids = SPECIAL_IDS[spec["family"]]
    facts.update(pad_token_id=ids["pad_id"], bos_token_id=ids["bos_id"],
                 eos_token_id=ids["eos_id"])
    return facts


def checkpoint_entry(spec, dir_name, files, cfg, reference, dtype, rope):
    ckpt_dir = os.path.join(FIXTURE_DIR, dir_name)
    stats = tensor_stats(ckpt_dir)
    head_name = "embed_out.weight" if spec["family"] == "neox" else "lm_head.weight"
    stored = head_name in stats
    assert stored != spec["config"]["tie_word_embeddings"], f"{dir_name}: {head_name} {stored}"
    sharded = "model.safetensors.index.json" in files
    if sharded:
        assert len([f for f in files if f.endswith(".safetensors")]) >= 2, files
    return {"dir": dir_name, "files": files, "dtype": dtype, "sharded": sharded,
            "reference": reference, "prompts": spec["family"], "lm_head_stored": stored,
            "lm_head_name": head_name if stored else None,
            "config": config_facts(spec, cfg, rope), "tensors": stats}


# ---------------------------------------------------------------------------------------------
# Configs a loader must reject.

def bad_configs():
    """(dir, reason, config) for bad/; each is a small valid-looking config but one fact."""
    base = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
        "hidden_act": "silu", "hidden_size": 48, "head_dim": 8, "intermediate_size": 96,
        "initializer_range": 0.02, "max_position_embeddings": 128, "mlp_bias": False,
        "num_attention_heads": 6, "num_hidden_layers": 1, "num_key_value_heads": 2,
        "pretraining_tp": 1, "rms_norm_eps": 1e-5, "rope_scaling": None, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": transformers.__version__, "use_cache": True, "vocab_size": 256,
    }
    yarn = dict(base, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                    "original_max_position_embeddings": 64})
    mistral = dict(base, architectures=["MistralForCausalLM"], model_type="mistral",
                   sliding_window=16)
    for key in ("attention_bias", "mlp_bias", "pretraining_tp"):
        mistral.pop(key)
    indivisible = dict(base, num_key_value_heads=4)  # 6 query heads over 4 KV heads
    falcon = {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11,
        "hidden_dropout": 0.0, "hidden_size": 64, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-5, "multi_query": True, "new_decoder_architecture": False,
        "num_attention_heads": 4, "num_hidden_layers": 1, "parallel_attn": True,
        "rope_theta": 10000.0, "torch_dtype": "float32",
        "transformers_version": transformers.__version__, "use_cache": True, "vocab_size": 256,
    }
    return [
        ("rope-yarn", "rope_scaling type yarn is not supported", "rope_scaling", yarn),
        ("mistral-sliding-window", "model_type mistral with sliding_window 16 (sliding-window "
         "attention is not supported)", "sliding_window", mistral),
        ("kv-heads-indivisible", "num_attention_heads 6 is not a multiple of "
         "num_key_value_heads 4", "num_key_value_heads", indivisible),
        ("falcon", "model_type falcon is not supported", "model_type", falcon),
    ]


def write_bad():
    entries = {}
    for name, reason, key, cfg in bad_configs():
        dir_name = f"bad/{name}"
        out_dir = os.path.join(FIXTURE_DIR, dir_name)
        os.makedirs(out_dir)
        write_config(os.path.join(out_dir, "config.json"), cfg)
        entries[name] = {"dir": dir_name, "files": ["config.json"], "reason": reason,
                         "offending_key": key}
    return entries


# ---------------------------------------------------------------------------------------------

def prompt_set(family):
    ids_cfg = SPECIAL_IDS[family]
    ids, mask = make_prompts(PROMPT_VOCAB, PROMPT_SEED, ids_cfg["pad_id"], ids_cfg["bos_id"])
    entry = dict(ids_cfg, lengths=PROMPT_LENGTHS, input_ids=ids.tolist(),
                 attention_mask=mask.tolist(), position_ids=positions_from_mask(mask).tolist())
    return ids, mask, entry


FIXTURES = [  # (reference / directory name, spec, also write the bf16 checkpoint)
    ("llama-gqa", LLAMA_GQA, True),
    ("llama3-rope", LLAMA3_ROPE, False),
    ("llama-tied-sharded", LLAMA_TIED_SHARDED, False),
    ("qwen2-bias", QWEN2_BIAS, False),
    ("neox-partial", NEOX_PARTIAL, False),
    ("neox-sequential", NEOX_SEQUENTIAL, False),
]


def generate_fixtures():
    if os.path.isdir(FIXTURE_DIR):
        for entry in os.listdir(FIXTURE_DIR):  # README.md stays
            path = os.path.join(FIXTURE_DIR, entry)
            if os.path.isdir(path):
                shutil.rmtree(path)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    prompts = {family: prompt_set(family) for family in SPECIAL_IDS}
    expected = {
        "format_version": 1,
        "generator": {"script": "tools/gen_family_fixtures.py", "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "safetensors": safetensors.__version__, "numpy": np.__version__},
        "prompt_sets": {family: p[2] for family, p in prompts.items()},
        "greedy_steps": GREEDY_STEPS,
        "references": {},
        "checkpoints": {},
        "bad": {},
    }
    refs, ckpts = expected["references"], expected["checkpoints"]

    for name, spec, with_bf16 in FIXTURES:
        print(name, file=sys.stderr)
        ids, mask, _ = prompts[spec["family"]]
        model, seed, info, bf16_info = build_accepted(name, spec, ids, mask, also_bf16=with_bf16)
        rope = check_rope(name, spec, model, ids, mask, info["tokens"], info["steps"])
        check_sensitivity(name, model, ids, mask, info["tokens"], info["steps"])
        variants = [(name, info, torch.float32, "float32")]
        if with_bf16:
            variants.append((name + "-bf16", bf16_info, torch.bfloat16, "bfloat16"))
        for ref_name, ref_info, dtype, dtype_name in variants:
            refs[ref_name] = reference_entry(FIXTURE_DIR, ref_name, ref_info, ids, seed)
            refs[ref_name]["prompts"] = spec["family"]
            files, cfg = save_checkpoint(spec, copy.deepcopy(model), ref_name, dtype)
            check_reload(ref_name, ref_name, spec, model, ref_info, ids, mask)
            ckpts[ref_name] = checkpoint_entry(spec, ref_name, files, cfg, ref_name, dtype_name,
                                               rope)

    expected["bad"] = write_bad()
    with open(os.path.join(FIXTURE_DIR, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    for entry in sorted(os.listdir(FIXTURE_DIR)):
        path = os.path.join(FIXTURE_DIR, entry)
        size = dir_size(path) if os.path.isdir(path) else os.path.getsize(path)
        print(f"  {entry}: {size / 1e3:.0f} kB", file=sys.stderr)
    print(f"fixtures: {dir_size(FIXTURE_DIR) / 1e6:.2f} MB in {FIXTURE_DIR}", file=sys.stderr)


def main():
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    generate_fixtures()


if __name__ == "__main__":
    main()
