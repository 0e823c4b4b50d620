#!/usr/bin/env python3
"""Builds small random OPT models with Hugging Face transformers and records HF's outputs.

The tests never run this script: they read what it committed under tests/fixtures/opt/ (see the
README.md there for the format of expected.json). It is needed only to regenerate the fixtures or
the demo model, in a throwaway virtual environment OUTSIDE the repository:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
        # if that index is unreachable: /tmp/hfvenv/bin/pip install torch   (wheel from PyPI)
    /tmp/hfvenv/bin/pip install transformers safetensors

    /tmp/hfvenv/bin/python tools/gen_opt_fixtures.py           # -> tests/fixtures/opt/
    /tmp/hfvenv/bin/python tools/gen_opt_fixtures.py --demo    # -> models/demo/opt-demo/

Fixture models (fp32, fixed seeds):
  tiny-preln           pre-LayerNorm like opt-125m: hidden 64, 4 heads, ffn 256, 3 layers, vocab 1000
  tiny-preln-fp16      the same weights saved in float16 (reference computed in fp32 from them)
  tiny-postln          post-LayerNorm like opt-350m: hidden 64, word_embed_proj_dim 32 (project_in
                       and project_out exist), 4 heads, ffn 256, 2 layers, vocab 1000
  tiny-postln-sharded  the same weights as tiny-postln split into >= 2 shards plus the index

HF initialises matrices with std 0.02, biases 0 and LayerNorm 1/0, which would let bugs in bias or
LayerNorm handling hide. Every parameter is therefore re-drawn: matrices N(0, 1/fan_in), biases
N(0, 0.1^2), LayerNorm weights N(1, 0.2^2) and biases N(0, 0.2^2), token and position embeddings
N(0, s^2) with s per model, and the pre-LN models' last LayerNorm weight around a gain > 1, so the
logits spread over several units. Random models are prone to near-ties and to repeating one token,
so a seed is accepted only when
  - every greedy step's top-2 logit gap exceeds max(1e-3, 0.01 * std of that model's step logits),
  - torch's own bf16 copy, teacher-forced on the fp32 tokens, picks the same token at every step,
  - each sequence's continuation holds at least 3 distinct ids;
otherwise the next seed is tried (the chosen seed is recorded in expected.json).
"""

import argparse
import copy
import hashlib
import inspect
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import safetensors
import torch
import transformers
from safetensors import safe_open
from transformers import OPTConfig, OPTForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "opt")
DEMO_DIR = os.path.join(REPO, "models", "demo", "opt-demo")

PAD_ID, BOS_ID, EOS_ID = 1, 2, 2
PROMPT_LENGTHS = [5, 9, 12]
GREEDY_STEPS = 16
MIN_TOP2_GAP = 1e-3
MIN_RELATIVE_TOP2_GAP = 0.01  # of the std of the step logits
MIN_DISTINCT_TOKENS = 3  # per sequence, over the greedy continuation
FIRST_VALUES = 4  # leading values of each tensor recorded for the reader tests


def opt_config(**kw):
    base = dict(pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                activation_function="relu", dropout=0.0, attention_dropout=0.0,
                attn_implementation="eager")
    base.update(kw)
    return OPTConfig(**base)


# Each spec: OPTConfig arguments, embedding std, and the mean of the last LayerNorm's weight.
TINY_PRELN = dict(config=dict(hidden_size=64, num_attention_heads=4, ffn_dim=256,
                              num_hidden_layers=3, vocab_size=1000, max_position_embeddings=128,
                              word_embed_proj_dim=64, do_layer_norm_before=True),
                  embed_std=0.3, final_ln_gain=2.0)
TINY_POSTLN = dict(config=dict(hidden_size=64, num_attention_heads=4, ffn_dim=256,
                               num_hidden_layers=2, vocab_size=1000, max_position_embeddings=128,
                               word_embed_proj_dim=32, do_layer_norm_before=False),
                   embed_std=0.5, final_ln_gain=1.0)  # post-LN OPT has no last LayerNorm
DEMO = dict(config=dict(hidden_size=128, num_attention_heads=4, ffn_dim=512, num_hidden_layers=4,
                        vocab_size=4096, max_position_embeddings=512, word_embed_proj_dim=128,
                        do_layer_norm_before=True),
            embed_std=0.3, final_ln_gain=2.0)


