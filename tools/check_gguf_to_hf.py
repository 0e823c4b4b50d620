#!/usr/bin/env python3
"""Checks a directory written by tools/gguf_to_hf.py against Hugging Face transformers' own reading
of the same GGUF file (transformers dequantizes and un-permutes GGUF weights itself, and builds a
tokenizer from the GGUF's metadata).

    python tools/check_gguf_to_hf.py MODEL.gguf CONVERTED_DIR

It needs a throwaway virtual environment OUTSIDE the repository (torch is only needed here, not
by the conversion):

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch transformers accelerate tokenizers gguf safetensors numpy

Checks, each printed with its figures; exit 1 on any failure:
1. Weights: every tensor of model.safetensors equals, bit for bit, the one transformers loads
   from the GGUF (LlamaForCausalLM.from_pretrained(..., gguf_file=...), f32), and no tensor is
   missing or extra (a tied lm_head is the embedding in both).
2. Logits: the converted directory loaded by transformers gives the GGUF-loaded model's logits
   on a prompt (they must be identical: same weights, same code), and " Paris" follows
   "The capital of France is".
3. Tokenizer: `tokenizers` on the converted tokenizer.json against
   AutoTokenizer.from_pretrained(..., gguf_file=...) on several hundred varied strings (prose in
   several scripts, code, numbers, emoji, control characters, runs of spaces and newlines,
   special tokens). transformers builds GPT-2's plain ByteLevel split for this file: it has no
   entry for the pre-tokenizer `smollm` the GGUF names, which splits every digit off first
   (Digits, individual_digits). The two can differ only where whitespace runs up to a digit
   (e.g. "x  1": GPT-2's regex cuts the run before its last space, Digits first keeps it whole),
   so: ids must be identical on every string once transformers' tokenizer is given the same
   Digits step, and the strings where the plain one differs are counted (each must contain a
   numeric character, as Rust's char::is_numeric, which Digits uses). decode(encode(x)) must agree
   too.
"""

import argparse
import os
import random
import sys
import unicodedata

import numpy as np
import torch
from safetensors.numpy import load_file
from tokenizers import Tokenizer, pre_tokenizers
from transformers import AutoTokenizer, LlamaForCausalLM

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def corpus(seed=0, random_lines=300):
    fixed = [
        "The capital of France is",
        "Hello, world! How are you today?",
        "  leading spaces and trailing  ",
        "tabs\tand\nnewlines\n\n\nthree",
        "numbers: 1 12 123 1234 3.14159 -42 1e10 0x1F 2024-12-07",
        "x  1  22   333    4444",
        "Ünïcödé façade naïve café — “quotes” ‘single’ …",
        "日本語のテキストです。中文文本。한국어 텍스트.",
        "Русский текст и ελληνικά γράμματα, עברית ועربية.",
        "emoji 😀🎉👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵",
        "def f(x):\n    return x**2  # square\n\nprint(f(3))",
        "for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }",
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>text after<|endoftext|>",
        "a\x04b\x06c\x13d\x1de",
        "control \x00\x01\x02\x7f bytes",
        " " * 17 + "spaces" + "\n" * 9 + "newlines",
        "I'm, you're, he's, we've, they'll, she'd, it's, can't",
        "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n",
        "",
        " ",
        "9",
        " 9 ",
        "a1b2c3  4\n5\t6",
    ]
    rng = random.Random(seed)
    pieces = [
        "the", " quick", " brown", "fox", " 1", "23", "  ", "\n", "\t", "é", "ß", "中", "😀", "'s",
        "'ll", "!", "?", "...", "  7", "\u00a0", "\u200b", "<|im_end|>", "{", "}", "()", "x=", "0.5",
        "Ā", "\x04", "\x1f", "Ω", "ǅ", "١٢٣", "٣", "Ⅻ", "²", "½", " ", "   ", "\r\n", "ﬁ",
    ]
    lines = list(fixed)
    for _ in range(random_lines):
        lines.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 25))))
    return lines


def check_weights(gguf_path, converted):
    ours = load_file(os.path.join(converted, "model.safetensors"))
    model = LlamaForCausalLM.from_pretrained(os.path.dirname(gguf_path),
                                             gguf_file=os.path.basename(gguf_path),
                                             torch_dtype=torch.float32)
    theirs = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    tied = model.config.tie_word_embeddings
    if tied:
        theirs.pop("lm_head.weight", None)
    check(set(ours) == set(theirs),
          f"tensor names: {len(ours)} converted, {len(theirs)} from transformers "
          f"(only converted: {sorted(set(ours) - set(theirs))[:5]}, "
          f"only transformers: {sorted(set(theirs) - set(ours))[:5]})")
    differing = [k for k in ours if k in theirs and
                 (ours[k].shape != theirs[k].shape or not np.array_equal(ours[k], theirs[k]))]
    check(not differing, f"{len(ours)} tensors bit-identical to transformers' GGUF loading "
                         f"(differing: {differing[:5]})")
    return model


@torch.no_grad()
def check_logits(gguf_model, converted):
    tok = Tokenizer.from_file(os.path.join(converted, "tokenizer.json"))
    ids = torch.tensor([tok.encode("The capital of France is").ids])
    ours = LlamaForCausalLM.from_pretrained(converted, torch_dtype=torch.float32)
    a = ours(ids).logits[0, -1]
    b = gguf_model(ids).logits[0, -1]
    check(torch.equal(a, b), f"last-position logits identical (max |diff| {float((a - b).abs().max()):.3g})")
    nxt = tok.decode([int(a.argmax())])
    check(nxt == " Paris", f"'The capital of France is' -> {nxt!r}")


def check_tokenizer(gguf_path, converted):
    ours = Tokenizer.from_file(os.path.join(converted, "tokenizer.json"))
    hf = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    plain = hf.backend_tokenizer
    with_digits = Tokenizer.from_str(plain.to_str())
    with_digits.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), plain.pre_tokenizer])
    lines = corpus()
    same_ids = differ_plain = same_decode = 0
    bad = []
    for line in lines:
        a = ours.encode(line, add_special_tokens=False).ids
        b = with_digits.encode(line, add_special_tokens=False).ids
        c = plain.encode(line, add_special_tokens=False).ids
        same_ids += a == b
        if a != b:
            bad.append(line)
        if a != c:
            differ_plain += 1
            if not any(unicodedata.category(ch).startswith("N") for ch in line):
                bad.append(line)
        same_decode += ours.decode(a, skip_special_tokens=False) == \
            hf.decode(a, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    n = len(lines)
    check(same_ids == n, f"ids identical to transformers' GGUF tokenizer + Digits on {same_ids}/{n} strings")
    check(not bad, f"strings where the plain GGUF tokenizer differs all hold a digit "
                   f"({differ_plain}/{n} differ; unexplained: {bad[:3]!r})")
    check(same_decode == n, f"decode identical on {same_decode}/{n} strings")
    check(ours.get_vocab_size(with_added_tokens=True) == plain.get_vocab_size(with_added_tokens=True),
          f"vocabulary size {ours.get_vocab_size(with_added_tokens=True)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("converted")
    args = ap.parse_args()
    check_tokenizer(args.gguf, args.converted)
    model = check_weights(args.gguf, args.converted)
    check_logits(model, args.converted)
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
