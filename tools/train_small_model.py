#!/usr/bin/env python3
"""Trains a small English model (OPT, or LLaMA with GQA) for the quality harness.

Output of the default --arch opt, models/trained/opt-small-en/:
  config.json, model.safetensors              OPTForCausalLM, trained in f32, stored bf16
  tokenizer.json, vocab.json, merges.txt,     byte-level BPE trained here, OPT's conventions
  tokenizer_config.json, special_tokens_map.json
  heldout.txt                                 plain text from the held-out documents
  choice_next_sentence.jsonl                  next-sentence multiple choice on held-out documents
  train_stats.json, README.md                 data, hyperparameters, results, the retrain command

--arch llama writes models/trained/llama-small-en/ with the same files: LlamaForCausalLM, bf16,
4 attention heads sharing 2 key-value heads (grouped-query attention), SwiGLU, RMSNorm, rotary
positions, tied embeddings. It trains no tokenizer: the tokenizer files, heldout.txt and
choice_next_sentence.jsonl are copied from --tokenizer-from (by default
models/trained/opt-small-en), so both models read the same text as the same tokens and are scored
on the same held-out files.

The text is the English documentation that Debian's `python3.11-doc` package ships, read from its
reStructuredText sources (/usr/share/doc/python3.11/html/_sources/**/*.rst.txt) and cleaned
lightly: directives, literal blocks, doctests, tables and section titles are dropped, inline
markup is reduced to its text, each remaining paragraph is one line. Documents are split by a hash
of their path: 5% validation, 5% held out, the rest training.

It needs the package and a throwaway virtual environment OUTSIDE the repository:

    apt-get install python3.11-doc
    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
        # if that index is unreachable: /tmp/hfvenv/bin/pip install torch   (wheel from PyPI)
    /tmp/hfvenv/bin/pip install transformers safetensors tokenizers

    /tmp/hfvenv/bin/python tools/train_small_model.py               # ~42 minutes on 2 cores
    /tmp/hfvenv/bin/python tools/train_small_model.py --minutes 1.5 --out /tmp/smoke  # smoke run

    # a further stage, warm-started from the weights of a model this script wrote
    /tmp/hfvenv/bin/python tools/train_small_model.py --init-from models/trained/opt-small-en \
        --minutes 42

    # the LLaMA/GQA model, from scratch on one thread, with opt-small-en's tokenizer and files
    /tmp/hfvenv/bin/python tools/train_small_model.py --arch llama \
        --tokenizer-from models/trained/opt-small-en --threads 1 --minutes 40

--init-from DIR starts from DIR's weights (DIR written with the same --arch) with a fresh
optimizer and a fresh warm-up + cosine schedule. It reuses DIR's tokenizer (tokenizer.json)
instead of training one, and copies (or, when --out is DIR, leaves untouched) DIR's tokenizer
files, heldout.txt and choice_next_sentence.jsonl, so the held-out files stay valid; the document
split is the same path hash as always. The stages so far are carried over from DIR's
train_stats.json into the new one. --tokenizer-from DIR reuses and copies the same files but
starts the model from scratch, with no stages carried over. Either way the train and validation
token counts are checked against DIR's train_stats.json.

Training stops on wall-clock (--minutes): the first steps measure the speed, the step count is
sized to the budget, and the learning-rate schedule advances by whichever of step / total steps
and elapsed / budget is further along, so the decay ends by the deadline even when the machine
slows down. Seeds are fixed; the number of steps (and so the weights) depends on the speed.
--threads sets torch's thread count (2 by default).
"""

import argparse
import glob
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import tempfile
import time

import torch
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, OPTConfig, OPTForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIRS = {"opt": os.path.join(REPO, "models", "trained", "opt-small-en"),
            "llama": os.path.join(REPO, "models", "trained", "llama-small-en")}
TOKENIZER_FROM_REL = "models/trained/opt-small-en"  # --arch llama's default --tokenizer-from
PACKAGE = "python3.11-doc"
SOURCE_DIR = "/usr/share/doc/python3.11/html/_sources"

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0..3, as OPT reserves them
OPT_ADDED = ["<pad>", "</s>"]
PAD_ID, BOS_ID, EOS_ID = 1, 2, 2
SEQ = 512
SEED = 1234

ARCH = dict(vocab_size=6144, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
            ffn_dim=1024, max_position_embeddings=SEQ, word_embed_proj_dim=256)
LLAMA_ARCH = dict(vocab_size=6144, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=688, max_position_embeddings=SEQ)
LLAMA_RMS_EPS = 1e-5
LLAMA_ROPE_THETA = 10000.0
ARCHS = {"opt": ARCH, "llama": LLAMA_ARCH}
MODEL_CLASSES = {"opt": OPTForCausalLM, "llama": LlamaForCausalLM}

HELDOUT_TOKENS = 30000
CHOICE_ITEMS = 200

# ---------------------------------------------------------------- text

