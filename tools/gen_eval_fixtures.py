#!/usr/bin/env python3
"""Records an independent oracle for the perplexity evaluator (tests/fixtures/eval/expected.json).

The evaluator streams a text through the model token by token with the KV policy evicting for
real. This script re-derives what it must produce, for models/trained/opt-small-en and windows cut
from its heldout.txt, with its own OPT forward in float64 written from the safetensors weights
(HF's model is used only for the full-cache references and to check that forward):

  * full-cache per-token NLL of each window (HF OPTForCausalLM, f32 logits, log_softmax in f64),
  * per-token NLL under H2O (heavy H, recent R) and recent-only (H = 0) eviction, from the f64
    reference with a per-(layer, head) alive mask, and the kept positions at the end,
  * the full-cache perplexity of the whole heldout.txt (windows of 511 text tokens after the BOS,
    stride 511), from HF in f32.

Convention (that of experiments/eval/token_scorer.cc and of Reference in
tests/h2o/eviction_reference.h): a window is [BOS=2] + text tokens (encoded without special
tokens); the prefill is the BOS alone (kept, score 1.0 per head: its own query's probability);
then each token is fed once; the logits after each fed prefix predict the next token. At a decode
step of position t every (layer, head) attends over its alive set plus t, adds this query's
probabilities to the scores of those positions, makes t alive, and when more than H + R are alive
evicts the alive position j <= t - R with the smallest score (ties: the smallest j).

Eviction near-ties could flip between the f32 engine and this f64 reference, so for every
eviction decision the gap between the victim's score and the next-smallest candidate's is
measured; a window is used only when every gap is at least MIN_GAP (absolute) or MIN_REL_GAP
(relative to the next-smallest score); otherwise the next window offset is tried.

It needs a throwaway virtual environment OUTSIDE the repository:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    /tmp/hfvenv/bin/pip install transformers safetensors tokenizers

    /tmp/hfvenv/bin/python tools/gen_eval_fixtures.py      # -> tests/fixtures/eval/expected.json
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
from safetensors import safe_open
from transformers import AutoTokenizer, OPTForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_REL = os.path.join("models", "trained", "opt-small-en")
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "eval")

BOS_ID = 2
POSITION_OFFSET = 2  # OPT's learned positions start at row 2
LN_EPS = 1e-5
MIN_GAP = 1e-4
MIN_REL_GAP = 1e-3
MAX_LOGIT_DIFF = 1e-4
# (window tokens with the BOS, first text-token offset tried in heldout.txt)
WINDOWS = [(100, 0), (130, 9000), (160, 18000)]
OFFSET_STEP = 61
PPL_WINDOW = 511  # text tokens per window of the whole-text perplexity (+ BOS = 512)


def load_weights(model_dir):
    with safe_open(os.path.join(model_dir, "model.safetensors"), framework="pt") as f:
        return {
k: f.get_tensor(k).to(torch.float64) for k in f.keys()}


class Opt64:
    """OPT decoder (pre-LayerNorm, ReLU, tied head) in float64 from the raw weights."""

    def __init__(self, weights, config):
        self.w = weights
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.hidden = config["hidden_size"]
        self.dim = self.hidden // self.heads
        assert config["do_layer_norm_before"] and config["activation_function"] == "relu"
        assert config["word_embed_proj_dim"] == self.hidden
        assert "lm_head.weight" not in weights  # tied: the head is embed_tokens

    def p(self, name):
        return self.w["model.decoder." + name]

    def ln(self, x, name):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + LN_EPS) * self.p(name + ".weight") + \
            self.p(name + ".bias")

    def lin(self, x, name):
        return x @ self.p(name + ".weight").T + self.p(name + ".bias")

    def embed(self, token, position):
        return self.p("embed_tokens.weight")[token] + \
            self.p("embed_positions.weight")[position + POSITION_OFFSET]

    def head(self, x):
        return self.ln(x, "final_layer_norm") @ self.p("embed_tokens.weight").T

    def forward_full(self, ids):
        """Causal forward of a whole sequence, no eviction: logits [n, vocab]."""
        n = len(ids)
        x = torch.stack([self.embed(t, i) for i, t in enumerate(ids)])
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        for li in range(self.layers):
            pre = f"layers.{li}."
            h = self.ln(x, pre + "self_attn_layer_norm")
            q = self.lin(h, pre + "self_attn.q_proj").view(n, self.heads, self.dim) * \
                self.dim ** -0.5
            k = self.lin(h, pre + "self_attn.k_proj").view(n, self.heads, self.dim)
            v = self.lin(h, pre + "self_attn.v_proj").view(n, self.heads, self.dim)
            s = torch.einsum("qhd,khd->hqk", q, k).masked_fill(~causal, -math.inf)
            a = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v).reshape(n, self.hidden)
            x = x + self.lin(a, pre + "self_attn.out_proj")
            h = self.ln(x, pre + "final_layer_norm")
            x = x + self.lin(torch.relu(self.lin(h, pre + "fc1")), pre + "fc2")
        return self.head(x)

    def stream(self, ids, heavy, recent):
        """Teacher-forced streaming with H2O eviction per (layer, head).

        Returns the logits after each fed prefix (rows 0..n-2, row i predicts ids[i+1]), the kept
        positions per [layer][head] after the last fed token (position n-2) and after one more
        step feeding ids[n-1], and every eviction decision's score gap."""
        n, cap = len(ids), heavy + recent
        L, H = self.layers, self.heads
        K = torch.zeros(L, H, n, self.dim, dtype=torch.float64)
        V = torch.zeros_like(K)
        alive = torch.zeros(L, H, n, dtype=torch.bool)
        score = torch.zeros(L, H, n, dtype=torch.float64)
        gaps = []  # (absolute gap, relative gap, layer, head, t) per decision with >= 2 candidates
        logits, kept_scored = [], None
        for t in range(n):
            x = self.embed(ids[t], t)
            for li in range(L):
                pre = f"layers.{li}."
                h = self.ln(x, pre + "self_attn_layer_norm")
                q = self.lin(h, pre + "self_attn.q_proj").view(H, self.dim) * self.dim ** -0.5
                K[li, :, t] = self.lin(h, pre + "self_attn.k_proj").view(H, self.dim)
                V[li, :, t] = self.lin(h, pre + "self_attn.v_proj").view(H, self.dim)
                use = alive[li].clone()
                use[:, t] = True
                s = torch.einsum("hd,hkd->hk", q, K[li]).masked_fill(~use, -math.inf)
                pr = torch.softmax(s, -1)  # exactly 0 where not used
                a = torch.einsum("hk,hkd->hd", pr, V[li]).reshape(self.hidden)
                # Prefill of the BOS: its own probability (1.0); decode: this query's.
                score[li] += pr
                alive[li, :, t] = True
                for hh in range(H):
                    if int(alive[li, hh].sum()) <= cap:
                        continue
                    cand = [j for j in range(0, t - recent + 1) if alive[li, hh, j]]
                    sc = sorted((score[li, hh, j].item(), j) for j in cand)
                    victim = sc[0][1]
                    if len(sc) >= 2:
                        gap = sc[1][0] - sc[0][0]
                        gaps.append((gap, gap / sc[1][0] if sc[1][0] > 0 else math.inf,
                                     li, hh, t))
                    alive[li, hh, victim] = False
                x = x + self.lin(a, pre + "self_attn.out_proj")
                h = self.ln(x, pre + "final_layer_norm")
                x = x + self.lin(torch.relu(self.lin(h, pre + "fc1")), pre + "fc2")
            if t < n - 1:
                logits.append(self.head(x))
            if t == n - 2:
                kept_scored = alive.clone()
        def kept(a):
            return [[torch.nonzero(a[li, hh]).flatten().tolist() for hh in range(H)]
                    for li in range(L)]
        return torch.stack(logits), kept(kept_scored), kept(alive), gaps


