#!/usr/bin/env python3
"""Writes tests/fixtures/smollm2_chat/expected.json: Hugging Face transformers' greedy answers of
SmolLM2-135M-Instruct to a few chat requests, for the test that `h2oflex generate` answers the
same chat lines with the same text.

For each conversation: the prompt ids of tokenizer.apply_chat_template(messages,
add_generation_prompt=True) (the model's own template, special tokens not added twice), and
the greedy completion (model.generate, float32, do_sample=False, stopping at the model's EOS
or after MAX_NEW_TOKENS), decoded skipping special tokens.

The model directory is the one tools/fetch_smollm2.sh makes (`--print-dir` says where). It
needs a throwaway virtual environment outside the repository:

    python3 -m venv VENV && VENV/bin/pip install torch transformers jinja2 safetensors
    VENV/bin/python tools/gen_smollm2_chat_fixture.py --model "$(tools/fetch_smollm2.sh --print-dir)"
"""
import argparse
import json
import os

import torch
import transformers
from transformers import AutoTokenizer, LlamaForCausalLM

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "smollm2_chat", "expected.json")
MAX_NEW_TOKENS = 16

CONVERSATIONS = [
    ("capital", [{"role": "user", "content": "What is the capital of France?"}]),
    ("system", [{"role": "system", "content": "You are a poet. Answer in one short line."},
                {"role": "user", "content": "Describe the sea."}]),
    ("multi-turn", [{"role": "user", "content": "Hello! Who are you?"},
                    {"role": "assistant", "content": "I am SmolLM, a small assistant."},
                    {"role": "user", "content": "Name a colour of the sky."}]),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = LlamaForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32,
                                             attn_implementation="eager")
    model.eval()
    cases = []
    for name, messages in CONVERSATIONS:
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                      return_dict=False)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        ids = [int(i) for i in ids]
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW_TOKENS,
                                 do_sample=False, eos_token_id=model.generation_config.eos_token_id,
                                 pad_token_id=model.generation_config.pad_token_id)
        completion = [int(t) for t in out[0][len(ids):]]
        cases.append({
            "name": name,
            "messages": messages,
            "prompt_ids": ids,
            "completion_ids": completion,
            "text": tok.decode(completion, skip_special_tokens=True),
            "finish_reason": "stop" if completion and completion[-1] ==
                             model.generation_config.eos_token_id else "length",
        })
    doc = {"transformers": transformers.__version__, "max_new_tokens": MAX_NEW_TOKENS,
           "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for c in cases:
        print(c["name"], len(c["prompt_ids"]), repr(c["text"]), c["finish_reason"])


if __name__ == "__main__":
    main()