# Directives whose body is prose about the thing they declare: the body is kept.
KEEP_BODY = {"function", "method", "class", "attribute", "data", "exception", "describe",
             "decorator", "decoratormethod", "classmethod", "staticmethod", "abstractmethod",
             "opcode", "cmdoption", "option", "envvar", "note", "warning", "tip", "important",
             "seealso", "versionadded", "versionchanged", "deprecated", "deprecated-removed",
             "impl-detail", "c:function", "c:type", "c:var", "c:member", "c:macro", "c:struct",
             "c:data", "pdbcommand", "availability", "admonition", "attention", "caution",
             "hint", "topic", "sidebar", "rubric", "coroutinemethod", "coroutinefunction",
             "awaitablemethod", "awaitablefunction", "program", "currentmodule", "module"}

ROLE = re.compile(r":[\w:+-]+:`([^`]*)`")
LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`__?")
TITLED = re.compile(r"^(.*?)\s*<[^>]*>$")
UNDERLINE = re.compile(r"^([=\-~^*#+\"'`.:_])\1{2,}\s*$")
BULLET = re.compile(r"^(?:[*\-+]|#\.|\d+\.|\(?[a-z0-9]\))\s+")
SENT_SPLIT = re.compile(r"(?<=[a-z0-9)\]\"'][.!?])\s+(?=[A-Z\"(])")


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def inline(text):
    """Inline markup reduced to its text."""
    def role(m):
        body = m.group(1)
        t = TITLED.match(body)
        if t:
            body = t.group(1)
        return body.lstrip("!~")
    text = ROLE.sub(role, text)
    text = LINK.sub(lambda m: m.group(1), text)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"`([^`]*)`_?", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", text)
    text = re.sub(r"\|([\w-]+)\|", r"\1", text)
    text = re.sub(r"\[#\w*\]_|\[\d+\]_", "", text)
    text = text.replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def clean_rst(raw):
    """Paragraphs of prose (one string each) from one reST source."""
    lines = raw.replace("\t", "    ").split("\n")
    kept = []          # dedented lines, "" for a paragraph break
    skip_above = None  # skip blank lines and lines indented more than this
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        ind = indent_of(line)
        if skip_above is not None:
            if not line.strip() or ind > skip_above:
                i += 1
                continue
            skip_above = None
        if not line.strip():
            kept.append("")
            i += 1
            continue
        s = line.strip()
        if s.startswith(".. "):
            m = re.match(r"\.\.\s+([\w:-]+)::", s)
            kept.append("")
            if m and m.group(1) in KEEP_BODY:
                # Drop the directive line and its :option: lines, keep the body.
                i += 1
                while i < len(lines) and lines[i].strip().startswith(":") and \
                        indent_of(lines[i]) > ind:
                    i += 1
                continue
            skip_above = ind
            i += 1
            continue
        if s == "..":
            skip_above = ind
            i += 1
            continue
        if s.startswith(">>>") or s.startswith("+-") or s.startswith("|") or UNDERLINE.match(s):
            kept.append("")
            if s.startswith(">>>"):  # a doctest runs to the next blank line
                while i < len(lines) and lines[i].strip():
                    i += 1
                continue
            if UNDERLINE.match(s) and kept and len(kept) >= 2 and kept[-2]:
                kept[-2] = ""  # the title above the underline
            i += 1
            continue
        if s.endswith("::"):
            s = s[:-2].rstrip()
            s = s + ":" if s and not s.endswith(":") else s
            if s:
                kept.append(s)
            kept.append("")
            skip_above = ind
            i += 1
            continue
        kept.append(s)
        i += 1
    paragraphs, cur = [], []
    for s in kept + [""]:
        if s:
            if cur and BULLET.match(s):  # a new list item starts a new paragraph
                paragraphs.append(" ".join(cur))
                cur = []
            cur.append(s)
        elif cur:
            paragraphs.append(" ".join(cur))
            cur = []
    out = []
    for p in paragraphs:
        p = inline(BULLET.sub("", p))
        if len(p) < 40:
            continue
        letters = sum(c.isalpha() or c == " " for c in p)
        if letters < 0.85 * len(p) or len(p.split()) < 6:
            continue
        out.append(p)
    return out


def split_of(rel):
    """Deterministic document split by path: validation, heldout or train."""
    h = int(hashlib.sha256(rel.encode()).hexdigest(), 16) % 20
    return "validation" if h == 0 else "heldout" if h == 1 else "train"


def load_documents(source):
    docs = {"train": [], "validation": [], "heldout": []}
    for path in sorted(glob.glob(os.path.join(source, "**", "*.rst.txt"), recursive=True)):
        rel = os.path.relpath(path, source)
        if rel.startswith("whatsnew/changelog"):
            continue  # generated list of issue titles, not prose
        with open(path, encoding="utf-8") as f:
            paras = clean_rst(f.read())
        if paras:
            docs[split_of(rel)].append((rel, paras))
    return docs


def package_version(name):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", name], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------- tokenizer

def train_tokenizer(texts, vocab_size):
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    trained.train_from_iterator(texts, trainer=trainer)
    # Rebuilt as OPT ships it: only <pad> and </s> are added (special) tokens, </s> is prepended.
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path, merges_path = trained.model.save(tmp)
        tok = Tokenizer(models.BPE.from_file(vocab_path, merges_path))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in OPT_ADDED])
    tok.post_processor = processors.TemplateProcessing(single="</s> $A", pair="</s> $A </s> $B",
                                                       special_tokens=[("</s>", BOS_ID)])
    vocab = tok.get_vocab()
    assert len(vocab) == vocab_size, (len(vocab), vocab_size)
    for i, s in enumerate(SPECIALS):
        assert vocab[s] == i, (s, vocab[s])
    return tok


