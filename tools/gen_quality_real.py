#!/usr/bin/env python3
"""Writes the task files of experiments/suites/quality_real.yaml from held-out prose.

    python3 tools/gen_quality_real.py --tokenizer MODEL/tokenizer.json \
        --text models/trained/opt-small-en/heldout.txt --out experiments/suites/quality_real

The prose is the held-out split of the Python 3.11 documentation that Debian ships
(models/trained/opt-small-en/heldout.txt: one paragraph per line). Needs the `tokenizers`
package (the model's own tokenizer sets every length, so the engine's batches are full: items
of one length resolve a budget to the same counts and share a block).

retrieval.jsonl: a fact -- "The password of the <colour> <thing> is <word>." -- placed at 10
depths (0.05 .. 0.95 of the context) of ~1,000 tokens of prose, asked at the end:
    context  = prose with the fact inside, ending in a blank line
    question = "Question: What is the password of the <colour> <thing>?\nAnswer: The password
                of the <colour> <thing> is"
    choices  = the word and three other words of the same pool, each one token with its space
    group    = "depth 0.35" (accuracy is reported per group)
Every item's context + question is the same number of tokens, and only the fact's position
differs between the items of one haystack.

last_word.jsonl: which of four words comes next after 255 tokens of a held-out paragraph
stream (the true next word and three words of the same document, each one token with its
leading space; a LAMBADA-like task the full model answers well above chance). The last 64 of
the 255 tokens are the item's "question", so a suite can read them after the policy selected
on the first 191 (context: prefill-context): a one-token answer scored from a prompt's own
logits is computed before anything is evicted, and would show no policy's cost.
"""

import argparse
import json
import random
from pathlib import Path

from tokenizers import Tokenizer

COLOURS = ["red", "blue", "green", "black", "white", "yellow", "purple", "orange", "silver",
           "golden"]
THINGS = ["castle", "tower", "bridge", "garden", "harbor", "island", "forest", "mountain",
          "river", "window"]
WORDS = ["apple", "tiger", "eagle", "falcon", "dragon", "wolf", "bear", "lion", "horse", "piano",
         "violin", "guitar", "candle", "mirror", "desert", "ocean", "thunder", "winter",
         "summer", "autumn", "copper", "marble", "velvet", "crystal", "shadow"]
DEPTHS = [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95]


def one_token(tok, word):
    return len(tok.encode(" " + word, add_special_tokens=False).ids) == 1


def n_tokens(tok, text):
    return len(tok.encode(text, add_special_tokens=False).ids)


def retrieval_items(tok, paragraphs, haystacks, length, rng):
    """`haystacks` contexts, each used at every depth: len(DEPTHS) * haystacks items."""
    for w in COLOURS + THINGS + WORDS:
        assert one_token(tok, w), f"'{w}' is not one token with its leading space"
    items = []
    start = 0
    for h in range(haystacks):
        # Paragraphs from a different place of the text for every haystack.
        # Whole paragraphs up to ~100 tokens short of the length, then a tail of further
        # paragraphs that is cut token by token.
        paras, size = [], 0
        while size < length - 160:
            paras.append(paragraphs[start % len(paragraphs)])
            size += n_tokens(tok, paras[-1] + "\n")
            start += 1
        tail = []
        while n_tokens(tok, "\n".join(tail)) < 200:
            tail.append(paragraphs[start % len(paragraphs)])
            start += 1
        paras.append("\n".join(tail))
        start += 7
        colour, thing = rng.choice(COLOURS), rng.choice(THINGS)
        word = rng.choice(WORDS)
        others = rng.sample([w for w in WORDS if w != word], 3)
        fact = f"The password of the {colour} {thing} is {word}."
        question = (f"Question: What is the password of the {colour} {thing}?\n"
                    f"Answer: The password of the {colour} {thing} is")
        for d, depth in enumerate(DEPTHS):
            # The fact goes between paragraphs, at the boundary nearest `depth` of the prose;
            # the last paragraph is cut token by token until context + question is `length`.
            last_ids = tok.encode(paras[-1], add_special_tokens=False).ids
            context = None
            for keep in range(len(last_ids), 0, -1):
                body = paras[:-1] + [tok.decode(last_ids[:keep])]
                sizes = [n_tokens(tok, p + "\n") for p in body]
                total = sum(sizes)
                at, acc = 0, 0
                while at < len(body) and acc + sizes[at] / 2 < depth * total:
                    acc += sizes[at]
                    at += 1
                text = "\n".join(body[:at] + [fact] + body[at:]) + "\n\n"
                count = n_tokens(tok, text + question)
                if count == length:
                    context = text
                    break
                if count < length - 40:
                    break
            assert context is not None, f"haystack {h} depth {depth}: no cut gives {length}"
            choices = [" " + w for w in [word] + others]
            order = list(range(4))
            rng.shuffle(order)
            items.append({"id": f"h{h}-d{d}", "context": context, "question": question,
                          "choices": [choices[i] for i in order], "answer": order.index(0),
                          "group": f"depth {depth:.2f}"})
    return items


