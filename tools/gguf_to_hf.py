#!/usr/bin/env python3
"""Turns a llama-architecture GGUF file into a Hugging Face model directory that h2oflex (and
transformers) read: config.json, model.safetensors (f32), tokenizer.json, tokenizer_config.json
and generation_config.json.

    python tools/gguf_to_hf.py MODEL.gguf OUT_DIR

Needs only `gguf`, `numpy` and `safetensors` (no torch); tools/fetch_smollm2.sh runs it in a
throwaway virtual environment. OUT_DIR must not exist yet (nothing is ever overwritten). It is
the bridge until h2oflex reads GGUF itself.

The facts it follows:
- Weights: every tensor is dequantized to f32 with gguf-py's own `gguf.quants.dequantize`, the
  reference transformers' GGUF loader uses too (Q4_1: per block of 32, value = q * d + m with the
  f16 scale d and minimum m; Q8_0: q * d). No rounding beyond the f32 result.
- llama.cpp's converter permutes the rows of attn_q and attn_k (each head's rotary halves
  interleaved, for its rotate-pairs RoPE); the permutation is undone here exactly as transformers'
  GGUF loader undoes it (reshape rows to (heads, 2, head_dim / 2), swap the two middle axes),
  with the query head count for q and the KV head count for k.
- Tensor names: llama.cpp's `blk.N.*` map to LlamaForCausalLM's `model.layers.N.*`; a missing
  `output.weight` means tied embeddings (tie_word_embeddings: true, no lm_head tensor written).
- config.json: the `llama.*` metadata under Hugging Face's LlamaConfig keys; rms_norm_eps is the
  shortest decimal that is the same f32 as the stored value.
- tokenizer.json: a byte-level BPE (`tokenizer.ggml.model` = gpt2) with the vocabulary and merges
  of `tokenizer.ggml.tokens` / `tokenizer.ggml.merges` in their stored order; the pre-tokenizer
  named by `tokenizer.ggml.pre` as llama.cpp defines it: `smollm` (and `default`/`gpt-2`) is
  GPT-2's ByteLevel split, `smollm` first splitting every digit off (Digits, individual_digits),
  as SmolLM2's own tokenizer.json does; a ByteLevel decoder. Tokens of type CONTROL (3) are
  special added tokens, USER_DEFINED (4) plain added tokens (`tokenizer.ggml.token_type`).
- tokenizer_config.json: bos/eos/unk/pad tokens from `tokenizer.ggml.*_token_id`, add_bos_token
  from `tokenizer.ggml.add_bos_token`, and `chat_template` from `tokenizer.chat_template`.
"""

import argparse
import json
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize
from safetensors.numpy import save_file

# GGUF token types (llama.cpp's llama_token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
PRE_TOKENIZERS = {
    "default": BYTE_LEVEL,
    "gpt-2": BYTE_LEVEL,
    "smollm": {
        "type": "Sequence",
        "pretokenizers": [{"type": "Digits", "individual_digits": True}, BYTE_LEVEL],
    },
}

LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
TOP_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def fail(msg):
    print(f"gguf_to_hf: {msg}", file=sys.stderr)
    sys.exit(2)


def field(reader, key, default=None, required=True):
    f = reader.fields.get(key)
    if f is None:
        if required and default is None:
            fail(f"{reader.path}: metadata key '{key}' is missing")
        return default
    return f.contents()


def hf_name(gguf_name):
    if gguf_name in TOP_NAMES:
        return TOP_NAMES[gguf_name]
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in LAYER_NAMES and parts[3] == "weight":
        return f"model.layers.{int(parts[1])}.{LAYER_NAMES[parts[2]]}.weight"
    fail(f"tensor '{gguf_name}' has no LlamaForCausalLM name (not a llama checkpoint?)")