def build_model(spec, seed):
    """A fresh OPTForCausalLM with every parameter re-drawn (distributions: module docstring)."""
    model = OPTForCausalLM(opt_config(**spec["config"])).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied parameter is listed once
            if name == "model.decoder.final_layer_norm.weight":
                mean, std = spec["final_ln_gain"], 0.2
            elif "layer_norm" in name:
                mean, std = (1.0, 0.2) if name.endswith("weight") else (0.0, 0.2)
            elif "embed_tokens" in name or "embed_positions" in name:
                mean, std = 0.0, spec["embed_std"]
            elif name.endswith("bias"):
                mean, std = 0.0, 0.1
            else:  # a Linear weight [out, in]
                mean, std = 0.0, p.shape[1] ** -0.5
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std + mean)
    assert model.lm_head.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr(), \
        "lm_head must stay tied to embed_tokens"
    return model


def make_prompts(vocab, seed):
    """Left-padded batch: each prompt is BOS followed by random ids >= 4 (clear of special ids)."""
    gen = torch.Generator().manual_seed(seed)
    width = max(PROMPT_LENGTHS)
    ids = torch.full((len(PROMPT_LENGTHS), width), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(PROMPT_LENGTHS), width), dtype=torch.long)
    for i, n in enumerate(PROMPT_LENGTHS):
        body = torch.randint(4, vocab, (n - 1,), generator=gen)
        ids[i, width - n:] = torch.cat([torch.tensor([BOS_ID]), body])
        mask[i, width - n:] = 1
    return ids, mask


def cache_kwarg(model):
    """transformers 5 renamed past_key_values to cache; use whichever this version has."""
    return "cache" if "cache" in inspect.signature(model.model.decoder.forward).parameters \
        else "past_key_values"


def past_of(out):
    for attr in ("cache", "past_key_values"):
        value = getattr(out, attr, None)
        if value is not None:
            return value
    raise RuntimeError("model output carries no KV cache")


@torch.no_grad()
def greedy(model, ids, mask):
    """Prefill, then GREEDY_STEPS greedy tokens through the KV cache (no EOS stop).

    Returns (prefill logits [B, T, V], step logits [S, B, V], tokens [B, S]); step_logits[s] is
    the distribution token s was chosen from (step 0: the prefill's last position)."""
    out = model(input_ids=ids, attention_mask=mask, use_cache=True)
    prefill = out.logits.float()
    past = past_of(out)
    step_logits = [prefill[:, -1, :]]
    tokens = [step_logits[0].argmax(-1)]
    for _ in range(1, GREEDY_STEPS):
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        out = model(input_ids=tokens[-1][:, None], attention_mask=mask, use_cache=True,
                    **{cache_kwarg(model): past})
        past = past_of(out)
        step_logits.append(out.logits[:, -1, :].float())
        tokens.append(step_logits[-1].argmax(-1))
    return prefill, torch.stack(step_logits), torch.stack(tokens, dim=1)


@torch.no_grad()
def teacher_forced_step_logits(model, ids, mask, tokens):
    """Step logits from one full forward over prompt + tokens[:-1] (no cache)."""
    full_ids = torch.cat([ids, tokens[:, :-1]], dim=1)
    full_mask = torch.cat([mask, torch.ones_like(tokens[:, :-1])], dim=1)
    logits = model(input_ids=full_ids, attention_mask=full_mask, use_cache=False).logits.float()
    width = ids.shape[1]
    return logits[:, width - 1:, :].transpose(0, 1)  # [S, B, V]


def top2_gap(logits):
    top = logits.topk(2, dim=-1).values
    return (top[..., 0] - top[..., 1]).min().item()


def check_reference(model, ids, mask):
    """Runs HF and the acceptance checks; returns (reference dict pieces, ok, why)."""
    prefill, steps, tokens = greedy(model, ids, mask)
    # The cached path must agree with a plain full forward (guards the position/mask handling).
    full = teacher_forced_step_logits(model, ids, mask, tokens)
    cache_err = (full - steps).abs().max().item()
    assert cache_err < 1e-4, f"HF cached vs full forward differ by {cache_err}"
    gap = top2_gap(steps)
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    bf16_steps = teacher_forced_step_logits(bf16, ids, mask, tokens)
    bf16_same = bool((bf16_steps.argmax(-1) == steps.argmax(-1)).all())
    bf16_rel = ((bf16_steps - steps).abs().max() / steps.abs().max()).item()
    std = steps.std().item()
    distinct = min(len(set(row)) for row in tokens.tolist())
    info = dict(prefill=prefill, steps=steps, tokens=tokens, min_top2_gap=gap,
                bf16_same_tokens=bf16_same, bf16_max_rel_logit_err=bf16_rel, logit_std=std)
    ok = (gap > max(MIN_TOP2_GAP, MIN_RELATIVE_TOP2_GAP * std) and bf16_same
          and distinct >= MIN_DISTINCT_TOKENS)
    return info, ok, (f"min top-2 gap {gap:.4g} (logit std {std:.3g}), bf16 same tokens "
                      f"{bf16_same}, fewest distinct tokens {distinct}")