def last_word_items(tok, paragraphs, count, context_tokens, question_tokens, rng):
    ids = tok.encode("\n".join(paragraphs), add_special_tokens=False).ids
    vocab_word = {}
    for i in set(ids):
        piece = tok.decode([i])
        if piece.startswith(" ") and piece[1:].isalpha() and len(piece) >= 5:
            vocab_word[i] = piece
    items, tried = [], set()
    positions = list(range(context_tokens + 1, len(ids) - 1))
    rng.shuffle(positions)
    for p in positions:
        if len(items) == count:
            break
        target = ids[p]
        # A whole word: one token, followed by a space, punctuation or the end of a line.
        if target not in vocab_word or p // 96 in tried:
            continue
        after = tok.decode([ids[p + 1]])
        if after[:1].isalpha():
            continue
        # The last `question_tokens` of the context are the item's question: read token by
        # token after the policy has selected on the rest (a one-token answer computed from
        # the prompt's own logits would never see an eviction).
        head = tok.decode(ids[p - context_tokens:p - question_tokens])
        tail = tok.decode(ids[p - question_tokens:p])
        if n_tokens(tok, head + tail) != context_tokens:
            continue  # the decoded text tokenizes differently at its cut; take another place
        near = [vocab_word[i] for i in set(ids[max(0, p - 2000):p + 2000])
                if i in vocab_word and i != target]
        if len(near) < 3:
            continue
        tried.add(p // 96)  # at most one item per 96 tokens of text
        others = rng.sample(sorted(near), 3)
        choices = [vocab_word[target]] + others
        order = list(range(4))
        rng.shuffle(order)
        items.append({"id": f"p{p}", "context": head, "question": tail,
                      "choices": [choices[i] for i in order], "answer": order.index(0)})
    assert len(items) == count, f"only {len(items)} items"
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True, help="the model's tokenizer.json")
    ap.add_argument("--text", required=True, help="held-out prose, one paragraph per line")
    ap.add_argument("--out", required=True, help="directory for retrieval.jsonl, last_word.jsonl")
    ap.add_argument("--haystacks", type=int, default=5)
    ap.add_argument("--length", type=int, default=1040,
                    help="tokens of context + question per retrieval item")
    ap.add_argument("--last-word-items", type=int, default=100)
    ap.add_argument("--seed", type=int, default=45)
    args = ap.parse_args()

    tok = Tokenizer.from_file(args.tokenizer)
    paragraphs = [p for p in Path(args.text).read_text(encoding="utf-8").split("\n") if p.strip()]
    # Retrieval hides facts in the first half of the text, last-word reads the second half.
    half = len(paragraphs) // 2
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, items in (
            ("retrieval.jsonl",
             retrieval_items(tok, paragraphs[:half], args.haystacks, args.length, rng)),
            ("last_word.jsonl",
             last_word_items(tok, paragraphs[half:], args.last_word_items, 255, 64, rng))):
        with open(out / name, "w", encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
        print(f"{out / name}: {len(items)} items")


if __name__ == "__main__":
    main()
