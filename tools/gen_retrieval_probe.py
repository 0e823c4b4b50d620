#!/usr/bin/env python3
"""Writes a retrieval probe for `h2oflex eval choice`: a fact stated at the start of a long
context is asked for at its end, the case where scoring tokens by accumulated attention is known
to lose (the fact's tokens get little attention while the filler streams past, and are evicted
before the question needs them).

Each line: {"id", "context", "choices", "answer"} — the context is
    "Remember this: the key word is <W>. " + filler sentences + " Once more, the key word is"
and the choices are " <W>" and three other words of the same list, in random order. The filler
is consecutive sentences of a held-out text, so the model has seen nothing like it in training.

Standard library only; deterministic (fixed seed):

    python3 tools/gen_retrieval_probe.py --text models/trained/opt-small-en/heldout.txt \
        --out experiments/suites/quality/retrieval_probe.jsonl
"""

import argparse
import json
import random
import re

WORDS = ["apple", "river", "window", "garden", "silver", "castle", "pencil", "rocket",
         "forest", "button", "candle", "island", "mirror", "planet", "ticket", "violin"]


def sentences(text):
    flat = re.sub(r"\s+", " ", text).strip()
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", flat) if len(s.split()) >= 5]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--text", required=True, help="held-out text for the filler")
    ap.add_argument("--out", required=True, help="JSONL to write")
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--filler-words", type=int, default=220,
                    help="words of filler between the fact and the question")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sents = sentences(open(args.text, encoding="utf-8").read())
    lines = []
    start = 0
    for i in range(args.tasks):
        word = WORDS[i % len(WORDS)]
        filler, n = [], 0
        while n < args.filler_words:
            s = sents[start % len(sents)]
            start += 1
            filler.append(s)
            n += len(s.split())
        others = rng.sample([w for w in WORDS if w != word], 3)
        choices = [" " + w for w in [word] + others]
        order = list(range(4))
        rng.shuffle(order)
        context = ("Remember this: the key word is " + word + ". " + " ".join(filler) +
                   " Once more, the key word is")
        lines.append({"id": f"probe-{i}", "context": context,
                      "choices": [choices[k] for k in order], "answer": order.index(0)})
    with open(args.out, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
