#!/usr/bin/env python3
"""Writes a Llama-shaped GGUF file of any size and storage type, with random weights.

    python tools/write_random_gguf.py --shape llama-7b --type q4_k_m --out model.gguf \
        --tokenizer-from SmolLM2-135M-Instruct.Q4_1.gguf

For benchmarks that need a model larger than memory in a GGUF (weights on disk, llama.cpp
beside h2oflex): no real checkpoint of that size is downloaded. Needs `gguf` and `numpy` (a
throwaway virtual environment). Streams tensor by tensor: memory stays at one tensor.

The blocks are random bytes with scales chosen so that the weights they stand for have a
standard deviation of a few hundredths (a trained model's order), so activations stay finite over many
layers; the text such a model writes is noise. `--tokenizer-from` copies the tokenizer
metadata (`tokenizer.*` keys) of another GGUF, so that llama.cpp can load the file and both
engines see the same vocabulary; the vocabulary size follows it.

Storage types: f16, bf16, q8_0, q4_0, q4_1, q4_k (every matrix Q4_K), q4_k_m (llama.cpp's
Q4_K_M mix: attn_v and ffn_down Q6_K in the layers llama.cpp gives more bits, output Q6_K, the
rest Q4_K).
"""

import argparse
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

SHAPES = {
    # hidden, layers, heads, kv heads, ffn
    "llama-7b": (4096, 32, 32, 32, 11008),
    "llama-3b": (3200, 26, 32, 32, 8640),
    "llama-1b": (2048, 16, 32, 8, 8192),
    "llama-tiny": (256, 4, 8, 4, 768),
}

TYPES = {"f16": T.F16, "bf16": T.BF16, "q8_0": T.Q8_0, "q4_0": T.Q4_0, "q4_1": T.Q4_1,
         "q4_k": T.Q4_K, "q4_k_m": T.Q4_K}

rng = np.random.default_rng(7)
POOL = {}  # type -> a pool of random blocks, sliced for every tensor (writing stays fast)
POOL_BLOCKS = 1 << 18


