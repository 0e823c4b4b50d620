#!/usr/bin/env python3
"""Writes the GGUF test fixtures and their oracles (tests/fixtures/gguf, tools/fuzz/corpus/gguf_header).

    python tools/gen_gguf_fixtures.py

Needs `gguf`, `numpy`, `torch` and `transformers` (a throwaway virtual environment). Seeded:
running it again writes the same files.

- blocks.json: random blocks of every type the engine unpacks (F16, BF16, Q8_0, Q4_0, Q4_1,
  Q4_K, Q6_K) with the f32 values `gguf.quants.dequantize` gives for them, and random f32
  blocks with the bytes `gguf.quants.quantize` gives (Q8_0, Q4_0, Q4_1, F16, BF16).
- llama-*.gguf, qwen2-*.gguf: tiny models with random weights, written by the `gguf` package's
  writer as llama.cpp's converter writes them (llama: attn_q / attn_k rows permuted; qwen2: not
  permuted, q/k/v biases), in several storage types, tied and untied; expected.json holds, for one prompt each, the
  logits transformers computes loading the same file (`from_pretrained(dir, gguf_file=...)`,
  f32) after the prompt and after each of its greedy tokens.
- gptneox-*.gguf: tiny GPT-NeoX models (partial rotary, parallel and sequential residual),
  random HF GPTNeoXForCausalLM weights written as llama.cpp's converter writes them: the fused
  query_key_value rows regrouped from HF's per-head [q, k, v] to [all q; all k; all v]. transformers
  has no GGUF loader for gpt-neox, so expected-neox.json holds the logits of the HF model itself
  with the values the file stores (each tensor dequantized by gguf.quants and loaded back).
- llama2-spm.gguf (+ tests/fixtures/tokenizer-corpus/llama2-gguf.jsonl): the SentencePiece
  tokenizer of tests/fixtures/tokenizer-llama2 as `tokenizer.ggml.model` llama metadata (tokens,
  scores, token types), with the ids and decoded text transformers gives for the corpus slice
  loading that file (`AutoTokenizer.from_pretrained(dir, gguf_file=...)`), and the parts of the
  tokenizer.json transformers builds from it (llama2-spm-transformers.json: merges by hash).
- tools/fuzz/corpus/gguf_header/: small GGUF files for the reader's fuzz target (every
  metadata type, nested arrays, version 2 and 3, one tensor of each readable type).
"""

import hashlib
import json
import os
import re
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf")
CORPUS = os.path.join(ROOT, "tools", "fuzz", "corpus", "gguf_header")

rng = np.random.default_rng(47)


def f16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(len(values), 2)


