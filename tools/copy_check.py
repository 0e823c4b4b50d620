#!/usr/bin/env python3
"""Does a model copy from its context? Perplexity of passages of a text given twice in a row.

A model that retrieves from its context (induction) predicts the second copy of a passage far
better than the first; one that does not predicts both alike, and then no retrieval probe can
show what an eviction policy loses on it (the full cache retrieves nothing either). For each
passage length, eight passages of the held-out text: [BOS] + A + A, the mean NLL of each copy.

    /tmp/hfvenv/bin/python tools/copy_check.py models/trained/opt-small-en
"""

import argparse
import math

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="model directory (Hugging Face format)")
    ap.add_argument("--text", default=None, help="text to cut passages from (default: "
                    "MODEL/heldout.txt)")
    ap.add_argument("--lengths", default="50,120,250", help="passage lengths in tokens")
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    text = open(args.text or args.model + "/heldout.txt", encoding="utf-8").read()
    ids = tok(text, add_special_tokens=False)["input_ids"]
    bos = tok.bos_token_id
    for length in (int(x) for x in args.lengths.split(",")):
        first = second = 0.0
        for off in range(0, 8000, 1000):
            a = ids[off:off + length]
            seq = [bos] + a + a
            with torch.no_grad():
                lp = torch.log_softmax(model(torch.tensor([seq])).logits[0].double(), -1)
            nll = [-lp[i - 1, seq[i]].item() for i in range(1, len(seq))]
            first += sum(nll[:length]) / length / 8
            second += sum(nll[length:]) / length / 8
        print(f"passage of {length} tokens: perplexity {math.exp(first):.2f} the first time, "
              f"{math.exp(second):.2f} the second ({math.exp(first - second):.3f}x better)")


if __name__ == "__main__":
    main()