def save_hf(model, out_dir, max_shard_size=None):
    """save_pretrained into a scratch dir, then keep config.json and the safetensors files only."""
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = {}
        params = inspect.signature(model.save_pretrained).parameters
        if "safe_serialization" in params:
            kwargs["safe_serialization"] = True
        if max_shard_size is not None:
            kwargs["max_shard_size"] = max_shard_size
        model.save_pretrained(tmp, **kwargs)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        os.makedirs(out_dir)
        kept = []
        for name in sorted(os.listdir(tmp)):
            if name == "config.json" or name.endswith(".safetensors") or \
                    name == "model.safetensors.index.json":
                shutil.copyfile(os.path.join(tmp, name), os.path.join(out_dir, name))
                kept.append(name)
    return kept


def tensor_stats(ckpt_dir):
    """Independent per-tensor check values, read back with the safetensors library."""
    stats = {}
    for name in sorted(os.listdir(ckpt_dir)):
        if not name.endswith(".safetensors"):
            continue
        with safe_open(os.path.join(ckpt_dir, name), framework="pt") as f:
            for key in f.keys():
                t = f.get_tensor(key)
                v = t.double().flatten()
                stats[key] = dict(
                    dtype={torch.float32: "F32", torch.float16: "F16",
                           torch.bfloat16: "BF16"}[t.dtype],
                    shape=list(t.shape), file=name, sum=v.sum().item(),
                    abs_sum=v.abs().sum().item(),
                    first=[float(x) for x in v[:FIRST_VALUES].tolist()])
    return stats


def write_f32(path, tensor):
    arr = np.ascontiguousarray(tensor.detach().cpu().numpy().astype("<f4"))
    arr.tofile(path)
    return hashlib.sha256(arr.tobytes()).hexdigest()


def reference_entry(name, info, ids, mask, seed):
    """Writes the logits .bin files and returns the JSON description of one reference."""
    ref_dir = os.path.join(FIXTURE_DIR, "reference")
    os.makedirs(ref_dir, exist_ok=True)
    width = ids.shape[1]
    rows = [info["prefill"][i, width - n:, :] for i, n in enumerate(PROMPT_LENGTHS)]
    prefill = torch.cat(rows, dim=0)  # [sum(lengths), V]
    prefill_file = f"reference/{name}.prefill_logits.f32.bin"
    greedy_file = f"reference/{name}.greedy_logits.f32.bin"
    prefill_sha = write_f32(os.path.join(FIXTURE_DIR, prefill_file), prefill)
    greedy_sha = write_f32(os.path.join(FIXTURE_DIR, greedy_file), info["steps"])
    return {
        "seed": seed,
        "prefill_logits": {"file": prefill_file, "shape": list(prefill.shape),
                           "sha256": prefill_sha},
        "greedy_logits": {"file": greedy_file, "shape": list(info["steps"].shape),
                          "sha256": greedy_sha},
        "greedy_tokens": info["tokens"].tolist(),
        "min_top2_gap": info["min_top2_gap"],
        "logit_std": info["logit_std"],
        "torch_bf16_same_tokens": info["bf16_same_tokens"],
        "torch_bf16_max_rel_logit_err": info["bf16_max_rel_logit_err"],
    }


def build_accepted(spec, first_seed, ids, mask, also_fp16=False):
    """Tries seeds from first_seed until the fp32 model (and its fp16 rounding) pass the checks."""
    for seed in range(first_seed, first_seed + 500):
        model = build_model(spec, seed)
        info, ok, why = check_reference(model, ids, mask)
        fp16_info = None
        if ok and also_fp16:
            rounded = copy.deepcopy(model).half().float()
            fp16_info, ok, why = check_reference(rounded, ids, mask)
            why = "fp16 copy: " + why
        print(f"  seed {seed}: {why} -> {'ok' if ok else 're-roll'}", file=sys.stderr)
        if ok:
            return model, seed, info, fp16_info
    raise RuntimeError("no acceptable seed in 500 tries")