def random_blocks(qtype, n):
    """n random blocks of qtype, as bytes, with finite scales of a weight's magnitude."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    if qtype == T.F16:
        return rng.normal(0, 1, n).astype(np.float16).view(np.uint8).reshape(n, 2)
    if qtype == T.BF16:
        return (rng.normal(0, 1, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(n, 2)
    b = rng.integers(0, 256, (n, size), dtype=np.uint8)
    if qtype in (T.Q8_0, T.Q4_0):
        b[:, 0:2] = f16_bytes(rng.normal(0, 0.01, n))
    elif qtype == T.Q4_1:
        b[:, 0:2] = f16_bytes(rng.uniform(0, 0.01, n))
        b[:, 2:4] = f16_bytes(rng.normal(0, 0.05, n))
    elif qtype == T.Q4_K:
        b[:, 0:2] = f16_bytes(rng.uniform(0, 1e-3, n))
        b[:, 2:4] = f16_bytes(rng.uniform(0, 1e-3, n))
    elif qtype == T.Q6_K:
        b[:, 208:210] = f16_bytes(rng.uniform(-1e-4, 1e-4, n))
    else:
        raise ValueError(qtype)
    return b


def hex_f32(values):
    return np.ascontiguousarray(values, dtype=np.float32).tobytes().hex()


def block_fixture():
    unpack = {}
    for qtype in (T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q4_K, T.Q6_K):
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        n = 8 if block > 1 else 64
        blocks = random_blocks(qtype, n)
        values = dequantize(blocks.reshape(-1), qtype).reshape(-1)
        assert values.size == n * block
        unpack[qtype.name] = {"blocks": blocks.tobytes().hex(), "values": hex_f32(values)}
    pack = {}
    for qtype in (T.Q8_0, T.Q4_0, T.Q4_1, T.F16, T.BF16):
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        x = rng.normal(0, 1, (8, max(block, 32))).astype(np.float32)
        x[0, 3] = 0  # a zero, and a block of zeros (scale 0)
        x[1] = 0
        packed = quantize(x, qtype)
        pack[qtype.name] = {"values": hex_f32(x), "blocks": np.ascontiguousarray(packed).view(np.uint8).tobytes().hex()}
    return {"unpack": unpack, "pack": pack}


# llama.cpp's LlamaModel.permute: each head's rows (half 0, half 1) interleaved pair by pair.
def permute(w, heads):
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def encode(w, qtype):
    """(data, raw_dtype) for GGUFWriter.add_tensor."""
    if qtype == T.F32:
        return w.astype(np.float32), None
    if qtype in (T.Q4_K, T.Q6_K):
        # No reference quantizer in gguf-py: random blocks stand for the weights (the oracle is
        # what these blocks dequantize to, for both sides).
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        rows, cols = w.shape
        return random_blocks(qtype, rows * cols // block).reshape(rows, cols // block * size), qtype
    return quantize(w.astype(np.float32), qtype), qtype


def model_specs():
    # name, architecture, storage types, rms_norm_eps, rope theta
    return [
        ("llama-q8_0-untied", "llama", dict(attn=T.Q8_0, mlp=T.Q8_0, down=[T.Q8_0, T.Q8_0], embd=T.Q8_0, out=T.Q8_0), 1e-5, 10000.0),
        ("llama-q4_0-tied", "llama", dict(attn=T.Q4_0, mlp=T.Q4_0, down=[T.Q4_0, T.Q4_0], embd=T.Q4_0, out=None), 1e-6, 500000.0),
        ("llama-q4_k-q6_k", "llama", dict(attn=T.Q4_1, mlp=T.Q4_1, down=[T.Q4_K, T.Q6_K], embd=T.Q8_0, out=T.Q4_1), 1e-5, 100000.0),
        ("llama-f16-bf16-tied", "llama", dict(attn=T.F16, mlp=T.BF16, down=[T.F16, T.BF16], embd=T.F16, out=None), 1e-5, 10000.0),
        # Qwen2: q/k/v biases, and llama.cpp's converter does not permute its q / k rows.
        ("qwen2-q8_0-tied", "qwen2", dict(attn=T.Q8_0, mlp=T.Q8_0, down=[T.Q8_0, T.Q8_0], embd=T.Q8_0, out=None), 1e-6, 1000000.0),
    ]


HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, VOCAB, CONTEXT = 64, 4, 2, 256, 2, 96, 64


def write_model(path, arch, types, eps, theta):
    head_dim = HIDDEN // HEADS
    permuted = arch == "llama"
    w = gguf.GGUFWriter(path, arch)
    w.add_name(os.path.basename(path))
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(eps)
    w.add_rope_freq_base(theta)
    w.add_vocab_size(VOCAB)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def add(name, array, qtype):
        data, raw = encode(array, qtype)
        if raw is None:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=raw)

    normal = lambda *shape: rng.normal(0, 0.08, shape).astype(np.float32)
    add("token_embd.weight", normal(VOCAB, HIDDEN), types["embd"])
    for l in range(LAYERS):
        p = f"blk.{l}."
        add(p + "attn_norm.weight", rng.uniform(0.8, 1.2, HIDDEN).astype(np.float32), T.F32)
        q, k = normal(HEADS * head_dim, HIDDEN), normal(KV_HEADS * head_dim, HIDDEN)
        add(p + "attn_q.weight", permute(q, HEADS) if permuted else q, types["attn"])
        add(p + "attn_k.weight", permute(k, KV_HEADS) if permuted else k, types["attn"])
        add(p + "attn_v.weight", normal(KV_HEADS * head_dim, HIDDEN), types["attn"])
        if arch == "qwen2":
            for name, rows in (("attn_q", HEADS), ("attn_k", KV_HEADS), ("attn_v", KV_HEADS)):
                add(p + name + ".bias", normal(rows * head_dim), T.F32)
        add(p + "attn_output.weight", normal(HIDDEN, HEADS * head_dim), types["attn"])
        add(p + "ffn_norm.weight", rng.uniform(0.8, 1.2, HIDDEN).astype(np.float32), T.F32)
        add(p + "ffn_gate.weight", normal(FFN, HIDDEN), types["mlp"])
        add(p + "ffn_up.weight", normal(FFN, HIDDEN), types["mlp"])
        add(p + "ffn_down.weight", normal(HIDDEN, FFN), types["down"][l])
    add("output_norm.weight", rng.uniform(0.8, 1.2, HIDDEN).astype(np.float32), T.F32)
    if types["out"] is not None:
        add("output.weight", normal(VOCAB, HIDDEN), types["out"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def transformers_reference(path, prompt, steps):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                 torch_dtype=torch.float32)
    model.eval()
    ids = list(prompt)
    logits, greedy = [], []
    with torch.no_grad():
        for _ in range(steps):
            out = model(torch.tensor([ids])).logits[0, -1].float().numpy()
            logits.append([float(v) for v in out])
            greedy.append(int(out.argmax()))
            ids.append(greedy[-1])
    return {"tied": bool(model.config.tie_word_embeddings), "logits": logits, "greedy_tokens": greedy}


NEOX_HIDDEN, NEOX_HEADS, NEOX_FFN, NEOX_LAYERS, NEOX_VOCAB, NEOX_CONTEXT = 64, 4, 256, 2, 96, 64


def neox_specs():
    # name, storage types (matrices, LM head), use_parallel_residual, rotary_pct, rope theta
    return [
        ("gptneox-q8_0-parallel", dict(mat=T.Q8_0, out=T.Q8_0, embd=T.Q8_0), True, 0.25, 10000.0),
        ("gptneox-f16-sequential", dict(mat=T.F16, out=T.F32, embd=T.F16), False, 0.5, 10000.0),
    ]


# llama.cpp's GPTNeoXModel.modify_tensors: HF's query_key_value rows, per head [q, k, v], regrouped
# as [q of every head; k; v] (the same for the bias).
def neox_qkv_to_gguf(w, heads):
    return w.reshape(heads, 3, w.shape[0] // heads // 3, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)


def neox_qkv_from_gguf(w, heads):
    return w.reshape(3, heads, w.shape[0] // heads // 3, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)


def stored_values(data, raw, shape):
    """What a GGUF reader unpacks from (data, raw_dtype): the oracle's weights."""
    if raw is None:
        return np.asarray(data, dtype=np.float32).reshape(shape)
    return dequantize(np.asarray(data), raw).astype(np.float32).reshape(shape)