def write_tokenizer(tok, out_dir):
    tok.model.save(out_dir)  # vocab.json + merges.txt
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)
    specials = {"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>",
                "pad_token": "<pad>"}
    with open(os.path.join(out_dir, "special_tokens_map.json"), "w") as f:
        json.dump(specials, f, indent=2)
        f.write("\n")
    config = dict(tokenizer_class="GPT2Tokenizer", add_bos_token=True, add_prefix_space=False,
                  **specials)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def encode(tok, text):
    return tok.encode(text, add_special_tokens=False).ids


# ---------------------------------------------------------------- model

def make_model(vocab_size, arch_name="opt"):
    if arch_name == "llama":
        arch = dict(LLAMA_ARCH, vocab_size=vocab_size)
        config = LlamaConfig(pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                             hidden_act="silu", rms_norm_eps=LLAMA_RMS_EPS,
                             rope_parameters={"rope_type": "default",
                                              "rope_theta": LLAMA_ROPE_THETA},
                             attention_bias=False, mlp_bias=False, attention_dropout=0.0,
                             tie_word_embeddings=True, **arch)
        config._attn_implementation = "sdpa"
        model = LlamaForCausalLM(config)
        assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
        return model
    arch = dict(ARCH, vocab_size=vocab_size)
    config = OPTConfig(pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                       activation_function="relu", dropout=0.0, attention_dropout=0.0,
                       layerdrop=0.0, do_layer_norm_before=True, tie_word_embeddings=True,
                       enable_bias=True, **arch)
    config._attn_implementation = "sdpa"
    model = OPTForCausalLM(config)
    assert model.lm_head.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr()
    return model


def windows(stream, seq=SEQ):
    """Non-overlapping windows [BOS] + seq-1 text tokens (the last one may be shorter)."""
    step = seq - 1
    return [[BOS_ID] + stream[a:a + step] for a in range(0, len(stream), step)
            if len(stream[a:a + step]) > 0]


@torch.no_grad()
def evaluate(model, wins):
    """Perplexity with every text token of every window scored (summed NLL / token count)."""
    model.eval()
    nll, count = 0.0, 0
    for w in wins:
        ids = torch.tensor([w])
        logits = model(input_ids=ids).logits[0, :-1].double()
        lp = torch.log_softmax(logits, dim=-1)
        nll -= lp.gather(1, ids[0, 1:, None]).sum().item()
        count += len(w) - 1
    model.train()
    return math.exp(nll / count), count


def set_attention(model, impl):
    model.config._attn_implementation = impl
    for m in model.modules():
        if hasattr(m, "config") and m is not model:
            m.config._attn_implementation = impl


@torch.no_grad()
def attention_entropy(model, wins):
    """Mean entropy of attention rows vs a uniform distribution over the same causal prefix."""
    model.eval()
    set_attention(model, "eager")
    per_layer = maxp_sum = None
    uni_sum, rows = 0.0, 0
    for w in wins:
        ids = torch.tensor([w])
        out = model(input_ids=ids, output_attentions=True)
        n = len(w)
        uniform = torch.log(torch.arange(1, n + 1, dtype=torch.float64))[1:]  # rows 1..n-1
        if per_layer is None:
            per_layer = [0.0] * len(out.attentions)
            maxp_sum = [0.0] * len(out.attentions)
        for li, a in enumerate(out.attentions):
            p = a[0].double()[:, 1:, :]  # [heads, rows, keys]; row 0 has one key
            ent = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)
            per_layer[li] += ent.mean(0).sum().item()
            maxp_sum[li] += p.max(-1).values.mean(0).sum().item()
        uni_sum += uniform.sum().item()
        rows += n - 1
    set_attention(model, "sdpa")
    model.train()
    layers = [x / rows for x in per_layer]
    return {"rows": rows, "uniform_entropy_nats": uni_sum / rows,
            "entropy_nats_per_layer": layers, "entropy_nats_mean": sum(layers) / len(layers),
            "max_prob_per_layer": [x / rows for x in maxp_sum]}


# ---------------------------------------------------------------- tasks

def sentences(paragraph):
    return [s.strip() for s in SENT_SPLIT.split(paragraph) if s.strip()]


def heldout_text(tok, docs, limit):
    """Whole paragraphs of the held-out documents, in order, up to about `limit` tokens."""
    out, n = [], 0
    for _, paras in docs:
        for p in paras:
            if n >= limit:
                return "\n\n".join(out) + "\n", n
            out.append(p)
            n += len(encode(tok, p)) + 1
    return "\n\n".join(out) + "\n", n