def unpermute_rotary_rows(w, heads):
    """Undoes llama.cpp's q/k row permutation (transformers' _reverse_permute_weights)."""
    half = w.shape[0] // heads // 2
    return w.reshape(heads, half, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


def f32_decimal(x):
    """The shortest decimal that reads back as the same f32."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


def convert_weights(reader, heads, kv_heads):
    tensors = {}
    for t in reader.tensors:
        w = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        expected = tuple(int(d) for d in reversed(t.shape))
        if w.shape != expected:
            w = w.reshape(expected)
        if t.name.endswith("attn_q.weight"):
            w = unpermute_rotary_rows(w, heads)
        elif t.name.endswith("attn_k.weight"):
            w = unpermute_rotary_rows(w, kv_heads)
        tensors[hf_name(t.name)] = np.ascontiguousarray(w)
    return tensors


def llama_config(reader, tensors):
    arch = field(reader, "general.architecture")
    if arch != "llama":
        fail(f"{reader.path}: general.architecture is '{arch}'; only llama is converted")
    k = lambda name, **kw: field(reader, f"llama.{name}", **kw)
    heads = int(k("attention.head_count"))
    kv_heads = int(k("attention.head_count_kv", default=heads))
    hidden = int(k("embedding_length"))
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    head_dim = int(k("rope.dimension_count", default=hidden // heads))
    if head_dim != hidden // heads:
        fail(f"{reader.path}: rope.dimension_count {head_dim} is not hidden / heads (partial rotary)")
    if field(reader, "llama.rope.scaling.type", required=False) not in (None, "none"):
        fail(f"{reader.path}: rope scaling is not converted")
    tied = "lm_head.weight" not in tensors
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": int(k("feed_forward_length")),
        "num_hidden_layers": int(k("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": int(k("context_length")),
        "rms_norm_eps": f32_decimal(k("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(k("rope.freq_base", default=10000.0)),
        "rope_scaling": None,
        "vocab_size": vocab,
        "tie_word_embeddings": tied,
        "attention_bias": False,
        "mlp_bias": False,
        "torch_dtype": "float32",
    }
    for gguf_key, hf_key in (("bos", "bos"), ("eos", "eos"), ("padding", "pad")):
        tid = field(reader, f"tokenizer.ggml.{gguf_key}_token_id", required=False)
        if tid is not None:
            cfg[f"{hf_key}_token_id"] = int(tid)
    return cfg


def tokenizer_files(reader):
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        fail(f"{reader.path}: tokenizer.ggml.model is '{model}'; only byte-level BPE (gpt2) is converted")
    pre = field(reader, "tokenizer.ggml.pre", default="default")
    if pre not in PRE_TOKENIZERS:
        fail(f"{reader.path}: tokenizer.ggml.pre '{pre}' is not one of {sorted(PRE_TOKENIZERS)}")
    tokens = list(field(reader, "tokenizer.ggml.tokens"))
    types = [int(t) for t in field(reader, "tokenizer.ggml.token_type")]
    merges = list(field(reader, "tokenizer.ggml.merges"))
    if len(types) != len(tokens):
        fail(f"{reader.path}: {len(tokens)} tokens but {len(types)} token types")
    added = []
    for i, (tok, kind) in enumerate(zip(tokens, types)):
        if kind in (TOKEN_CONTROL, TOKEN_USER_DEFINED):
            added.append({"id": i, "content": tok, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": kind != TOKEN_CONTROL,
                          "special": kind == TOKEN_CONTROL})
        elif kind not in (TOKEN_NORMAL,):
            fail(f"{reader.path}: token {i} ('{tok}') has type {kind}, which is not converted")
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": PRE_TOKENIZERS[pre],
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {tok: i for i, tok in enumerate(tokens)}, "merges": merges},
    }

    def token(key):
        tid = field(reader, f"tokenizer.ggml.{key}_token_id", required=False)
        return None if tid is None else tokens[int(tid)]

    config = {
        "tokenizer_class": "GPT2Tokenizer",
        "add_bos_token": bool(field(reader, "tokenizer.ggml.add_bos_token", default=False,
                                    required=False)),
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(field(reader, "llama.context_length")),
        "bos_token": token("bos"),
        "eos_token": token("eos"),
        "unk_token": token("unknown"),
        "pad_token": token("padding"),
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                 for a in added},
    }
    template = field(reader, "tokenizer.chat_template", required=False)
    if template is not None:
        config["chat_template"] = template
    return tokenizer, config


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf", help="the GGUF file (llama architecture)")
    ap.add_argument("out", help="directory to create (must not exist)")
    args = ap.parse_args()
    if os.path.exists(args.out):
        fail(f"'{args.out}' exists; refusing to overwrite it")
    try:
        reader = GGUFReader(args.gguf)
    except (OSError, ValueError) as e:
        fail(f"'{args.gguf}': not a readable GGUF file ({e})")
    heads = int(field(reader, "llama.attention.head_count"))
    kv_heads = int(field(reader, "llama.attention.head_count_kv", default=heads))
    tensors = convert_weights(reader, heads, kv_heads)
    config = llama_config(reader, tensors)
    tokenizer, tokenizer_config = tokenizer_files(reader)
    generation = {k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config}

    os.makedirs(args.out)
    save_file(tensors, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    write_json(os.path.join(args.out, "config.json"), config)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config)
    write_json(os.path.join(args.out, "generation_config.json"), generation)
    n = sum(t.size for t in tensors.values())
    print(f"gguf_to_hf: {len(tensors)} tensors, {n} parameters (f32) -> {args.out}")


if __name__ == "__main__":
    main()
