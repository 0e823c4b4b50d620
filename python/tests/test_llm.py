"""The Python package against the h2oflex executable on the same inputs: the same texts (plain,
token-id and chat prompts), the same perplexity, the same errors (as ValueError), progress, and
Ctrl-C stopping between blocks. Run by ctest (python_package) with the module built into
PYTHONPATH, H2OFLEX_BIN the executable and H2OFLEX_SMOLLM2_DIR the real model's directory
(tools/fetch_smollm2.sh); the small demo model (models/demo/opt-demo) serves the rest."""

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

import h2oflex

BIN = os.environ["H2OFLEX_BIN"]
SMOLLM2 = os.environ["H2OFLEX_SMOLLM2_DIR"]
SOURCE = Path(os.environ["H2OFLEX_SOURCE_DIR"])
DEMO = str(SOURCE / "models/demo/opt-demo")
H2O = {"policy": "h2o", "heavy_ratio": 0.1, "recent_ratio": 0.1}
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
PROMPTS = [
    "The capital of France is",
    [504, 3575, 282, 4649, 314],  # its token ids, read as given
    CHAT,
    "def fibonacci(n):",
    "Water boils at",
]


def cli(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True)


def cli_generate(tmp_path, model, lines, *sets):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cli("generate", "--model", model, "--input", str(inp), "--output", str(out), *sets)
    return {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_generate_gives_the_executables_texts_on_the_real_model(tmp_path):
    llm = h2oflex.LLM(SMOLLM2, kv=H2O, compute_dtype="f32", batch_size=2)
    outs = llm.generate(PROMPTS, max_new_tokens=10)
    lines = []
    for i, p in enumerate(PROMPTS):
        key = "messages" if p is CHAT else "prompt"
        lines.append({"id": str(i), key: p, "max_new_tokens": 10})
    want = cli_generate(tmp_path, SMOLLM2, lines, "--set", "kv=" + json.dumps(H2O),
                        "--set", "compute_dtype=f32", "--set", "batch_size=2")
    assert [o.id for o in outs] == [str(i) for i in range(len(PROMPTS))]
    for o in outs:
        assert (o.text, o.completion_tokens, o.finish_reason, o.prompt_tokens) == (
            want[o.id]["text"], want[o.id]["completion_tokens"], want[o.id]["finish_reason"],
            want[o.id]["prompt_tokens"])
        assert len(o.token_ids) == o.completion_tokens
    assert outs[0].text.startswith(" Paris") and outs[1].token_ids == outs[0].token_ids
    stats = outs[0].stats
    assert stats.requests == 5 and stats.blocks_run == 3 and stats.kv == "h2o:0.1,0.1"
    assert stats.completion_tokens == sum(o.completion_tokens for o in outs)
    # In memory nothing moves between tiers; H2O at 0.1 + 0.1 keeps a fifth of the prompt's KV
    # (plus what the steps add within its budget), well under a full cache.
    assert stats.bytes_moved == {} and 0.0 < stats.kv_kept < 0.5


@pytest.fixture(scope="module")
def demo():
    return h2oflex.LLM(DEMO, kv=H2O, compute_dtype="f32", batch_size=2)


def test_statistics_say_the_bytes_each_call_moved(tmp_path):
    # Weights on disk: every call reads them (the same bytes for the same prompts, per call, not
    # summed over the session); a full cache keeps all the KV.
    llm = h2oflex.LLM(DEMO, compute_dtype="f32", kv={"policy": "full"},
                      policy={"gpu_batch_size": 2, "weights": {"gpu": 0, "cpu": 0}},
                      hardware={"disk_path": str(tmp_path)})
    first = llm.generate(["The river", "A stone"], max_new_tokens=3)[0].stats
    second = llm.generate(["The river", "A stone"], max_new_tokens=3)[0].stats
    assert first.bytes_moved["disk->device"] > 0
    assert first.bytes_moved == second.bytes_moved
    assert first.kv_kept == 1.0


def test_stop_strings_and_sampling_match_the_executable(demo, tmp_path):
    prompts = ["The river ran past", "Every morning she counted", "A stone"]
    outs = demo.generate(prompts, max_new_tokens=12, temperature=0.8, seed=5, stop=[" the"])
    want = cli_generate(tmp_path, DEMO,
                        [{"id": str(i), "prompt": p, "max_new_tokens": 12, "temperature": 0.8,
                          "seed": 5, "stop": [" the"]} for i, p in enumerate(prompts)],
                        "--set", "kv=" + json.dumps(H2O), "--set", "compute_dtype=f32",
                        "--set", "batch_size=2")
    for o in outs:
        assert (o.text, o.finish_reason) == (want[o.id]["text"], want[o.id]["finish_reason"])
        assert " the" not in o.text


def test_eval_perplexity_equals_the_executables(demo, tmp_path):
    text = (SOURCE / "models/trained/opt-small-en/heldout.txt").read_text()[:1500]
    got = demo.eval_perplexity(text, window=100, stride=50, context="prefill")
    (tmp_path / "t.txt").write_text(text)
    cli("eval", "perplexity", "--model", DEMO, "--text", str(tmp_path / "t.txt"), "--window",
        "100", "--stride", "50", "--context", "prefill", "--set", "kv=" + json.dumps(H2O),
        "--set", "compute_dtype=f32", "--set", "batch_size=2", "--json", str(tmp_path / "p.json"))
    want = json.loads((tmp_path / "p.json").read_text())
    assert (got["tokens"], got["windows"]) == (want["tokens"], want["windows"])
    assert got["perplexity"] == pytest.approx(want["perplexity"], rel=1e-12)


def test_bad_input_raises_value_error_with_the_engines_message(demo, tmp_path):
    with pytest.raises(ValueError, match="'lru'"):
        h2oflex.LLM(DEMO, kv={"policy": "lru"})
    with pytest.raises(ValueError, match="does not use prompt_len"):
        h2oflex.LLM(DEMO, prompt_len=8)
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    for f in ("config.json", "tokenizer.json", "vocab.json", "merges.txt"):
        shutil.copy(Path(DEMO) / f, weightless / f)
    with pytest.raises(ValueError, match="dummy"):
        h2oflex.LLM(str(weightless))
    with pytest.raises(ValueError, match=r"request 0: 'temperature' must be >= 0"):
        demo.generate(["a", "b"], temperature=-1)
    with pytest.raises(ValueError, match="beyond the vocabulary"):
        demo.generate([[10**6]])
    with pytest.raises(ValueError, match="already request 0"):
        demo.generate(["a", "b"], ids=["x", "x"])
    with pytest.raises(ValueError, match="chat template"):
        demo.generate([CHAT])


def test_progress_and_ctrl_c_stop_between_blocks():
    llm = h2oflex.LLM(DEMO, compute_dtype="f32", batch_size=1)
    seen = []
    llm.generate(["a b", "c d", "e f"], max_new_tokens=2,
                 progress=lambda done, total, tokens: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]

    def interrupt(done, total, tokens):
        if done == 1:
            signal.raise_signal(signal.SIGINT)  # as Ctrl-C would, during the run

    with pytest.raises(KeyboardInterrupt):
        llm.generate(["a b", "c d", "e f"], max_new_tokens=2, progress=interrupt)
    # The session is still usable after the interruption.
    assert llm.generate("a b", max_new_tokens=2)[0].completion_tokens == 2


def test_run_experiment_and_plan():
    result = h2oflex.run_experiment({"model": DEMO, "prompt_len": 8, "gen_len": 2,
                                     "batch_size": 2, "compute_dtype": "f32"})
    assert result["batch_size"] == 2 and len(result["tokens"][0]) == 2
    planned = h2oflex.plan(str(SOURCE / "experiments/quickstart.yaml"))
    assert all(v["plan_only"] for v in planned["variants"])