def f16(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(len(values), 2)


def random_blocks(qtype, n):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    if qtype == T.F16:
        return rng.normal(0, 0.02, n).astype(np.float16).view(np.uint8).reshape(n, 2)
    if qtype == T.BF16:
        bits = rng.normal(0, 0.02, n).astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(np.uint8).reshape(n, 2)
    b = rng.integers(0, 256, (n, size), dtype=np.uint8)
    if qtype == T.Q8_0:  # d * q, q uniform in [-128, 127]: sd 74 d
        b[:, 0:2] = f16(np.full(n, 0.02 / 74))
    elif qtype == T.Q4_0:  # d * (q - 8): sd 4.6 d
        b[:, 0:2] = f16(np.full(n, 0.02 / 4.6))
    elif qtype == T.Q4_1:  # d * q + m, q in [0, 15]: sd 4.6 d, mean 7.5 d + m
        b[:, 0:2] = f16(np.full(n, 0.02 / 4.6))
        b[:, 2:4] = f16(np.full(n, -7.5 * 0.02 / 4.6))
    elif qtype == T.Q4_K:  # d * sc * q - dmin * m, 6-bit sc and m: sd ~ d * 32 * 4.6
        b[:, 0:2] = f16(np.full(n, 0.02 / (32 * 4.6)))
        b[:, 2:4] = f16(np.full(n, 7.5 * 0.02 / (32 * 4.6)))
    elif qtype == T.Q6_K:  # d * scale * (q - 32), int8 scale: sd ~ d * 74 * 18
        b[:, 208:210] = f16(np.full(n, 0.02 / (74 * 18)))
    else:
        raise ValueError(qtype)
    return b


def tensor_bytes(qtype, rows, cols):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    if cols % block:
        sys.exit(f"error: a row of {cols} values is not whole {qtype.name} blocks of {block}")
    n = rows * cols // block
    if qtype not in POOL:
        POOL[qtype] = random_blocks(qtype, POOL_BLOCKS)
    pool = POOL[qtype]
    parts, left = [], n
    while left:
        start = int(rng.integers(0, POOL_BLOCKS))
        take = min(left, POOL_BLOCKS - start)
        parts.append(pool[start:start + take])
        left -= take
    return np.concatenate(parts).reshape(rows, cols // block * size)


def more_bits(layer, layers):
    """The layers llama.cpp's Q4_K_M gives Q6_K attn_v / ffn_down (its use_more_bits rule)."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def read_field(field):
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        sub = field.types[1]
        values = [field.parts[i] for i in field.data]
        if sub == gguf.GGUFValueType.STRING:
            return [bytes(v).decode("utf-8") for v in values], kind, sub
        return [v.tolist()[0] for v in values], kind, sub
    if kind == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8"), kind, None
    return field.parts[field.data[0]].tolist()[0], kind, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--type", choices=sorted(TYPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer-from", help="a GGUF whose tokenizer.* metadata is copied")
    ap.add_argument("--vocab", type=int, default=32000, help="vocabulary size without --tokenizer-from")
    ap.add_argument("--tied", action="store_true", help="no output.weight: the head is token_embd")
    args = ap.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"error: {args.out} exists; not overwritten")

    hidden, layers, heads, kv_heads, ffn = SHAPES[args.shape]
    head_dim = hidden // heads
    tokenizer = []
    vocab = args.vocab
    if args.tokenizer_from:
        reader = gguf.GGUFReader(args.tokenizer_from)
        for key, field in reader.fields.items():
            if key.startswith("tokenizer."):
                tokenizer.append((key, *read_field(field)))
                if key == "tokenizer.ggml.tokens":
                    vocab = len(field.data)

    base = TYPES[args.type]
    mix = args.type == "q4_k_m"
    plan = [("token_embd.weight", vocab, hidden, base)]
    for l in range(layers):
        p = f"blk.{l}."
        six = T.Q6_K if mix and more_bits(l, layers) else base
        plan += [
            (p + "attn_norm.weight", 1, hidden, T.F32),
            (p + "attn_q.weight", heads * head_dim, hidden, base),
            (p + "attn_k.weight", kv_heads * head_dim, hidden, base),
            (p + "attn_v.weight", kv_heads * head_dim, hidden, six),
            (p + "attn_output.weight", hidden, heads * head_dim, base),
            (p + "ffn_norm.weight", 1, hidden, T.F32),
            (p + "ffn_gate.weight", ffn, hidden, base),
            (p + "ffn_up.weight", ffn, hidden, base),
            (p + "ffn_down.weight", hidden, ffn, six),
        ]
    plan.append(("output_norm.weight", 1, hidden, T.F32))
    if not args.tied:
        plan.append(("output.weight", vocab, hidden, T.Q6_K if mix else base))

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(f"random {args.shape} {args.type}")
    w.add_context_length(4096)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(vocab)
    for key, value, kind, sub in tokenizer:
        w.add_key_value(key, value, kind, sub_type=sub)

    def data(name, rows, cols, qtype):
        if qtype == T.F32:
            return np.ones(cols, dtype=np.float32) if rows == 1 else None
        return tensor_bytes(qtype, rows, cols)

    for name, rows, cols, qtype in plan:
        if qtype == T.F32:
            w.add_tensor_info(name, (cols,), np.dtype(np.float32), cols * 4)
        else:
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            w.add_tensor_info(name, (rows, cols // block * size), np.dtype(np.uint8),
                              rows * cols // block * size, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    total = 0
    for name, rows, cols, qtype in plan:
        array = data(name, rows, cols, qtype)
        w.write_tensor_data(array)
        total += array.nbytes
    w.close()
    print(f"{args.out}: {args.shape} {args.type}, vocabulary {vocab}, {total / 1e9:.2f} GB of tensors")


if __name__ == "__main__":
    main()
