#!/usr/bin/env python3
"""Compares `h2oflex tokenize` with Hugging Face `tokenizers` on a corpus, kind by kind.

    python3 tools/gen_tokenizer_corpus.py corpus.jsonl
    python3 tools/compare_tokenizer_corpus.py --binary build/h2oflex --corpus corpus.jsonl \\
        [--kind NAME=MODEL_DIR ...] [--fixture-lines 300]

For each tokenizer kind (by default every kind the README claims, from its fixture directory
under tests/fixtures/, and SmolLM2's from the directory tools/fetch_smollm2.sh makes):
  ids      HF's `encode(text, add_special_tokens=False)` against `h2oflex tokenize --no-special`
           on every line (special-token text inside a line is matched as HF matches it);
  dropped  the bytes of each line no token stands for: HF gives no count, so the oracle counts
           them from HF's tokens (the line's UTF-8 length minus its tokens' bytes; byte-level
           kinds without a normalizer, the others drop nothing) against the line's
           "dropped_bytes";
  decode   HF's `decode(ids, skip_special_tokens=False)` of HF's ids against
           `h2oflex tokenize --decode` of h2oflex's ids: decode(encode(x)) on both sides.
It prints lines, bytes and the differing lines per kind, and exits 1 if any differ.

--fixture-lines N also writes the slice the tests replay (tests/tokenizer/corpus_test.cc):
tests/fixtures/tokenizer-corpus/corpus.jsonl (N lines of the corpus, spread over it) and
<kind>.jsonl per kind: {"ids"}, with "text" (HF's decode) where it is not the line's text and
"dropped_bytes" where not 0. The
tokenizer files stay where they are (SmolLM2's are not committed: the test reads the cache).

Run it in the throwaway virtual environment of tools/gen_tokenizer_fixtures.py (tokenizers
0.23.3); no network.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_family_tokenizer_fixtures import DroppedBytes  # noqa: E402  (one definition)
from tokenizers import Tokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
SLICE_DIR = os.path.join(FIXTURES, "tokenizer-corpus")

# Kind -> fixture directory: the kinds README's tokenizer section names.
FIXTURE_KINDS = {"gpt2-opt": "tokenizer", "llama2": "tokenizer-llama2",
                 "llama2-metaspace": "tokenizer-llama2-metaspace", "llama3": "tokenizer-llama3",
                 "neox": "tokenizer-neox", "qwen2": "tokenizer-qwen2",
                 "smollm2-small": "tokenizer-smollm2"}


def smollm2_dir():
    """Where tools/fetch_smollm2.sh puts the model (its rule, restated for this script)."""
    cache = os.environ.get("H2OFLEX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "h2oflex")
    return os.path.join(cache, "smollm2-135m-instruct")


def default_kinds():
    kinds = {k: os.path.join(FIXTURES, d) for k, d in FIXTURE_KINDS.items()}
    kinds["smollm2"] = smollm2_dir()
    return kinds


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")


def run_tokenize(binary, model_dir, input_path, *flags):
    out = subprocess.run([binary, "tokenize", "--model", model_dir, "--input", input_path, *flags],
                         capture_output=True, check=False)
    if out.returncode != 0:
        sys.exit(f"h2oflex tokenize {' '.join(flags)} on {model_dir} failed "
                 f"({out.returncode}): {out.stderr.decode(errors='replace')}")
    return [json.loads(line) for line in out.stdout.decode().split("\n") if line]


def hf_reference(tok, texts):
    """HF's ids, dropped-byte counts and decoded texts for each line."""
    encodings = tok.encode_batch(texts, add_special_tokens=False)
    ids = [e.ids for e in encodings]
    count_dropped = DroppedBytes(tok)
    dropped = [count_dropped(t, e) for t, e in zip(texts, encodings)]
    decoded = tok.decode_batch(ids, skip_special_tokens=False)
    return ids, dropped, decoded


def compare_kind(name, model_dir, binary, corpus_path, texts, tmp):
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    want_ids, want_dropped, want_text = hf_reference(tok, texts)
    got = run_tokenize(binary, model_dir, corpus_path, "--no-special")
    if len(got) != len(texts):
        sys.exit(f"{name}: {len(got)} output lines for {len(texts)} input lines")
    ids_path = os.path.join(tmp, f"{name}.ids.jsonl")
    write_jsonl(ids_path, got)  # h2oflex's own ids (with their dropped_bytes) back in
    got_text = [r["text"] for r in run_tokenize(binary, model_dir, ids_path, "--decode")]
    differ = {"ids": 0, "dropped": 0, "decode": 0}
    shown = 0
    for i, text in enumerate(texts):
        bad = []
        if got[i]["ids"] != want_ids[i]:
            bad.append("ids")
        if got[i].get("dropped_bytes", 0) != want_dropped[i]:
            bad.append("dropped")
        if got_text[i] != want_text[i]:
            bad.append("decode")
        for b in bad:
            differ[b] += 1
        if bad and shown < 5:
            shown += 1
            print(f"  {name} line {i + 1} differs ({', '.join(bad)}): {json.dumps(text)[:200]}\n"
                  f"    HF      {want_ids[i][:40]} dropped {want_dropped[i]}\n"
                  f"    h2oflex {got[i]['ids'][:40]} dropped {got[i].get('dropped_bytes', 0)}")
    summary = {"kind": name, "lines": len(texts), "bytes": sum(len(t.encode()) for t in texts),
               "tokens": sum(len(i) for i in want_ids),
               "lines_dropping": sum(1 for d in want_dropped if d),
               "dropped_bytes": sum(want_dropped),
               "differing_ids": differ["ids"], "differing_dropped": differ["dropped"],
               "differing_decode": differ["decode"]}
    return summary, (want_ids, want_dropped, want_text)


def slice_indices(n, count):
    """`count` line numbers spread evenly over n lines (all of them when n <= count)."""
    if n <= count:
        return list(range(n))
    return sorted({i * n // count for i in range(count)})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "build", "h2oflex"))
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--kind", action="append", default=[],
                        help="NAME=MODEL_DIR (repeatable; default: every kind)")
    parser.add_argument("--fixture-lines", type=int, default=0)
    args = parser.parse_args()
    kinds = dict(k.split("=", 1) for k in args.kind) if args.kind else default_kinds()
    for name, d in kinds.items():
        if not os.path.isfile(os.path.join(d, "tokenizer.json")):
            sys.exit(f"{name}: no tokenizer.json in {d} (for SmolLM2 run tools/fetch_smollm2.sh)")
    texts = [r["text"] for r in read_jsonl(args.corpus)]
    picked = slice_indices(len(texts), args.fixture_lines) if args.fixture_lines else []
    if picked:
        os.makedirs(SLICE_DIR, exist_ok=True)
        write_jsonl(os.path.join(SLICE_DIR, "corpus.jsonl"), [{"text": texts[i]} for i in picked])
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, d in kinds.items():
            summary, (ids, dropped, decoded) = compare_kind(name, d, args.binary, args.corpus,
                                                            texts, tmp)
            print(json.dumps(summary))
            failed |= any(summary[k] for k in ("differing_ids", "differing_dropped",
                                               "differing_decode"))
            if picked:
                records = []
                for i in picked:
                    r = {"ids": ids[i]}
                    if decoded[i] != texts[i]:
                        r["text"] = decoded[i]
                    if dropped[i]:
                        r["dropped_bytes"] = dropped[i]
                    records.append(r)
                write_jsonl(os.path.join(SLICE_DIR, f"{name}.jsonl"), records)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
