#!/usr/bin/env python3
"""The Hugging Face transformers peer: the same OPT shapes as an h2oflex run, timed the same way.

Builds an OPT model with random weights (like h2oflex's `dummy: true`) from the architecture of a
named size, generates `gen_len` tokens greedily for `batch` prompts of `prompt_len` random ids,
and prints one JSON object: prefill and decode latency and throughput in h2oflex's definitions
(prefill tok/s = batch x prompt / prefill s, decode tok/s = batch x (gen - 1) / decode s,
total tok/s = batch x gen / (prefill + decode)).

Prefill is timed as generate() with one new token; decode as a full generate() minus that.
Run it in a throwaway virtual environment with torch (CPU) and transformers:

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch transformers accelerate
    /tmp/peer/bin/python tools/peer_hf.py --model opt-1.3b --batch 8 --prompt-len 512 \
        --gen-len 32 --dtype f32 --threads 2

With --offload-cap (e.g. 8GiB) the model is accelerate's disk offload instead: a checkpoint of
random weights is written once under --offload-dir (safetensors shards, one layer at a time, so
the model never has to fit in RAM; reused by later runs of the same model and dtype) and loaded
with device_map "auto", max_memory {"cpu": cap} and the rest offloaded to disk, which accelerate
reads back module by module on every forward pass. accelerate reads through the page cache, so
the cap bounds the process, not the machine: it only means what it says when the model is
larger than RAM (OPT-13B in bf16, 26 GB, on a 24 GiB machine).
"""

import argparse
import json
import os
import sys
import time

# The architectures of the OPT sizes (the Hugging Face configs' values).
OPT_SIZES = {
    "opt-125m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, ffn_dim=3072),
    "opt-350m": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, ffn_dim=4096,
                     word_embed_proj_dim=512, do_layer_norm_before=False),
    "opt-1.3b": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32, ffn_dim=8192),
    "opt-2.7b": dict(hidden_size=2560, num_hidden_layers=32, num_attention_heads=32,
                     ffn_dim=10240),
    "opt-6.7b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                     ffn_dim=16384),
    "opt-13b": dict(hidden_size=5120, num_hidden_layers=40, num_attention_heads=40, ffn_dim=20480),
}

DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def write_random_checkpoint(cfg, dtype, path):
    """Writes a Hugging Face checkpoint of normal(0, 0.02) weights (biases and norms as
    transformers initialises them) one layer at a time; does nothing when a complete one is
    there (its index is written last)."""
    import torch
    from safetensors.torch import save_file
    from transformers import OPTForCausalLM

    index_path = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index_path):
        return
    os.makedirs(path, exist_ok=True)
    with torch.device("meta"):
        skeleton = OPTForCausalLM(cfg)
    shapes = {k: v.shape for k, v in skeleton.state_dict().items()}
    if cfg.tie_word_embeddings:
        shapes.pop("lm_head.weight", None)
    gen = torch.Generator().manual_seed(1)
    weight_map, shard, shard_bytes, n = {}, {}, 0, 0

    def flush():
        nonlocal shard, shard_bytes, n
        if not shard:
            return
        name = f"model-{n:05d}.safetensors"
        save_file(shard, os.path.join(path, name), metadata={"format": "pt"})
        for k in shard:
            weight_map[k] = name
        shard, shard_bytes, n = {}, 0, n + 1

    for key, shape in shapes.items():
        if key.endswith("bias"):
            t = torch.zeros(shape, dtype=dtype)
        elif "layer_norm" in key:
            t = torch.ones(shape, dtype=dtype)
        else:
            t = torch.empty(shape, dtype=torch.float32).normal_(0.0, 0.02, generator=gen).to(dtype)
        shard[key] = t
        shard_bytes += t.numel() * t.element_size()
        if shard_bytes >= 2 << 30:
            flush()
    flush()
    cfg.save_pretrained(path)
    with open(index_path + ".tmp", "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    os.replace(index_path + ".tmp", index_path)


def summarize_device_map(device_map):
    """How many modules accelerate placed where (e.g. {"cpu": 10, "disk": 33})."""
    counts = {}
    for place in device_map.values():
        counts[str(place)] = counts.get(str(place), 0) + 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(OPT_SIZES))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--gen-len", type=int, default=32)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--offload-cap", "--offload_cap",
                    help="accelerate disk offload with this CPU memory cap (e.g. 8GiB)")
    ap.add_argument("--offload-dir", "--offload_dir",
                    help="where the offloaded checkpoint lives (with --offload-cap)")
    a = ap.parse_args()
    if a.batch < 1 or a.prompt_len < 1 or a.gen_len < 2:
        sys.exit("peer_hf: batch and prompt_len must be >= 1 and gen_len >= 2")
    if bool(a.offload_cap) != bool(a.offload_dir):
        sys.exit("peer_hf: --offload-cap and --offload-dir go together")

    import torch
    from transformers import OPTConfig, OPTForCausalLM

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dtype = getattr(torch, DTYPES[a.dtype])
    cfg = OPTConfig(vocab_size=50272, max_position_embeddings=2048, **OPT_SIZES[a.model])
    torch.manual_seed(1)
    load_s = None
    if a.offload_cap:
        ckpt = os.path.join(a.offload_dir, f"{a.model}-{a.dtype}")
        write_random_checkpoint(cfg, dtype, ckpt)
        start = time.perf_counter()
        model = OPTForCausalLM.from_pretrained(
            ckpt, dtype=dtype, device_map="auto", max_memory={"cpu": a.offload_cap},
            offload_folder=os.path.join(ckpt, "offload")).eval()
        load_s = time.perf_counter() - start
    else:
        model = OPTForCausalLM(cfg).to(dtype).eval()
    ids = torch.randint(4, cfg.vocab_size, (a.batch, a.prompt_len), generator=torch.Generator().manual_seed(1))

    def generate(new_tokens, prompt=None):
        prompt = ids if prompt is None else prompt
        start = time.perf_counter()
        with torch.inference_mode():
            model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                           max_new_tokens=new_tokens,
                           min_new_tokens=new_tokens, do_sample=False, use_cache=True,
                           pad_token_id=1)
        return time.perf_counter() - start

    generate(2, ids[:, :16])  # warm-up: the first calls allocate and pick kernels
    prefill_s = generate(1)
    total_s = generate(a.gen_len)
    decode_s = max(total_s - prefill_s, 1e-9)
    result = {
        "peer": "hf-transformers",
        "torch": torch.__version__,
        "model": a.model,
        "dtype": a.dtype,
        "threads": torch.get_num_threads(),
        "offload": None if not a.offload_cap else {
            "cap": a.offload_cap, "load_s": load_s,
            "device_map": summarize_device_map(getattr(model, "hf_device_map", {}))},
        "batch": a.batch,
        "prompt_len": a.prompt_len,
        "gen_len": a.gen_len,
        "prefill": {"latency_s": prefill_s,
                    "throughput_tok_s": a.batch * a.prompt_len / prefill_s},
        "decode": {"latency_s": decode_s,
                   "throughput_tok_s": a.batch * (a.gen_len - 1) / decode_s},
        "total": {"latency_s": total_s, "throughput_tok_s": a.batch * a.gen_len / total_s},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