def choice_tasks(docs, count, seed):
    """Context = a paragraph's first sentences; choices = its next sentence + 3 from elsewhere."""
    rng = random.Random(seed)

    def ok(s):
        return 4 <= len(s.split()) <= 60 and s[-1] in ".!?:" and "  " not in s
    pool = []  # (document index, sentence) for distractors
    for d, (_, paras) in enumerate(docs):
        for p in paras:
            pool += [(d, s) for s in sentences(p) if ok(s)]
    cands = []
    for d, (rel, paras) in enumerate(docs):
        for pi, p in enumerate(paras):
            ss = sentences(p)
            if len(ss) < 3:
                continue
            k = min(3, len(ss) - 1)
            ctx, nxt = " ".join(ss[:k]), ss[k]
            if not ok(nxt) or len(ctx) < 60:
                continue
            cands.append((d, rel, pi, ctx, nxt))
    rng.shuffle(cands)
    items = []
    for d, rel, pi, ctx, nxt in cands[:count]:
        distract = set()
        while len(distract) < 3:
            dd, s = rng.choice(pool)
            if dd != d and s != nxt:
                distract.add(s)
        choices = sorted(distract)
        rng.shuffle(choices)
        answer = rng.randrange(4)
        choices.insert(answer, nxt)
        items.append({"id": f"{rel.replace('.rst.txt', '')}#p{pi}", "context": ctx.rstrip(),
                      "choices": [" " + c for c in choices], "answer": answer})
    items.sort(key=lambda x: x["id"])
    return items


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(ARCHS), default="opt",
                        help="OPTForCausalLM (default) or LlamaForCausalLM with 2 KV heads (GQA)")
    parser.add_argument("--minutes", type=float, default=40.0, help="training wall-clock budget")
    parser.add_argument("--out", default=None,
                        help="output directory (default models/trained/opt-small-en, or "
                             "models/trained/llama-small-en for --arch llama)")
    parser.add_argument("--source", default=SOURCE_DIR, help="reST sources of " + PACKAGE)
    parser.add_argument("--batch", type=int, default=8, help="sequences of 512 tokens per step")
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--eval-every", type=float, default=5.0, help="minutes between evals")
    parser.add_argument("--warmup", type=int, default=60, help="learning-rate warm-up steps")
    parser.add_argument("--init-from", default=None, metavar="DIR",
                        help="warm start from DIR's weights and tokenizer (a further stage)")
    parser.add_argument("--tokenizer-from", default=None, metavar="DIR",
                        help="from scratch, but with DIR's tokenizer and held-out files "
                             f"(--arch llama without --init-from: {TOKENIZER_FROM_REL})")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--choice-json", default=None, metavar="FILE",
                        help="with --readme-only: record the accuracy from this "
                             "`h2oflex eval choice --json` output in train_stats.json first")
    parser.add_argument("--readme-only", action="store_true",
                        help="rewrite README.md from the output's train_stats.json, no training")
    args = parser.parse_args()
    if args.out is None:
        args.out = OUT_DIRS[args.arch]
    if args.init_from and args.tokenizer_from:
        parser.error("--init-from already brings the tokenizer; give one of the two")
    if args.arch == "llama" and not args.init_from and not args.tokenizer_from:
        args.tokenizer_from = TOKENIZER_FROM_REL
    if args.readme_only:
        with open(os.path.join(args.out, "train_stats.json")) as f:
            stats = json.load(f)
        if args.choice_json:
            with open(args.choice_json) as f:
                c = json.load(f)
            rec = {"acc": c["acc"], "acc_norm": c["acc_norm"], "n": c["n"],
                   "context": c.get("context"), "kv": c.get("kv")}
            stats["choice_full_cache"] = rec
            stages(stats)[-1]["choice_full_cache"] = rec
            with open(os.path.join(args.out, "train_stats.json"), "w") as f:
                json.dump(stats, f, indent=1)
                f.write("\n")
        write_readme(args, stats)
        return

    t_start = time.time()
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    random.seed(SEED)

    docs = load_documents(args.source)
    texts = {k: ["\n\n".join(p) for _, p in v] for k, v in docs.items()}
    for k, v in docs.items():
        chars = sum(len(t) for t in texts[k])
        print(f"{k}: {len(v)} documents, {chars / 1e6:.2f} M characters", flush=True)

    os.makedirs(args.out, exist_ok=True)
    arch = ARCHS[args.arch]
    model_class = MODEL_CLASSES[args.arch]
    init = os.path.abspath(args.init_from) if args.init_from else None
    # The directory whose tokenizer and held-out files are reused: --init-from or --tokenizer-from.
    inherit = init or (os.path.abspath(args.tokenizer_from) if args.tokenizer_from else None)
    same_dir = inherit is not None and os.path.samefile(inherit, args.out)
    if inherit is None:
        tok = train_tokenizer(texts["train"], ARCH["vocab_size"])
        write_tokenizer(tok, args.out)
        prev_stages = []
    else:
        tok = Tokenizer.from_file(os.path.join(inherit, "tokenizer.json"))
        assert tok.get_vocab_size() == arch["vocab_size"], tok.get_vocab_size()
        if not same_dir:
            for name in INHERITED:
                shutil.copyfile(os.path.join(inherit, name), os.path.join(args.out, name))
        with open(os.path.join(inherit, "train_stats.json")) as f:
            prev_stats = json.load(f)
        prev_stages = stages(prev_stats) if init is not None else []

    train_stream = []
    for t in texts["train"]:
        train_stream += [EOS_ID] + encode(tok, t)  # </s> opens every document, as BOS at eval
    val_stream = encode(tok, "\n\n".join(texts["validation"]))
    train_chars = sum(len(t) for t in texts["train"])
    print(f"train tokens {len(train_stream)} ({train_chars / len(train_stream):.2f} chars/token), "
          f"validation tokens {len(val_stream)}", flush=True)
    if inherit is not None:
        assert len(train_stream) == prev_stats["train_tokens"], "train split or tokenizer differs"
        assert len(val_stream) == prev_stats["validation_tokens"], "validation split differs"
    val_wins = windows(val_stream)
    val_quick = val_wins[:12]
    train_eval_wins = windows(train_stream[1:])[:: max(1, len(train_stream) // SEQ // 60)][:60]

    if init is None:
        model = make_model(arch["vocab_size"], args.arch)
    else:
        with open(os.path.join(init, "config.json")) as f:
            init_type = json.load(f)["model_type"]
        assert init_type == args.arch, f"--init-from {init} is a {init_type} model; give --arch"
        model = model_class.from_pretrained(init, torch_dtype=torch.float32)
        for k, v in arch.items():
            assert getattr(model.config, k) == v, (k, getattr(model.config, k), v)
        set_attention(model, "sdpa")
        assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
        if "heldout_ppl" not in prev_stages[-1]:  # the starting point's held-out figure
            with open(os.path.join(init, "heldout.txt"), encoding="utf-8") as f:
                prev_stages[-1]["heldout_ppl"] = evaluate(
                    model, windows(encode(tok, f.read())))[0]
            print(f"starting point: heldout ppl {prev_stages[-1]['heldout_ppl']:.2f}", flush=True)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters {n_params} ({n_params * 4 / 1e6:.2f} MB f32)", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed_positions" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and
                                                               "embed_positions" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-8)
    gen = torch.Generator().manual_seed(SEED)
    starts_max = len(train_stream) - SEQ - 1

    def batch():
        starts = torch.randint(0, starts_max, (args.batch,), generator=gen).tolist()
        rows = [[BOS_ID] + train_stream[s + 1:s + 1 + SEQ] for s in starts]  # 513 tokens
        x = torch.tensor(rows)
        return x[:, :-1], x[:, 1:]

    budget = args.minutes * 60.0
    warmup = args.warmup
    total_steps = None
    measured = 0.0
    t_train = time.time()
    last_eval = t_train
    step, tokens, loss_ema = 0, 0, None
    history = []
    while True:
        elapsed = time.time() - t_train
        if elapsed >= budget or (total_steps is not None and step >= total_steps):
            break
        if step == 20:
            rate = step / elapsed
            total_steps = max(warmup + 10, int(rate * budget * 0.97))
            measured = rate * args.batch * SEQ
            print(f"speed {measured:.0f} tokens/s over the first {step} steps -> "
                  f"{total_steps} steps planned ({total_steps * args.batch * SEQ / 1e6:.1f} M "
                  f"tokens, {total_steps * args.batch * SEQ / len(train_stream):.1f} epochs)",
                  flush=True)
        progress = max(elapsed / budget, step / total_steps if total_steps else 0.0)
        lr = args.lr * min(1.0, (step + 1) / warmup) * \
            (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch()
        logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        loss_ema = loss.item() if loss_ema is None else 0.98 * loss_ema + 0.02 * loss.item()
        if step % 25 == 0:
            print(f"step {step} tokens {tokens / 1e6:.2f}M lr {lr:.2e} train loss(ema) "
                  f"{loss_ema:.3f} ppl {math.exp(loss_ema):.1f} "
                  f"elapsed {(time.time() - t_train) / 60:.1f} min", flush=True)
        if time.time() - last_eval >= args.eval_every * 60:
            ppl, _ = evaluate(model, val_quick)
            history.append({"step": step, "tokens": tokens, "val_ppl_quick": round(ppl, 3)})
            print(f"  eval step {step}: validation ppl (first {len(val_quick)} windows) "
                  f"{ppl:.2f}", flush=True)
            last_eval = time.time()
    train_seconds = time.time() - t_train
    print(f"trained {step} steps, {tokens} tokens in {train_seconds / 60:.1f} min", flush=True)

    model.eval()
    val_ppl, val_count = evaluate(model, val_wins)
    train_ppl, train_count = evaluate(model, train_eval_wins)
    ent = attention_entropy(model, val_wins[:8])
    print(f"validation ppl {val_ppl:.2f} over {val_count} tokens; train ppl {train_ppl:.2f} over "
          f"{train_count} tokens", flush=True)
    print(f"attention entropy {ent['entropy_nats_mean']:.3f} nats vs uniform "
          f"{ent['uniform_entropy_nats']:.3f}; per layer "
          f"{[round(x, 3) for x in ent['entropy_nats_per_layer']]}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(args.out, name))
    # Stored in bf16: half the bytes in the repository (the tests' fixtures are made from these).
    from store_trained_bf16 import convert
    convert(args.out)
    size = os.path.getsize(os.path.join(args.out, "model.safetensors"))
    assert size <= 20e6, size

    if inherit is None:
        ho_text, ho_tokens = heldout_text(tok, docs["heldout"], HELDOUT_TOKENS)
        with open(os.path.join(args.out, "heldout.txt"), "w", encoding="utf-8") as f:
            f.write(ho_text)
        items = choice_tasks(docs["heldout"], CHOICE_ITEMS, SEED)
        with open(os.path.join(args.out, "choice_next_sentence.jsonl"), "w",
                  encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
    else:  # inherited, unchanged
        with open(os.path.join(args.out, "heldout.txt"), encoding="utf-8") as f:
            ho_text = f.read()
        with open(os.path.join(args.out, "choice_next_sentence.jsonl"), encoding="utf-8") as f:
            items = [json.loads(line) for line in f if line.strip()]
    ho_tokens = len(encode(tok, ho_text))
    # Full-cache perplexity of heldout.txt: [BOS] + 511 text tokens, stride 511 (HF f32).
    heldout_ppl, heldout_count = evaluate(model, windows(encode(tok, ho_text)))
    print(f"heldout ppl {heldout_ppl:.4f} over {heldout_count} tokens", flush=True)

    stats = {
        "package": PACKAGE, "package_version": package_version(PACKAGE),
        "documents": {k: len(v) for k, v in docs.items()},
        "heldout_documents": [rel for rel, _ in docs["heldout"]],
        "validation_documents": [rel for rel, _ in docs["validation"]],
        "train_tokens": len(train_stream), "validation_tokens": len(val_stream),
        "chars_per_token": train_chars / len(train_stream),
        "parameters": n_params, "model_bytes": size,
        "steps": step, "tokens_seen": tokens, "epochs": tokens / len(train_stream),
        "train_minutes": train_seconds / 60, "total_minutes": (time.time() - t_start) / 60,
        "val_ppl": val_ppl, "val_tokens_scored": val_count, "train_ppl": train_ppl,
        "train_tokens_scored": train_count, "attention": ent, "history": history,
        "heldout_tokens": ho_tokens, "choice_items": len(items),
        "batch": args.batch, "lr": args.lr, "minutes": args.minutes,
        "measured_tokens_per_s": measured,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "heldout_ppl": heldout_ppl, "heldout_tokens_scored": heldout_count,
        "warmup": warmup, "init_from": args.init_from,
        "arch": args.arch, "tokenizer_from": args.tokenizer_from, "threads": args.threads,
    }
    stats["stages"] = prev_stages + [stage_record(stats)]
    with open(os.path.join(args.out, "train_stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
        f.write("\n")
    write_readme(args, stats)
    print(f"done in {(time.time() - t_start) / 60:.1f} min -> {args.out}", flush=True)


INHERITED = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
             "special_tokens_map.json", "heldout.txt", "choice_next_sentence.jsonl")
STAGE_KEYS = ("init_from", "minutes", "batch", "lr", "warmup", "steps", "tokens_seen", "epochs",
              "train_minutes", "total_minutes", "measured_tokens_per_s", "val_ppl", "train_ppl",
              "heldout_ppl", "attention", "history", "choice_full_cache", "torch", "transformers",
              "arch", "tokenizer_from", "threads")


def stage_record(s):
    return {k: s[k] for k in STAGE_KEYS if k in s}


def stages(s):
    """The training stages of a train_stats.json (one written before stages existed: itself)."""
    return s["stages"] if "stages" in s else [stage_record(s)]


def write_readme(args, s):
    a = s["attention"]
    layers = ", ".join(f"{x:.2f}" for x in a["entropy_nats_per_layer"])
    maxp = ", ".join(f"{x:.2f}" for x in a["max_prob_per_layer"])
    ratio = a["entropy_nats_mean"] / a["uniform_entropy_nats"]
    verdict = ("far from uniform" if ratio < 0.7 else "clearly below uniform" if ratio < 0.85
               else "only moderately below uniform (a weakly trained model)")
    st = stages(s)
    stage_text, result_rows, retrain = "", [], []
    for i, g in enumerate(st, 1):
        speed = g["tokens_seen"] / (g["train_minutes"] * 60)
        hist = "\n".join(f"| {h['step']} | {h['tokens'] / 1e6:.2f} M | {h['val_ppl_quick']:.2f} |"
                         for h in g["history"])
        origin = (f"warm-started from `{g['init_from']}` (the weights of stage {i - 1})"
                  if g.get("init_from") else
                  f"from scratch (tokenizer and held-out files from `{g['tokenizer_from']}`)"
                  if g.get("tokenizer_from") else "from scratch (tokenizer trained first)")
        stage_text += f"""### Stage {i}: {origin}

Batch {g['batch']} sequences, peak learning rate {g['lr']}, {g.get('warmup', 60)} warm-up steps,
budget {g['minutes']:g} minutes; torch {g['torch']}, transformers {g['transformers']}:
{g['steps']} steps, {g['tokens_seen']} tokens seen ({g['epochs']:.2f} epochs of the train split) in
{g['train_minutes']:.1f} minutes ({speed:.0f} tokens/s on average; the first 20 steps measured
{g.get('measured_tokens_per_s', 0):.0f}); the whole run took {g['total_minutes']:.1f} minutes.

| step | tokens | validation ppl (first 12 windows) |
|---|---|---|
{hist}
| {g['steps']} (end) | {g['tokens_seen'] / 1e6:.2f} M | all windows: {g['val_ppl']:.2f} |

"""
        ga = g["attention"]
        ch = g.get("choice_full_cache")
        ho = g.get("heldout_ppl")
        result_rows.append(
            f"| stage {i} | {g['val_ppl']:.2f} | {g['train_ppl']:.2f} | "
            f"{'%.2f' % ho if ho else '-'} | "
            f"{', '.join('%.2f' % x for x in ga['entropy_nats_per_layer'])} | "
            f"{ga['entropy_nats_mean']:.2f} / {ga['uniform_entropy_nats']:.2f} "
            f"({ga['entropy_nats_mean'] / ga['uniform_entropy_nats']:.0%}) | "
            f"{', '.join('%.2f' % x for x in ga['max_prob_per_layer'])} | "
            f"{'%.3f' % ch['acc'] if ch else '-'} |")
        cmd = "/tmp/hfvenv/bin/python tools/train_small_model.py"
        if g.get("arch", "opt") != "opt":
            cmd += f" --arch {g['arch']}"
        if g.get("init_from"):
            cmd += f" --init-from {g['init_from']}"
        if g.get("tokenizer_from"):
            cmd += f" --tokenizer-from {g['tokenizer_from']}"
        if g.get("threads", 2) != 2:
            cmd += f" --threads {g['threads']}"
        if g["batch"] != 8:
            cmd += f" --batch {g['batch']}"
        if g["lr"] != 1.5e-3:
            cmd += f" --lr {g['lr']}"
        if g.get("warmup", 60) != 60:
            cmd += f" --warmup {g['warmup']}"
        retrain.append(f"{cmd} --minutes {g['minutes']:g}   # stage {i}")
    stage_text = stage_text
    result_rows = "\n".join(result_rows)
    retrain = "\n".join(retrain)
    heldout_final = "" if "heldout_ppl" not in s else \
        f", `heldout.txt` **{s['heldout_ppl']:.2f}** ({s['heldout_tokens_scored']} tokens)"
    ch = s.get("choice_full_cache")
    choice_text = "" if not ch else f"""

Next-sentence choice (`h2oflex eval choice --context prefill`, full cache) on
`choice_next_sentence.jsonl`: acc {ch['acc']:.3f}, acc_norm {ch['acc_norm']:.3f} over {ch['n']}
items (chance 0.25)."""
    arch_name = s.get("arch", "opt")
    threads = sorted({g.get("threads", 2) for g in st})
    threads_text = (f"{threads[0]} thread{'s' if threads[0] != 1 else ''}" if len(threads) == 1
                    else "threads " + " / ".join(str(g.get("threads", 2)) for g in st) +
                    " by stage")
    model_class = MODEL_CLASSES[arch_name].__name__
    if arch_name == "llama":
        la = LLAMA_ARCH
        heads, kv = la["num_attention_heads"], la["num_key_value_heads"]
        tok_from = st[0].get("tokenizer_from") or TOKENIZER_FROM_REL
        intro = f"""\
A small LLaMA-architecture model with grouped-query attention ({heads} query heads sharing {kv}
key-value heads), trained on English prose for the quality harness (perplexity, multiple choice)
under KV eviction on a GQA cache. It has the data split, tokenizer and held-out files of
`{tok_from}`, so both models are scored on the same tokens. Written by
`tools/train_small_model.py --arch llama`."""
        tokenizer_text = f"""\
The files of `{tok_from}` (`--tokenizer-from`), copied unchanged: byte-level BPE
(Hugging Face `tokenizers`, GPT-2 pre-tokenizer regex, `add_prefix_space` false), trained there
on the train split only, vocabulary {la['vocab_size']}. OPT's ids: `<s>`=0, `<pad>`=1, `</s>`=2,
`<unk>`=3; only `<pad>` and `</s>` are added special tokens; `</s>` (id 2) is both BOS and EOS
and is prepended to every encoding (GPT2Tokenizer with `add_bos_token`); `config.json` names the
same ids (`bos_token_id` and `eos_token_id` 2, `pad_token_id` 1)."""
        model_text = f"""\
`LlamaForCausalLM`, trained in float32, stored in bfloat16: hidden {la['hidden_size']}, {la['num_hidden_layers']} layers, \
{heads} attention heads of {la['hidden_size'] // heads} dimensions
sharing {kv} key-value heads (grouped-query attention, {heads // kv} query heads per KV head: the \
KV cache holds
{kv} heads per layer), SwiGLU MLP of {la['intermediate_size']} (SiLU gate), RMSNorm \
(eps {LLAMA_RMS_EPS:g}) before attention, MLP and
head, rotary position embeddings over the whole head (theta {LLAMA_ROPE_THETA:g}), \
max_position_embeddings {la['max_position_embeddings']},
no biases, tied input/output embeddings, dropout 0. {s['parameters']} parameters, \
`model.safetensors`
{s['model_bytes'] / 1e6:.2f} MB."""
    else:
        intro = """\
A small OPT model trained on English prose, for the quality harness (perplexity, multiple
choice) under KV eviction: from scratch, then in further warm-started stages. Written by
`tools/train_small_model.py`."""
        tokenizer_text = f"""\
Byte-level BPE (Hugging Face `tokenizers`, GPT-2 pre-tokenizer regex, `add_prefix_space` false),
trained on the train split only, vocabulary {ARCH['vocab_size']}. OPT's ids: `<s>`=0, `<pad>`=1,
`</s>`=2, `<unk>`=3; only `<pad>` and `</s>` are added special tokens; `</s>` (id 2) is both BOS
and EOS and is prepended to every encoding (GPT2Tokenizer with `add_bos_token`, as OPT)."""
        model_text = f"""\
`OPTForCausalLM`, trained in float32, stored in bfloat16: hidden {ARCH['hidden_size']}, {ARCH['num_hidden_layers']} layers,
{ARCH['num_attention_heads']} heads, FFN {ARCH['ffn_dim']}, ReLU, pre-LayerNorm
(`do_layer_norm_before: true`), max_position_embeddings {ARCH['max_position_embeddings']}, tied
input/output embeddings, dropout 0. {s['parameters']} parameters, `model.safetensors`
{s['model_bytes'] / 1e6:.2f} MB."""
    text = f"""# {os.path.basename(OUT_DIRS[arch_name])}

{intro}

## Data

Debian package `{s['package']}` version `{s['package_version']}`: the reStructuredText sources of
the Python 3.11 documentation, `/usr/share/doc/python3.11/html/_sources/**/*.rst.txt`
(`whatsnew/changelog` left out). Cleaned lightly: directives other than prose-bearing ones
(function/class/note/versionadded bodies are kept), literal blocks, doctests, tables and section
titles dropped; inline roles and links reduced to their text; each paragraph one line; paragraphs
under 40 characters, of fewer than 6 words or under 85% letters and spaces dropped.

Split by document (SHA-256 of the path mod 20: 0 validation, 1 held out, else train):
{s['documents']['train']} train, {s['documents']['validation']} validation and
{s['documents']['heldout']} held-out documents. Train: {s['train_tokens']} tokens
({s['chars_per_token']:.2f} characters per token); validation: {s['validation_tokens']} tokens.
Held-out documents: {', '.join(s['heldout_documents'])}.

## Tokenizer

{tokenizer_text}

## Model

{model_text}

## Training

Sequences of 513 tokens (`</s>` then 512 tokens from a random offset of the train stream, in
which `</s>` also opens every document): 512 inputs, every position trained. AdamW (betas
0.9/0.98, weight decay 0.1 on matrices), warm-up then cosine decay to 10% of the peak learning
rate, gradient clipping 1.0, seed {SEED}, {threads_text}. Each stage sizes its step count to
its wall-clock budget from the speed of its first steps (it can end early when the machine
speeds up later); a warm-started stage (`--init-from`) keeps the tokenizer, split and held-out files and starts a
fresh optimizer and schedule from the previous weights.

{stage_text}## Results

Perplexity over 512-token non-overlapping windows (`</s>` then 511 text tokens, stride 511;
every text token scored; total NLL / tokens), HF `{model_class}` in float32. Attention against
uniform: over {a['rows']} query rows of 8 validation windows (row 0 excluded), the mean entropy
of an attention row (mean over heads), against {a['uniform_entropy_nats']:.2f} nats for a
uniform distribution over the same causal prefix.

| after | validation ppl | train ppl | held-out ppl | attention entropy per layer (nats) | mean / uniform | largest prob. per layer | choice acc (full cache) |
|---|---|---|---|---|---|---|---|
{result_rows}

Final model: validation **{s['val_ppl']:.2f}** ({s['val_tokens_scored']} tokens), train
{s['train_ppl']:.2f} ({s['train_tokens_scored']} tokens from 60 windows spread over the train
stream){heldout_final}. Attention:
mean entropy {a['entropy_nats_mean']:.2f} nats (per layer {layers}) against
{a['uniform_entropy_nats']:.2f} uniform ({ratio:.0%} of it): {verdict}. Mean largest
probability per row, per layer: {maxp}.{choice_text}

## Files for the harness

- `heldout.txt`: {s['heldout_tokens']} tokens of plain text, whole paragraphs of the held-out
  documents in order, separated by blank lines.
- `choice_next_sentence.jsonl`: {s['choice_items']} items `{{"id", "context", "choices",
  "answer"}}`: the context is a held-out paragraph's first sentences (up to 3), the choices its
  true next sentence and 3 sentences from other held-out documents, the answer's index uniformly
  random (seed {SEED}). Contexts end without a space; every choice starts with one.
- `train_stats.json`: the figures above, machine-readable.

## Retrain

```sh
apt-get install {s['package']}
python3 -m venv /tmp/hfvenv
/tmp/hfvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
/tmp/hfvenv/bin/pip install transformers safetensors tokenizers
{retrain}
```

Each stage's step count follows the machine's speed, so the step counts (and the weights)
depend on it; the figures above are those of the committed weights.
"""
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