def checkpoint_entry(dir_name, files, reference, dtype):
    ckpt_dir = os.path.join(FIXTURE_DIR, dir_name)
    stats = tensor_stats(ckpt_dir)
    assert not any(k.startswith("lm_head") for k in stats), \
        f"{dir_name}: lm_head stored separately; the tied weight must not be duplicated"
    return {"dir": dir_name, "files": files, "dtype": dtype, "reference": reference,
            "sharded": "model.safetensors.index.json" in files, "lm_head_stored": False,
            "tensors": stats}


def generate_fixtures():
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    ref_dir = os.path.join(FIXTURE_DIR, "reference")
    if os.path.isdir(ref_dir):
        shutil.rmtree(ref_dir)
    ids, mask = make_prompts(1000, seed=7)
    expected = {
        "format_version": 1,
        "generator": {"script": "tools/gen_opt_fixtures.py", "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "safetensors": safetensors.__version__},
        "prompts": {"pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
                    "lengths": PROMPT_LENGTHS, "input_ids": ids.tolist(),
                    "attention_mask": mask.tolist()},
        "greedy_steps": GREEDY_STEPS,
        "references": {},
        "checkpoints": {},
    }
    refs, ckpts = expected["references"], expected["checkpoints"]

    print("tiny-preln", file=sys.stderr)
    model, seed, info, fp16_info = build_accepted(TINY_PRELN, 1000, ids, mask, also_fp16=True)
    refs["tiny-preln"] = reference_entry("tiny-preln", info, ids, mask, seed)
    refs["tiny-preln-fp16"] = reference_entry("tiny-preln-fp16", fp16_info, ids, mask, seed)
    files = save_hf(model, os.path.join(FIXTURE_DIR, "tiny-preln"))
    ckpts["tiny-preln"] = checkpoint_entry("tiny-preln", files, "tiny-preln", "float32")
    files = save_hf(copy.deepcopy(model).half(), os.path.join(FIXTURE_DIR, "tiny-preln-fp16"))
    ckpts["tiny-preln-fp16"] = checkpoint_entry("tiny-preln-fp16", files, "tiny-preln-fp16",
                                                "float16")

    print("tiny-postln", file=sys.stderr)
    model, seed, info, _ = build_accepted(TINY_POSTLN, 2000, ids, mask)
    refs["tiny-postln"] = reference_entry("tiny-postln", info, ids, mask, seed)
    files = save_hf(model, os.path.join(FIXTURE_DIR, "tiny-postln"))
    ckpts["tiny-postln"] = checkpoint_entry("tiny-postln", files, "tiny-postln", "float32")
    files = save_hf(model, os.path.join(FIXTURE_DIR, "tiny-postln-sharded"),
                    max_shard_size="200KB")
    shards = [f for f in files if f.endswith(".safetensors")]
    assert len(shards) >= 2 and "model.safetensors.index.json" in files, files
    ckpts["tiny-postln-sharded"] = checkpoint_entry("tiny-postln-sharded", files, "tiny-postln",
                                                    "float32")

    with open(os.path.join(FIXTURE_DIR, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(FIXTURE_DIR)
                for n in ns)
    print(f"fixtures: {total / 1e6:.2f} MB in {FIXTURE_DIR}", file=sys.stderr)


def generate_demo():
    """Tiny random pre-LN OPT in float16 for trying `h2oflex generate` end to end."""
    model = build_model(DEMO, 4096)
    os.makedirs(DEMO_DIR, exist_ok=True)
    # Writes only config.json and model.safetensors; the tokenizer files beside them stay.
    with tempfile.TemporaryDirectory() as tmp:
        files = save_hf(model.half(), tmp)
        assert files == ["config.json", "model.safetensors"], files
        for name in files:
            shutil.copyfile(os.path.join(tmp, name), os.path.join(DEMO_DIR, name))
    size = os.path.getsize(os.path.join(DEMO_DIR, "model.safetensors"))
    print(f"demo model: {size / 1e6:.2f} MB in {DEMO_DIR}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--demo", action="store_true",
                        help="write the demo model to models/demo/opt-demo/ instead of fixtures")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if args.demo:
        generate_demo()
    else:
        generate_fixtures()


if __name__ == "__main__":
    main()
