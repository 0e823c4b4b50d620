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
import json
import os
import shutil
import sys
import tempfile

import safetensors
import torch
import transformers
from transformers import OPTConfig, OPTForCausalLM

from hf_fixture_common import (GREEDY_STEPS, PROMPT_LENGTHS, check_reference, dir_size,
                               make_prompts, reference_entry, save_hf, tensor_stats)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "opt")
DEMO_DIR = os.path.join(REPO, "models", "demo", "opt-demo")

PAD_ID, BOS_ID, EOS_ID = 1, 2, 2


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


def build_accepted(spec, first_seed, ids, mask, also_fp16=False):
    """Tries seeds from first_seed until the fp32 model (and its fp16 rounding) pass the checks."""
    for seed in range(first_seed, first_seed + 500):
        model = build_model(spec, seed)
        info, ok, why = check_reference(model, ids, mask, model.model.decoder.forward)
        fp16_info = None
        if ok and also_fp16:
            rounded = copy.deepcopy(model).half().float()
            fp16_info, ok, why = check_reference(rounded, ids, mask,
                                                  rounded.model.decoder.forward)
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
    ids, mask = make_prompts(1000, seed=7, pad_id=PAD_ID, bos_id=BOS_ID)
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
    refs["tiny-preln"] = reference_entry(FIXTURE_DIR, "tiny-preln", info, ids, seed)
    refs["tiny-preln-fp16"] = reference_entry(FIXTURE_DIR, "tiny-preln-fp16", fp16_info, ids,
                                              seed)
    files = save_hf(model, os.path.join(FIXTURE_DIR, "tiny-preln"))
    ckpts["tiny-preln"] = checkpoint_entry("tiny-preln", files, "tiny-preln", "float32")
    files = save_hf(copy.deepcopy(model).half(), os.path.join(FIXTURE_DIR, "tiny-preln-fp16"))
    ckpts["tiny-preln-fp16"] = checkpoint_entry("tiny-preln-fp16", files, "tiny-preln-fp16",
                                                "float16")

    print("tiny-postln", file=sys.stderr)
    model, seed, info, _ = build_accepted(TINY_POSTLN, 2000, ids, mask)
    refs["tiny-postln"] = reference_entry(FIXTURE_DIR, "tiny-postln", info, ids, seed)
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
    total = dir_size(FIXTURE_DIR)
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
