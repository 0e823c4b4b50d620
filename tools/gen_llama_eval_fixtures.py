#!/usr/bin/env python3
"""Records Hugging Face's full-cache perplexity of held-out text for the trained LLaMA/GQA model
(tests/fixtures/eval/llama_expected.json).

The model is models/trained/llama-small-en (tools/train_small_model.py --arch llama: 4 attention
heads sharing 2 key-value heads, rotary positions, RMSNorm, SwiGLU, tied embeddings). The fixture
is the `heldout_perplexity` section of tools/gen_eval_fixtures.py for that model, cut to the
first WINDOWS (4) windows: heldout.txt encoded without special tokens, windows of 511 text tokens
after the BOS (id 2), stride 511, each window scored by HF LlamaForCausalLM in float32 (eager
attention) with log_softmax in float64; a window's mean NLL is over its 511 text tokens. The
evaluator's full-cache perplexity of the same windows must reproduce it
(tests/eval/eval_llama_reference_test.cc). The full-cache perplexity of the whole text (every
window, the last one shorter) is recorded too, as the baseline that H2O's is compared with.

It needs a throwaway virtual environment OUTSIDE the repository:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
        # if that index is unreachable: /tmp/hfvenv/bin/pip install torch   (wheel from PyPI)
    /tmp/hfvenv/bin/pip install transformers safetensors tokenizers

    # writes tests/fixtures/eval/llama_expected.json
    /tmp/hfvenv/bin/python tools/gen_llama_eval_fixtures.py
"""

import argparse
import json
import math
import os
import sys

import safetensors
import tokenizers
import torch
import transformers
from transformers import LlamaForCausalLM

from gen_eval_fixtures import heldout_tokens, hf_logits, nll_of  # the OPT fixture's conventions, shared

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_REL = os.path.join("models", "trained", "llama-small-en")
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "eval")

BOS_ID = 2
PPL_WINDOW = 511  # text tokens per window (+ BOS = 512)
WINDOWS = 4       # the first windows of heldout.txt


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=MODEL_REL, help="model directory, relative to the repo")
    parser.add_argument("--out", default=FIXTURE_DIR)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model_dir = os.path.join(REPO, args.model)

    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["model_type"] == "llama", config["model_type"]
    assert config["num_key_value_heads"] < config["num_attention_heads"], "not a GQA model"
    tokens = heldout_tokens(model_dir)
    assert len(tokens) >= WINDOWS * PPL_WINDOW, len(tokens)

    hf = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                          attn_implementation="eager").eval()
    assert hf.lm_head.weight.data_ptr() == hf.get_input_embeddings().weight.data_ptr()

    ppl_windows = []
    nll_sum, count = 0.0, 0
    text_sum, text_count, text_windows = 0.0, 0, 0
    for a in range(0, len(tokens), PPL_WINDOW):
        ids = [BOS_ID] + tokens[a:a + PPL_WINDOW]
        nll = nll_of(hf_logits(hf, ids), ids)
        text_sum += sum(nll)
        text_count += len(nll)
        text_windows += 1
        if len(ppl_windows) == WINDOWS:
            continue
        nll_sum += sum(nll)
        count += len(nll)
        ppl_windows.append({"begin": a, "end": a + len(ids) - 1,
                            "nll_mean": float(f"{sum(nll) / len(nll):.10g}")})
        print(f"  window [{a}, {a + len(ids) - 1}): mean NLL {sum(nll) / len(nll):.6f}",
              file=sys.stderr)
    whole = {"text": "heldout.txt", "tokens": len(tokens), "window": PPL_WINDOW,
             "stride": PPL_WINDOW, "bos": BOS_ID, "scored": count, "nll_mean": nll_sum / count,
             "perplexity": math.exp(nll_sum / count), "windows": ppl_windows,
             "whole_text": {"windows": text_windows, "scored": text_count,
                            "nll_mean": text_sum / text_count,
                            "perplexity": math.exp(text_sum / text_count)}}
    print(f"perplexity of the first {WINDOWS} windows (HF f32, full cache): "
          f"{whole['perplexity']:.4f} over {count} tokens; of the whole text "
          f"{whole['whole_text']['perplexity']:.4f} over {text_count} tokens in {text_windows} "
          "windows", file=sys.stderr)

    expected = {
        "format_version": 1,
        "generator": {"script": "tools/gen_llama_eval_fixtures.py", "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "tokenizers": tokenizers.__version__,
                      "safetensors": safetensors.__version__},
        "model_dir": args.model.replace(os.sep, "/"),
        "bos_id": BOS_ID,
        "model": {k: config[k] for k in ("model_type", "num_attention_heads",
                                          "num_key_value_heads", "head_dim", "hidden_size",
                                          "num_hidden_layers", "tie_word_embeddings")
                  if k in config},
        "convention": "window = [BOS] + 511 text tokens (encoded without special tokens), "
                      "stride 511; nll[i] = -log_softmax(logits_i)[ids[i+1]] from HF "
                      "LlamaForCausalLM f32 logits, log_softmax in f64; a window's nll_mean is "
                      "over its text tokens; windows, scored, nll_mean and perplexity: the first "
                      "windows of the text only (tokens: the whole text's count); whole_text: "
                      "every window of the text, the last one shorter",
        "heldout_perplexity": whole,
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "llama_expected.json")
    with open(path, "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