def write_neox(path, types, parallel, rotary_pct, theta, prompt, steps):
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(4747)
    config = GPTNeoXConfig(vocab_size=NEOX_VOCAB, hidden_size=NEOX_HIDDEN, num_hidden_layers=NEOX_LAYERS,
                           num_attention_heads=NEOX_HEADS, intermediate_size=NEOX_FFN,
                           max_position_embeddings=NEOX_CONTEXT, rotary_pct=rotary_pct,
                           rotary_emb_base=theta, use_parallel_residual=parallel, layer_norm_eps=1e-5,
                           tie_word_embeddings=False, bos_token_id=0, eos_token_id=0, hidden_act="gelu")
    model = GPTNeoXForCausalLM(config).float().eval()
    with torch.no_grad():
        for p in model.parameters():  # random norms and biases too, not HF's ones and zeros
            p.copy_(torch.randn_like(p) * 0.08)
        for name, p in model.named_parameters():
            if "layernorm" in name or "layer_norm" in name:
                p.copy_(torch.rand_like(p) * 0.4 + 0.8 if name.endswith("weight") else torch.randn_like(p) * 0.05)
    head_dim = NEOX_HIDDEN // NEOX_HEADS
    w = gguf.GGUFWriter(path, "gptneox")
    w.add_name(os.path.basename(path))
    w.add_context_length(NEOX_CONTEXT)
    w.add_embedding_length(NEOX_HIDDEN)
    w.add_block_count(NEOX_LAYERS)
    w.add_feed_forward_length(NEOX_FFN)
    w.add_rope_dimension_count(int(rotary_pct * head_dim))
    w.add_head_count(NEOX_HEADS)
    w.add_parallel_residual(parallel)
    w.add_layer_norm_eps(1e-5)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)

    names = {"gpt_neox.embed_in.weight": ("token_embd.weight", "embd"),
             "gpt_neox.final_layer_norm.weight": ("output_norm.weight", None),
             "gpt_neox.final_layer_norm.bias": ("output_norm.bias", None),
             "embed_out.weight": ("output.weight", "out"),
             "lm_head.weight": ("output.weight", "out")}  # transformers 5's name for embed_out
    layer_names = {"input_layernorm": "attn_norm", "attention.query_key_value": "attn_qkv",
                   "attention.dense": "attn_output", "post_attention_layernorm": "ffn_norm",
                   "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"}
    state = model.state_dict()
    loaded = {}
    for hf_name, tensor in state.items():
        if hf_name in names:
            gguf_name, kind = names[hf_name]
        else:
            m = re.match(r"gpt_neox\.layers\.(\d+)\.(.*)\.(weight|bias)$", hf_name)
            gguf_name = f"blk.{m.group(1)}.{layer_names[m.group(2)]}.{m.group(3)}"
            kind = "mat" if tensor.dim() == 2 else None
        values = tensor.numpy().astype(np.float32)
        qkv = ".attn_qkv." in gguf_name
        if qkv:
            values = neox_qkv_to_gguf(values, NEOX_HEADS)
        data, raw = encode(values, types[kind] if kind else T.F32)
        if raw is None:
            w.add_tensor(gguf_name, data)
        else:
            w.add_tensor(gguf_name, data, raw_dtype=raw)
        back = stored_values(data, raw, values.shape)
        loaded[hf_name] = torch.from_numpy(neox_qkv_from_gguf(back, NEOX_HEADS) if qkv else back)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model.load_state_dict(loaded, strict=True)
    ids = list(prompt)
    logits, greedy = [], []
    with torch.no_grad():
        for _ in range(steps):
            out = model(torch.tensor([ids])).logits[0, -1].float().numpy()
            logits.append([float(v) for v in out])
            greedy.append(int(out.argmax()))
            ids.append(greedy[-1])
    return {"parallel_residual": parallel, "rot_dim": int(rotary_pct * head_dim), "logits": logits,
            "greedy_tokens": greedy}


