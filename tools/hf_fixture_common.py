"""Helpers shared by the Hugging Face reference-fixture generators.

Used by tools/gen_opt_fixtures.py and tools/gen_family_fixtures.py (their headers say how to set
up the throwaway venv). Nothing here knows about a particular architecture: prompts, the greedy
loop through HF's KV cache, the seed-acceptance checks, saving checkpoints and writing the
reference files.
"""

import copy
import hashlib
import inspect
import os
import shutil
import tempfile

import numpy as np
import torch
from safetensors import safe_open

PROMPT_LENGTHS = [5, 9, 12]
GREEDY_STEPS = 16
MIN_TOP2_GAP = 1e-3
MIN_RELATIVE_TOP2_GAP = 0.01  # of the std of the step logits
MIN_DISTINCT_TOKENS = 3  # per sequence, over the greedy continuation
FIRST_VALUES = 4  # leading values of each tensor recorded for the reader tests


def make_prompts(vocab, seed, pad_id, bos_id):
    """Left-padded batch: each prompt is BOS followed by random ids >= 4 (clear of special ids)."""
    gen = torch.Generator().manual_seed(seed)
    width = max(PROMPT_LENGTHS)
    ids = torch.full((len(PROMPT_LENGTHS), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(PROMPT_LENGTHS), width), dtype=torch.long)
    for i, n in enumerate(PROMPT_LENGTHS):
        body = torch.randint(4, vocab, (n - 1,), generator=gen)
        ids[i, width - n:] = torch.cat([torch.tensor([bos_id]), body])
        mask[i, width - n:] = 1
    return ids, mask


def positions_from_mask(mask):
    """What generate() derives: a real token's position is its index among the real tokens
    (cumsum(mask) - 1); pads get 0 (they are masked out as keys, their rows are never read)."""
    return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)


def cache_kwarg(forward):
    """transformers 5 renamed past_key_values to cache; use whichever this forward takes."""
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def past_of(out):
    for attr in ("cache", "past_key_values"):
        value = getattr(out, attr, None)
        if value is not None:
            return value
    raise RuntimeError("model output carries no KV cache")


@torch.no_grad()
def greedy(model, ids, mask, cache_forward, explicit_positions=False):
    """Prefill, then GREEDY_STEPS greedy tokens through the KV cache (no EOS stop).

    The attention mask grows by a 1 per step. With explicit_positions, position_ids are passed:
    positions_from_mask for the prefill, then the previous position + 1 per step (as generate
    does). Returns (prefill logits [B, T, V], step logits [S, B, V], tokens [B, S]);
    step_logits[s] is the distribution token s was chosen from (step 0: the prefill's last
    position)."""
    extra = {}
    if explicit_positions:
        pos = positions_from_mask(mask)
        extra["position_ids"] = pos
    out = model(input_ids=ids, attention_mask=mask, use_cache=True, **extra)
    prefill = out.logits.float()
    past = past_of(out)
    step_logits = [prefill[:, -1, :]]
    tokens = [step_logits[0].argmax(-1)]
    for _ in range(1, GREEDY_STEPS):
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        if explicit_positions:
            pos = pos[:, -1:] + 1
            extra["position_ids"] = pos
        out = model(input_ids=tokens[-1][:, None], attention_mask=mask, use_cache=True,
                    **{cache_kwarg(cache_forward): past}, **extra)
        past = past_of(out)
        step_logits.append(out.logits[:, -1, :].float())
        tokens.append(step_logits[-1].argmax(-1))
    return prefill, torch.stack(step_logits), torch.stack(tokens, dim=1)


@torch.no_grad()
def teacher_forced_step_logits(model, ids, mask, tokens, explicit_positions=False):
    """Step logits from one full forward over prompt + tokens[:-1] (no cache)."""
    full_ids = torch.cat([ids, tokens[:, :-1]], dim=1)
    full_mask = torch.cat([mask, torch.ones_like(tokens[:, :-1])], dim=1)
    extra = {"position_ids": positions_from_mask(full_mask)} if explicit_positions else {}
    logits = model(input_ids=full_ids, attention_mask=full_mask, use_cache=False,
                   **extra).logits.float()
    width = ids.shape[1]
    return logits[:, width - 1:, :].transpose(0, 1)  # [S, B, V]


def top2_gap(logits):
    top = logits.topk(2, dim=-1).values
    return (top[..., 0] - top[..., 1]).min().item()


def plain_bf16_copy(model):
    return copy.deepcopy(model).to(torch.bfloat16)


def check_reference(model, ids, mask, cache_forward, explicit_positions=False,
                    bf16_copy=plain_bf16_copy):
    """Runs HF and the acceptance checks; returns (reference dict pieces, ok, why).

    bf16_copy(model) makes torch's bf16 model for the same-tokens rule."""
    prefill, steps, tokens = greedy(model, ids, mask, cache_forward, explicit_positions)
    # The cached path must agree with a plain full forward (guards the position/mask handling).
    full = teacher_forced_step_logits(model, ids, mask, tokens, explicit_positions)
    cache_err = (full - steps).abs().max().item()
    assert cache_err < 1e-4, f"HF cached vs full forward differ by {cache_err}"
    gap = top2_gap(steps)
    bf16 = bf16_copy(model)
    bf16_steps = teacher_forced_step_logits(bf16, ids, mask, tokens, explicit_positions)
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


def reference_entry(fixture_dir, name, info, ids, seed):
    """Writes the logits .bin files under fixture_dir/reference/ and returns the JSON description
    of one reference."""
    ref_dir = os.path.join(fixture_dir, "reference")
    os.makedirs(ref_dir, exist_ok=True)
    width = ids.shape[1]
    rows = [info["prefill"][i, width - n:, :] for i, n in enumerate(PROMPT_LENGTHS)]
    prefill = torch.cat(rows, dim=0)  # [sum(lengths), V]
    prefill_file = f"reference/{name}.prefill_logits.f32.bin"
    greedy_file = f"reference/{name}.greedy_logits.f32.bin"
    prefill_sha = write_f32(os.path.join(fixture_dir, prefill_file), prefill)
    greedy_sha = write_f32(os.path.join(fixture_dir, greedy_file), info["steps"])
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


def dir_size(path):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns)