def nll_of(logits, ids):
    """Per-token NLL of ids[1:] from logits rows 0..n-2 (log_softmax in float64)."""
    lp = torch.log_softmax(logits.to(torch.float64), -1)
    target = torch.tensor(ids[1:])
    return (-lp[torch.arange(len(target)), target]).tolist()


@torch.no_grad()
def hf_logits(model, ids):
    return model(input_ids=torch.tensor([ids])).logits[0].float()


def heldout_tokens(model_dir):
    """heldout.txt of model_dir as text tokens (no special tokens), the same from the model's
    tokenizer.json and from HF's AutoTokenizer, which must prepend the BOS."""
    tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    with open(os.path.join(model_dir, "heldout.txt"), encoding="utf-8") as f:
        text = f.read()
    tokens = tok.encode(text, add_special_tokens=False).ids
    auto = AutoTokenizer.from_pretrained(model_dir)
    assert auto(text, add_special_tokens=False).input_ids == tokens, "AutoTokenizer disagrees"
    assert auto("x").input_ids[0] == BOS_ID, "BOS must be prepended"
    print(f"heldout.txt: {len(tokens)} tokens", file=sys.stderr)
    return tokens


def gaps_ok(gaps):
    return all(g >= MIN_GAP or r >= MIN_REL_GAP for g, r, *_ in gaps)