def neox_fixtures():
    expected = {"prompt": [3, 17, 42, 8, 91, 55, 23], "steps": 5, "models": {}}
    for name, types, parallel, rotary_pct, theta in neox_specs():
        path = os.path.join(OUT, name + ".gguf")
        if os.path.exists(path):
            os.remove(path)
        ref = write_neox(path, types, parallel, rotary_pct, theta, expected["prompt"], expected["steps"])
        expected["models"][name] = ref
        print(f"{name}: {os.path.getsize(path)} bytes, greedy {ref['greedy_tokens']}")
    with open(os.path.join(OUT, "expected-neox.json"), "w") as f:
        json.dump(expected, f)
        f.write("\n")


TOKENIZER_FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def spm_token_lists(root):
    """tokens, scores and token types (llama.cpp's SentencePiece metadata) of a tokenizer.json
    holding a SentencePiece BPE (byte_fallback, <0xNN> tokens). The file has no scores: each
    piece gets minus its id, as SentencePiece's BPE trainer scores pieces (its merges are learnt in
    id order), so merging the best-scored pair is merging by the file's merge order."""
    vocab = root["model"]["vocab"]
    added = {t["id"]: t for t in root["added_tokens"]}
    size = max(list(vocab.values()) + list(added)) + 1
    tokens = [None] * size
    for token, i in vocab.items():
        tokens[i] = token
    for i, t in added.items():
        tokens[i] = t["content"]
    scores, types = [], []
    unk = root["model"].get("unk_token")
    for i, token in enumerate(tokens):
        if token == unk:
            kind = gguf.TokenType.UNKNOWN
        elif i in added:
            kind = gguf.TokenType.CONTROL if added[i]["special"] else gguf.TokenType.USER_DEFINED
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", token):
            kind = gguf.TokenType.BYTE
        else:
            kind = gguf.TokenType.NORMAL
        types.append(int(kind))
        scores.append(float(-i) if kind == gguf.TokenType.NORMAL else 0.0)
    return tokens, scores, types


