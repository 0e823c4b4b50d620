#!/usr/bin/env python3
"""The Python package against `h2oflex generate` on the same requests: identical texts, and the
Python layer's share of the wall time.

    PYTHONPATH=build/python python3 tools/compare_python_generate.py \
        --model "$(tools/fetch_smollm2.sh --print-dir)" --prompts 1000

Prompts are the first 6-40 words of the held-out paragraphs (models/trained/opt-small-en/
heldout.txt), each with max_new_tokens 16, under H2O (heavy 10%, recent 10%). The Python
layer's time is llm.generate's wall time less that of the native call it makes (building the
request lines and the result objects)."""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import h2oflex

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--bin", default=str(ROOT / "build/h2oflex"))
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()

    paragraphs = [p for p in (ROOT / "models/trained/opt-small-en/heldout.txt")
                  .read_text().split("\n") if p.strip()]
    prompts = []
    for i in range(args.prompts):
        words = paragraphs[i % len(paragraphs)].split()
        prompts.append(" ".join(words[: 6 + (i * 7) % 35]))
    kv = {"policy": "h2o", "heavy_ratio": 0.1, "recent_ratio": 0.1}
    settings = {"kv": kv, "batch_size": args.batch_size, "compute_dtype": "f32"}

    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        inp.write_text("".join(json.dumps({"id": str(i), "prompt": p, "max_new_tokens": 16}) + "\n"
                               for i, p in enumerate(prompts)))
        start = time.perf_counter()
        subprocess.run([args.bin, "generate", "--model", args.model, "--input", str(inp),
                        "--output", str(out), "--set", "kv=" + json.dumps(kv),
                        "--set", f"batch_size={args.batch_size}", "--set", "compute_dtype=f32"],
                       check=True, capture_output=True)
        cli_s = time.perf_counter() - start
        cli = {r["id"]: r["text"] for r in map(json.loads, out.read_text().splitlines())}

    llm = h2oflex.LLM(args.model, **settings)

    class TimedSession:  # the native session, timing its generate call
        def __init__(self, inner):
            self.inner, self.seconds = inner, []

        def generate(self, *a, **k):
            t = time.perf_counter()
            try:
                return self.inner.generate(*a, **k)
            finally:
                self.seconds.append(time.perf_counter() - t)

    timed = TimedSession(llm._session)
    llm._session = timed
    native_s = timed.seconds
    start = time.perf_counter()
    outs = llm.generate(prompts, max_new_tokens=16)
    py_s = time.perf_counter() - start
    differing = [o.id for o in outs if o.text != cli[o.id]]
    python_layer = py_s - native_s[0]
    print(json.dumps({"prompts": len(prompts), "differing_texts": len(differing),
                      "cli_wall_s": round(cli_s, 3), "python_generate_wall_s": round(py_s, 3),
                      "python_layer_s": round(python_layer, 4),
                      "python_layer_share": round(python_layer / py_s, 5),
                      "engine_loop_s": round(outs[0].stats.generate_s, 3),
                      "completion_tokens": outs[0].stats.completion_tokens}, indent=1))
    if differing:
        raise SystemExit(f"texts differ for ids {differing[:10]}")


if __name__ == "__main__":
    main()
