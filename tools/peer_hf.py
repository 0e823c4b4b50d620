#!/usr/bin/env python3
"""The Hugging Face transformers peer: the same OPT shapes as an h2oflex run, timed the same way.

Builds an OPT model with random weights (like h2oflex's `dummy: true`) from the architecture of a
named size, generates `gen_len` tokens greedily for `batch` prompts of `prompt_len` random ids,
and prints one JSON object: prefill and decode latency and throughput in h2oflex's definitions
(prefill tok/s = batch x prompt / prefill s, decode tok/s = batch x (gen - 1) / decode s,
total tok/s = batch x gen / (prefill + decode)).

Prefill is timed as generate() with one new token; decode as a full generate() minus that.
Run it in a throwaway virtual environment with torch (CPU) and transformers:

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch transformers
    /tmp/peer/bin/python tools/peer_hf.py --model opt-1.3b --batch 8 --prompt-len 512 \
        --gen-len 32 --dtype f32 --threads 2
"""

import argparse
import json
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(OPT_SIZES))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--gen-len", type=int, default=32)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", help="also write the result here")
    a = ap.parse_args()
    if a.batch < 1 or a.prompt_len < 1 or a.gen_len < 2:
        sys.exit("peer_hf: batch and prompt_len must be >= 1 and gen_len >= 2")

    import torch
    from transformers import OPTConfig, OPTForCausalLM

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dtype = getattr(torch, DTYPES[a.dtype])
    cfg = OPTConfig(vocab_size=50272, max_position_embeddings=2048, **OPT_SIZES[a.model])
    torch.manual_seed(1)
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