def write_spm_tokenizer(path, fixture):
    root = json.load(open(os.path.join(TOKENIZER_FIXTURES, fixture, "tokenizer.json"), encoding="utf-8"))
    config = json.load(open(os.path.join(TOKENIZER_FIXTURES, fixture, "tokenizer_config.json"), encoding="utf-8"))
    tokens, scores, types = spm_token_lists(root)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(os.path.basename(path))
    # A model's keys (transformers reads them with the tokenizer); no tensors are needed to
    # tokenize.
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(1)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    ids = {t: i for i, t in enumerate(tokens)}
    w.add_bos_token_id(ids[config["bos_token"]])
    w.add_eos_token_id(ids[config["eos_token"]])
    w.add_unk_token_id(ids[config["unk_token"]])
    w.add_add_bos_token(config["add_bos_token"])
    w.add_add_eos_token(config["add_eos_token"])
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def spm_tokenizer_fixture():
    from transformers import AutoTokenizer

    path = os.path.join(OUT, "llama2-spm.gguf")
    write_spm_tokenizer(path, "tokenizer-llama2")
    tok = AutoTokenizer.from_pretrained(OUT, gguf_file=os.path.basename(path))
    corpus_dir = os.path.join(TOKENIZER_FIXTURES, "tokenizer-corpus")
    texts = [json.loads(line)["text"] for line in open(os.path.join(corpus_dir, "corpus.jsonl"), encoding="utf-8")]
    original = json.load(open(os.path.join(TOKENIZER_FIXTURES, "tokenizer-llama2", "tokenizer.json"), encoding="utf-8"))
    rows, same = [], 0
    from tokenizers import Tokenizer
    plain = Tokenizer.from_str(json.dumps(original))
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False)
        row = {"ids": ids}
        decoded = tok.decode(ids, skip_special_tokens=False)
        if decoded != text:
            row["text"] = decoded
        rows.append(row)
        same += ids == plain.encode(text, add_special_tokens=False).ids
    # The tokenizer.json transformers builds from the file, for the engine's own to equal: its
    # parts, and the merges by count and hash (the list is long).
    doc = json.loads(tok.backend_tokenizer.to_str())
    merges = json.dumps(doc["model"]["merges"], ensure_ascii=False, separators=(",", ":"))
    summary = {key: doc[key] for key in ("added_tokens", "normalizer", "pre_tokenizer", "decoder")}
    summary["vocab_size"] = len(doc["model"]["vocab"])
    summary["merges_count"] = len(doc["model"]["merges"])
    summary["merges_sha256"] = hashlib.sha256(merges.encode("utf-8")).hexdigest()
    with open(os.path.join(OUT, "llama2-spm-transformers.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(corpus_dir, "llama2-gguf.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"llama2-spm.gguf: {os.path.getsize(path)} bytes; transformers' ids equal the "
          f"tokenizer.json's on {same} of {len(texts)} corpus lines")


def write_corpus():
    os.makedirs(CORPUS, exist_ok=True)
    # Every metadata type, nested arrays, one tiny tensor of each readable type.
    path = os.path.join(CORPUS, "all-types-v3.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_uint8("t.u8", 7)
    w.add_int8("t.i8", -7)
    w.add_uint16("t.u16", 700)
    w.add_int16("t.i16", -700)
    w.add_uint32("t.u32", 70000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.25)
    w.add_bool("t.bool", True)
    w.add_string("t.string", "héllo")
    w.add_array("t.strings", ["a", "bb", ""])
    w.add_array("t.ints", [1, 2, 3])
    w.add_array("t.nested", [[1, 2], [3]])
    for qtype in (T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q4_K, T.Q6_K):
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        n = max(block, 32)
        if qtype in (T.Q4_K, T.Q6_K):
            w.add_tensor("x." + qtype.name, random_blocks(qtype, 1).reshape(1, -1), raw_dtype=qtype)
        elif qtype == T.F32:
            w.add_tensor("x.F32", rng.normal(0, 1, n).astype(np.float32))
        else:
            w.add_tensor("x." + qtype.name, quantize(rng.normal(0, 1, (1, n)).astype(np.float32), qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # A header of the tiny model (metadata and tensor infos, data cut off), and the same
    # with alignment 64.
    for align in (None, 64):
        name = "model-header.gguf" if align is None else "model-align64.gguf"
        path = os.path.join(CORPUS, name)
        w = gguf.GGUFWriter(path, "llama")
        if align:
            w.add_custom_alignment(align)
        w.add_block_count(1)
        w.add_tensor("token_embd.weight", rng.normal(0, 1, (4, 32)).astype(np.float32))
        w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    # Version 2 (same layout as 3 for little-endian files).
    data = bytearray(open(os.path.join(CORPUS, "model-header.gguf"), "rb").read())
    data[4:8] = (2).to_bytes(4, "little")
    open(os.path.join(CORPUS, "model-v2.gguf"), "wb").write(bytes(data))


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "blocks.json"), "w") as f:
        json.dump(block_fixture(), f, indent=1)
        f.write("\n")
    expected = {"prompt": [int(t) for t in rng.integers(3, VOCAB, 7)], "steps": 5, "models": {}}
    for name, arch, types, eps, theta in model_specs():
        path = os.path.join(OUT, name + ".gguf")
        if os.path.exists(path):
            os.remove(path)
        write_model(path, arch, types, eps, theta)
        ref = transformers_reference(path, expected["prompt"], expected["steps"])
        expected["models"][name] = ref
        print(f"{name}: {os.path.getsize(path)} bytes, tied={ref['tied']}, greedy {ref['greedy_tokens']}")
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f)
        f.write("\n")
    write_corpus()
    neox_fixtures()
    spm_tokenizer_fixture()


if __name__ == "__main__":
    sys.exit(main())