def gap_summary(gaps):
    if not gaps:
        return {"decisions_with_choice": 0}
    g = min(gaps, key=lambda x: x[0])
    r = min(gaps, key=lambda x: x[1])
    return {
        "decisions_with_choice": len(gaps),
        "min_abs_gap": g[0],
        "min_abs_gap_at": {"layer": g[2], "head": g[3], "t": g[4], "rel_gap": g[1]},
        "min_rel_gap": r[1],
        "min_rel_gap_at": {"layer": r[2], "head": r[3], "t": r[4], "abs_gap": r[0]},
    }


def round_list(xs):
    return [float(f"{x:.10g}") for x in xs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=MODEL_REL, help="model directory, relative to the repo")
    parser.add_argument("--out", default=FIXTURE_DIR)
    args = parser.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    torch.manual_seed(0)
    model_dir = os.path.join(REPO, args.model)

    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    tokens = heldout_tokens(model_dir)

    hf = OPTForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                        attn_implementation="eager").eval()
    ref = Opt64(load_weights(model_dir), config)

    # Whole-text full-cache perplexity, HF f32.
    ppl_windows = []
    nll_sum, count = 0.0, 0
    for a in range(0, len(tokens), PPL_WINDOW):
        ids = [BOS_ID] + tokens[a:a + PPL_WINDOW]
        nll = nll_of(hf_logits(hf, ids), ids)
        nll_sum += sum(nll)
        count += len(nll)
        ppl_windows.append({"begin": a, "end": a + len(ids) - 1,
                            "nll_mean": float(f"{sum(nll) / len(nll):.10g}")})
    whole = {"text": "heldout.txt", "tokens": len(tokens), "window": PPL_WINDOW,
             "stride": PPL_WINDOW, "bos": BOS_ID, "scored": count, "nll_mean": nll_sum / count,
             "perplexity": math.exp(nll_sum / count), "windows": ppl_windows}
    print(f"heldout perplexity (HF f32, full cache): {whole['perplexity']:.4f} over {count} "
          "tokens", file=sys.stderr)

    # The f64 forward against HF on a long window, no eviction.
    check_ids = [BOS_ID] + tokens[:PPL_WINDOW]
    hf_l = hf_logits(hf, check_ids).double()
    diff_full = (ref.forward_full(check_ids) - hf_l).abs().max().item()
    print(f"f64 forward vs HF f32 logits ({len(check_ids)} tokens): max abs diff {diff_full:.3g}",
          file=sys.stderr)
    assert diff_full < MAX_LOGIT_DIFF, diff_full

    windows, stream_diffs = [], []
    for n, first in WINDOWS:
        heavy = recent = n // 10
        budgets = {"h2o_20": (heavy, recent), "h2o_full": (n // 2, n - n // 2),
                   "recent_only": (0, n // 5)}
        for off in range(first, len(tokens) - n, OFFSET_STEP):
            ids = [BOS_ID] + tokens[off:off + n - 1]
            got = {name: ref.stream(ids, h, r) for name, (h, r) in budgets.items()}
            all_gaps = [g for name in budgets for g in got[name][3]]
            summary = gap_summary(got["h2o_20"][3])
            print(f"  window n={n} offset {off}: h2o_20 {summary.get('decisions_with_choice')} "
                  f"decisions, min abs gap {summary.get('min_abs_gap', math.inf):.3g}, min rel "
                  f"gap {summary.get('min_rel_gap', math.inf):.3g} -> "
                  f"{'ok' if gaps_ok(all_gaps) else 'next offset'}", file=sys.stderr)
            if gaps_ok(all_gaps):
                break
        else:
            raise RuntimeError(f"no window of {n} tokens without eviction near-ties")
        hf_l = hf_logits(hf, ids)
        full_nll = nll_of(hf_l[:-1], ids)
        diff = (got["h2o_full"][0] - hf_l[:-1].double()).abs().max().item()
        stream_diffs.append(diff)
        assert diff < MAX_LOGIT_DIFF, diff
        entry = {"text_offset": off, "n": n, "ids": ids, "full_nll": round_list(full_nll),
                 "full_nll_mean": sum(full_nll) / len(full_nll), "budgets": {}}
        for name, (h, r) in budgets.items():
            logits, kept_scored, kept_all, gaps = got[name]
            nll = nll_of(logits, ids)
            b = {"heavy": h, "recent": r, "nll": round_list(nll),
                 "nll_mean": sum(nll) / len(nll),
                 "max_abs_diff_from_full_nll": max(abs(x - y) for x, y in zip(nll, full_nll)),
                 "gaps": gap_summary(gaps)}
            if name == "h2o_20":
                b["kept_after_last_fed"] = kept_scored
                b["kept_after_all"] = kept_all
            if name == "h2o_full":
                assert b["max_abs_diff_from_full_nll"] < 1e-4, b["max_abs_diff_from_full_nll"]
            entry["budgets"][name] = b
        windows.append(entry)
        print(f"window n={n} at {off}: full NLL {entry['full_nll_mean']:.4f}, h2o_20 "
              f"{entry['budgets']['h2o_20']['nll_mean']:.4f}, recent_only "
              f"{entry['budgets']['recent_only']['nll_mean']:.4f}", file=sys.stderr)

    all_h2o_gaps = [w["budgets"]["h2o_20"]["gaps"] for w in windows]
    expected = {
        "format_version": 1,
        "generator": {"script": "tools/gen_eval_fixtures.py", "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "tokenizers": tokenizers.__version__,
                      "safetensors": safetensors.__version__},
        "model_dir": args.model.replace(os.sep, "/"),
        "bos_id": BOS_ID,
        "convention": "window = [BOS] + text tokens; prefill = BOS alone (kept, score 1.0 per "
                      "head); each following token fed once; logits after each fed prefix "
                      "predict the next token; nll[i] = -log_softmax(logits)[ids[i+1]]; H2O per "
                      "(layer, head): scores add each decode query's probabilities over alive + "
                      "itself; over H+R alive evict the smallest-score alive j <= t-R (ties: "
                      "smallest j)",
        "checks": {
            "f64_vs_hf_f32_logits_max_abs_diff": diff_full,
            "f64_vs_hf_f32_logits_tokens": len(check_ids),
            "f64_streamed_no_eviction_vs_hf_max_abs_diff": max(stream_diffs),
            "min_gap_rule": {"abs": MIN_GAP, "rel": MIN_REL_GAP},
            "smallest_abs_gap": min(g.get("min_abs_gap", math.inf) for g in all_h2o_gaps),
            "smallest_rel_gap": min(g.get("min_rel_gap", math.inf) for g in all_h2o_gaps),
        },
        "heldout_perplexity": whole,
        "windows": windows,
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "expected.json")
    with open(path, "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    size = os.path.getsize(path)
    assert size <= 1_000_000, size
    print(f"wrote {path} ({size / 1e3:.0f} kB); smallest gap {expected['checks']}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
