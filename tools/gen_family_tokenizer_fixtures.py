#!/usr/bin/env python3
"""Trains small tokenizers configured like Llama-3, Qwen2, Llama-2 / Mistral and GPT-NeoX, and
records Hugging Face's ids for the C++ tests (tests/tokenizer/family_fixture_test.cc).

Outputs, one directory per kind under tests/fixtures/:
  tokenizer-llama3/            Split(Llama-3 regex) + ByteLevel, ignore_merges, <|begin_of_text|>
                               template; tokenizer_config.json, generation_config.json (eos list)
  tokenizer-qwen2/             NFC, Split(Qwen2 regex) + ByteLevel, no BOS; tokenizer_config.json
                               (bos_token null), generation_config.json
  tokenizer-llama2/            SentencePiece BPE as transformers converts it (legacy): normalizer
                               Prepend("▁") + Replace(" ", "▁"), byte_fallback, fuse_unk, <0xXX>
                               tokens, decoder Replace/ByteFallback/Fuse/Strip, "<s> $A"
  tokenizer-llama2-metaspace/  the same model as converted with legacy=False: Metaspace
                               pre-tokenizer (prepend_scheme "first", no split) and decoder,
                               "<s> $A </s>" (add_eos_token), and no <0xF0>..<0xF4> byte tokens so
                               that 4-byte characters exercise the fused unknown token
  tokenizer-neox/              NFC + GPT-2 ByteLevel, <|endoftext|> / <|padding|>, runs of spaces
                               as normalized (non-special) added tokens
  tokenizer-smollm2/           SmolLM2's layout: Digits(individual_digits) + ByteLevel, no
                               normalizer, no unk token, special tokens <|endoftext|>,
                               <|im_start|>, <|im_end|>, and no token for the 21 bytes SmolLM2's
                               vocabulary lacks (HF drops them; the records say how many bytes)
Each holds tokenizer.json (+ the side files named) and expected.jsonl.

The oracle is Hugging Face `tokenizers`, run from a throwaway virtual environment outside the
repository (the project itself never imports Python):

    python3 -m venv $VENV
    $VENV/bin/pip install tokenizers==0.23.3 regex "unicodedata2==16.0.0"
    $VENV/bin/python tools/gen_family_tokenizer_fixtures.py

The text generators are tools/gen_tokenizer_fixtures.py's (imported), plus lines for what these
kinds add: each kind's added tokens inside text, non-NFC text (combining marks out of order,
Hangul jamo, singletons, composition exclusions) and characters outside the trained alphabet
(byte fallback). Everything is deterministic (fixed seeds, no network).

expected.jsonl records, one JSON object per line, with a "kind":
  encode  {"text", "ids"}: HF's encode with the special tokens its post-processor adds (the ids
          without them are these minus the template's; the script checks that).
          "dropped_bytes", present where not 0: the text's bytes no token stands for, counted
          independently of the decoder (the text's UTF-8 length minus the bytes of its tokens). "decoded" (decode
          of "ids" with special tokens skipped) and "decoded_all" (decode of the ids without the
          template's, special tokens kept) are present only where they differ from "text".
  decode  {"ids", "skip_special", "text"}: HF's decode of arbitrary id runs (byte tokens cut
          mid-character, special tokens, unknown ids).
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tokenizer_fixtures as base  # noqa: E402  (the shared text generators)
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,  # noqa: E402
                        pre_tokenizers, processors, trainers)

REPO = base.REPO
FIXTURES = os.path.join(REPO, "tests", "fixtures")

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPIECE = "\u2581"  # "▁"

TRAIN_PARAGRAPHS = 12000
ENCODE_LINES = 1500  # from the shared generators, plus this script's own lines
EXTRA_LINES = 500
LONG_LINE = 200  # characters
LONG_LINES = 25

# Words learnt whole by the Llama-3 fixture without the merges that build them, so only
# ignore_merges maps them to one id.
IGNORE_MERGES_WORDS = ["zephyr", "quasar", "obsidian", "labyrinth", "syzygy", "rhythm", "fjord",
                       "theremin", "ukulele", "nebula", "quartz", "yodel", "zigzag", "kerfuffle"]


# ---------------------------------------------------------------------------------------------
# Text for these kinds.
COMBINING = [0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x30A, 0x30B, 0x30C, 0x31B,
             0x323, 0x324, 0x327, 0x328, 0x32D, 0x331, 0x334, 0x345, 0x35C, 0x360, 0x5B4, 0x93C,
             0x302, 0x301, 0x308]
BASES = "aeiouyAEIOUYnNcCsSzZgGkKlLrRwW" + "αεηιουωΑΕΗΙΟΥΩ" + "аеиоуАЕИОУ" + "ــ" + "क"
# Singleton decompositions, composition exclusions, compatibility characters NFC keeps.
NFC_SPECIALS = ["\u212b", "\u2126", "\u212a", "\u0340", "\u0341", "\u0343", "\u0344", "\u0374",
                "\u037e", "\u0387", "\uf900", "\uf9dc", "\u2000", "\u2001", "\u1fef", "\u0958",
                "\u0959", "\u095a", "\u0f43", "\ufb1d", "\u2adc", "\ufb2a", "\u1e9b\u0323",
                "\u0344\u0301", "ﬁ", "①", "ｱ", "\u00c5", "A\u030a", "\u0226\u0304"]


def non_nfc_cluster(rng):
    r = rng.random()
    if r < 0.45:
        cluster = rng.choice(BASES) + "".join(chr(rng.choice(COMBINING))
                                             for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.3:  # start from a precomposed letter instead
            cluster = base.unicodedata2.normalize("NFC", cluster[0] + cluster[1]) + cluster[2:]
        return cluster
    if r < 0.65:  # Hangul: jamo sequences, precomposed syllables, syllable + trailing jamo
        lead, vowel, trail = rng.randrange(19), rng.randrange(21), rng.randrange(28)
        jamo = chr(0x1100 + lead) + chr(0x1161 + vowel) + (chr(0x11A7 + trail) if trail else "")
        return rng.choice([jamo, base.unicodedata2.normalize("NFC", jamo),
                           chr(0xAC00 + (lead * 21 + vowel) * 28) + chr(0x11A8 + rng.randrange(27)),
                           chr(0x1100 + lead) + chr(0x1161 + vowel) + chr(0x302)])
    if r < 0.85:
        return rng.choice(NFC_SPECIALS)
    return base.unicodedata2.normalize("NFD", rng.choice(
        ["Crème brûlée", "Ångström", "São Paulo", "Dvořák", "Phở", "Ελληνικά", "Ёлка", "안녕하세요",
         "ﬁne", "naïve café", "Tiếng Việt"]))


def non_nfc_line(rng, pool):
    out = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.6:
            out.append(non_nfc_cluster(rng))
        elif r < 0.85:
            out.append(base.rand_word(rng, pool))
        else:
            out.append(rng.choice(base.SPACES))
        if rng.random() < 0.4:
            out.append(" ")
    return "".join(out)


def added_token_line(rng, pool, tokens, near_misses):
    out = []
    for _ in range(rng.randint(1, 7)):
        r = rng.random()
        if r < 0.35:
            out.append(rng.choice(tokens))
        elif r < 0.5:
            out.append(rng.choice(near_misses))
        elif r < 0.8:
            out.append(base.rand_word(rng, pool))
        else:
            out.append(rng.choice([" ", "  ", "\n", "\t", " \n ", "   "]))
    return "".join(out)


def contraction_line(rng, pool):
    words = [rng.choice(base.CONTRACTIONS + [c.upper() for c in base.CONTRACTIONS] +
                        [c.title() for c in base.CONTRACTIONS]) for _ in range(rng.randint(1, 6))]
    words += [base.rand_word(rng, pool), base.number(rng)]
    rng.shuffle(words)
    return rng.choice([" ", "", "  ", "\n"]).join(words)


def test_lines(tokens, near_misses, nfc):
    """The shared generators' lines, then lines for added tokens, contractions, digits, NFC."""
    lines = base.fixed_test_lines()
    rng = random.Random(2024)
    shared = base.test_lines()[len(lines):]
    # Long lines (multi-paragraph) make most of the file's size: keep a few of them.
    long = [t for t in shared if len(t) > LONG_LINE]
    short = [t for t in shared if len(t) <= LONG_LINE]
    lines += rng.sample(long, LONG_LINES) + rng.sample(short, ENCODE_LINES - len(lines) - LONG_LINES)
    pool = base.TEST_WORDS + IGNORE_MERGES_WORDS
    lines += [" zephyr", "zephyr", " Zephyr", " zephyrs", "a zephyr, a quasar and a syzygy",
              "1234567890", "12345678901234567890", " 1 22 333 4444 55555", "x\r\n\r\ny",
              "\r\n\t \r\n", "\t\tindented\r\n", "IT'S HE'LL WE'VE", "it's he'll we've",
              "中文字符，以及emoji😀🚀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\U0001f9d1\u200d\U0001f680"] + tokens
    for i in range(EXTRA_LINES):
        r = i % 5
        if r in (0, 1):
            lines.append(added_token_line(rng, pool, tokens, near_misses))
        elif r == 2:
            lines.append(contraction_line(rng, pool))
        elif r == 3 and nfc:
            lines.append(non_nfc_line(rng, pool))
        else:
            lines.append(base.random_code_points(
                rng, lambda cp: base.unicodedata2.category(chr(cp)) not in ("Cn", "Cs")))
    return lines


def training_corpus():
    rng = random.Random(4321)
    return [base.paragraph(rng, base.TRAIN_WORDS) for _ in range(TRAIN_PARAGRAPHS)]


# ---------------------------------------------------------------------------------------------
# Tokenizers.
def train(tok, vocab_size, special_tokens=(), alphabet=None, limit_alphabet=None):
    kwargs = dict(vocab_size=vocab_size, min_frequency=2, special_tokens=list(special_tokens),
                  show_progress=False)
    if alphabet is not None:
        kwargs["initial_alphabet"] = alphabet
    if limit_alphabet is not None:
        kwargs["limit_alphabet"] = limit_alphabet
    tok.train_from_iterator(training_corpus(), trainer=trainers.BpeTrainer(**kwargs))
    return tok


def edited(tok, edit):
    """The tokenizer after `edit` changed its JSON (what the save format can say but the Python
    API cannot)."""
    root = json.loads(tok.to_str())
    edit(root)
    return Tokenizer.from_str(json.dumps(root, ensure_ascii=False))


def byte_level_split(pattern, trim_offsets):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=trim_offsets,
                                 use_regex=False)])


def llama3():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = byte_level_split(LLAMA3_PATTERN, True)
    tok.decoder = decoders.ByteLevel()
    train(tok, 2000, alphabet=pre_tokenizers.ByteLevel.alphabet())

    def add_whole_words(root):
        root["model"]["ignore_merges"] = True
        vocab = root["model"]["vocab"]
        for w in IGNORE_MERGES_WORDS:
            for spelled in (w, " " + w):
                symbols = base.bytes_to_unicode()
                key = "".join(symbols[b] for b in spelled.encode())
                if key not in vocab:
                    vocab[key] = len(vocab)
    tok = edited(tok, add_whole_words)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    # Not in Llama-3: added tokens with the matching options, so that the tests cover them.
    tok.add_special_tokens([AddedToken("<mask>", special=True, normalized=False, lstrip=True),
                            AddedToken("<sep>", special=True, normalized=False, rstrip=True)])
    tok.add_tokens([AddedToken("[tag]", special=False, normalized=False, single_word=True)])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
              "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"}
    generation = {"bos_token_id": bos,
                  "eos_token_id": [tok.token_to_id("<|end_of_text|>"), tok.token_to_id("<|eot_id|>")]}
    near = ["<|begin_of_text", "<|eot_id", "|>", "<|", "< mask>", "<mask", "sep>", "[tag", "tag]",
            "x[tag]", "[tag]y", "_[tag]", "[tag]1", "é[tag]", "[tag]!"]
    tokens = specials + ["<mask>", "<sep>", "[tag]", " <mask>", "\t\n <mask>", "<sep> \n x",
                         " [tag] ", "<sep><mask>"]
    return tok, {"tokenizer_config.json": config, "generation_config.json": generation}, \
        tokens, near, False


def qwen2():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = byte_level_split(QWEN2_PATTERN, False)
    tok.decoder = decoders.ByteLevel()
    train(tok, 2000, alphabet=pre_tokenizers.ByteLevel.alphabet())
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    # A normalized added token: its text is normalized (NFC) before it is looked for.
    tok.add_tokens([AddedToken("cafe\u0301", special=False, normalized=True)])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    config = {"add_prefix_space": False, "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "model_max_length": 32768,
              "tokenizer_class": "Qwen2Tokenizer"}
    generation = {"bos_token_id": tok.token_to_id("<|endoftext|>"),
                  "eos_token_id": [tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")]}
    near = ["<|im_start", "im_end|>", "<|endoftext", "cafe", "caf\u00e9s", "Cafe\u0301"]
    tokens = specials + ["caf\u00e9", "cafe\u0301", "<|im_start|>user\nhi<|im_end|>\n"]
    return tok, {"tokenizer_config.json": config, "generation_config.json": generation}, \
        tokens, near, True


def sentencepiece_bpe():
    """A SentencePiece-style BPE: trained on "▁"-marked words, then laid out as Llama's files
    are: <unk> <s> </s>, the 256 byte tokens, then the learnt pieces."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPIECE, prepend_scheme="first",
                                                 split=True)
    train(tok, 1800, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=150)
    root = json.loads(tok.to_str())
    learnt = sorted(root["model"]["vocab"].items(), key=lambda kv: kv[1])[3:]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for token, _ in learnt:
        vocab[token] = len(vocab)
    root["model"]["vocab"] = vocab
    for t in root["added_tokens"]:
        t["id"] = vocab[t["content"]]
    return root


def llama2():
    def edit(root):
        root.update(sentencepiece_root)
        root["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPIECE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPIECE}]}
        root["pre_tokenizer"] = None
    sentencepiece_root = sentencepiece_bpe()
    tok = edited(Tokenizer(models.BPE()), edit)
    tok.decoder = decoders.Sequence([decoders.Replace(SPIECE, " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(content=" ", left=1)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    # A normalized added token: looked for as "▁<day>" after the normalizer.
    tok.add_tokens([AddedToken("<day>", special=False, normalized=True)])
    config = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
              "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None, "legacy": True,
              "tokenizer_class": "LlamaTokenizer"}
    near = ["<s", "s>", "</s", "< s>", "<day", "day>", " <day>", "x<day>"]
    tokens = ["<s>", "</s>", "<unk>", "<day>", " <s> ", "<s><s>", "  </s>"]
    return tok, {"tokenizer_config.json": config}, tokens, near, False


def llama2_metaspace():
    def edit(root):
        root.update(sentencepiece_root)
        for b in range(0xF0, 0xF5):  # 4-byte characters then have no byte fallback
            del root["model"]["vocab"][f"<0x{b:02X}>"]
        root["normalizer"] = None
    sentencepiece_root = sentencepiece_bpe()
    tok = edited(Tokenizer(models.BPE()), edit)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPIECE, prepend_scheme="first",
                                                 split=False)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                     decoders.Metaspace(replacement=SPIECE, prepend_scheme="first",
                                                        split=False)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> <s> $B </s>",
        special_tokens=[("<s>", 1), ("</s>", 2)])
    config = {"add_bos_token": True, "add_eos_token": True, "bos_token": "<s>",
              "eos_token": "</s>", "unk_token": "<unk>", "legacy": False,
              "tokenizer_class": "LlamaTokenizer"}
    near = ["<s", "s>", "</s", "< s>"]
    tokens = ["<s>", "</s>", "<unk>", " <s> ", "<s>hello", "  </s>x", "😀😀 🚀x🚀"]
    return tok, {"tokenizer_config.json": config}, tokens, near, False


def neox():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                 use_regex=True)
    tok.decoder = decoders.ByteLevel()
    train(tok, 2000, special_tokens=["<|endoftext|>", "<|padding|>"],
          alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.add_tokens([AddedToken(" " * n, special=False, normalized=True) for n in range(8, 1, -1)])
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    config = {"add_prefix_space": False, "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
              "tokenizer_class": "GPTNeoXTokenizer"}
    near = ["<|endoftext", "<|padding", "endoftext|>"]
    tokens = ["<|endoftext|>", "<|padding|>", "  ", "     x", "a" + " " * 11 + "b", "\t  \n   "]
    return tok, {"tokenizer_config.json": config}, tokens, near, True


# The bytes SmolLM2's vocabulary has no token for: control bytes its training text never held and
# bytes that never occur in UTF-8.
SMOLLM2_MISSING_BYTES = [4, 6, 19, 20, 22, 29, 192, 193, 241, 242, *range(245, 256)]


def without_tokens(root, symbols):
    """Removes the tokens that contain any of `symbols`, and the merges that use or make them."""
    vocab = root["model"]["vocab"]
    gone = {t for t in vocab if any(c in t for c in symbols)}
    kept = sorted((i, t) for t, i in vocab.items() if t not in gone)
    root["model"]["vocab"] = {t: n for n, (_, t) in enumerate(kept)}
    merges = [m if isinstance(m, list) else m.split(" ", 1) for m in root["model"]["merges"]]
    root["model"]["merges"] = [m for m in merges
                               if not any(c in m[0] + m[1] for c in symbols)]


def smollm2():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    train(tok, 2000, special_tokens=specials, alphabet=pre_tokenizers.ByteLevel.alphabet())
    symbols = base.bytes_to_unicode()
    tok = edited(tok, lambda root: without_tokens(root, {symbols[b] for b in SMOLLM2_MISSING_BYTES}))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    config = {"add_prefix_space": False, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
              "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>",
              "tokenizer_class": "GPT2Tokenizer"}
    near = ["<|im_start", "im_end|>", "<|endoftext"]
    # The missing bytes alone, between letters, inside punctuation and digit runs (where the
    # neighbours of a dropped byte merge), and in a special token's text.
    tokens = specials + ["a\x04b", "!\x04!", "\x04", "\x04\x06\x13\x14\x16\x1d", "ab\x06cd",
                         "!!\x1d!!", "1\x042\x1d3", "..\x14..", " \x16 ", "x\x1d\x1dy",
                         "<|im_\x04start|>", "\x04<|im_end|>\x06", "e\x13\u00e9\x14"]
    return tok, {"tokenizer_config.json": config}, tokens, near, False


KINDS = {"llama3": llama3, "qwen2": qwen2, "llama2": llama2, "llama2-metaspace": llama2_metaspace,
         "neox": neox, "smollm2": smollm2}


# ---------------------------------------------------------------------------------------------
def template_sizes(tok):
    plain = tok.encode("x", add_special_tokens=False).ids
    full = tok.encode("x").ids
    for before in range(len(full) - len(plain) + 1):
        if full[before:before + len(plain)] == plain:
            return before, len(full) - len(plain) - before
    sys.exit("cannot find the text's ids inside the template")


def decode_cases(tok, encoded, rng):
    vocab_size = tok.get_vocab_size()
    cases = []
    for _ in range(150):
        ids = list(rng.choice(encoded))
        if len(ids) > 2:
            a = rng.randrange(len(ids))
            ids = ids[a:rng.randrange(a, min(len(ids), a + 12) + 1)]
        if rng.random() < 0.4:
            ids += [rng.randrange(vocab_size) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            ids.append(vocab_size + rng.randrange(100))  # names no token
        for skip in (True, False):
            cases.append({"kind": "decode", "ids": ids, "skip_special": skip,
                          "text": tok.decode(ids, skip_special_tokens=skip)})
    return cases


class DroppedBytes:
    """Counts the bytes of a text that no token stands for: its UTF-8 length minus the bytes its
    tokens stand for, an ordinary token's bytes or the text an added token matched (with the
    spaces its lstrip / rstrip take in). Byte-level kinds without a normalizer; 0 for the
    others, which drop nothing here."""

    def __init__(self, tok):
        self.tok = tok
        self.counted = json.loads(tok.to_str())["normalizer"] is None and isinstance(
            tok.decoder, decoders.ByteLevel)
        self.to_byte = {c: b for b, c in base.bytes_to_unicode().items()}
        self.added = set(tok.get_added_tokens_decoder())  # ids

    def __call__(self, text, encoding):
        """`encoding`: HF's encoding of `text` without the template's special tokens."""
        if not self.counted:
            return 0
        kept = 0
        for i, token, (start, end) in zip(encoding.ids, encoding.tokens, encoding.offsets):
            if i in self.added:
                kept += len(text[start:end].encode())
            elif all(c in self.to_byte for c in token):
                kept += len(token)
            else:
                sys.exit(f"token {token!r} is not made of byte symbols")
        return len(text.encode()) - kept


def write_kind(name, build):
    tok, side_files, tokens, near, nfc = build()
    out_dir = os.path.join(FIXTURES, f"tokenizer-{name}")
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)
    for file, content in side_files.items():
        with open(os.path.join(out_dir, file), "w", encoding="utf-8") as f:
            json.dump(content, f, ensure_ascii=False, indent=2)
            f.write("\n")
    # Reload from disk so the oracle is exactly what the C++ side reads.
    tok = Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))
    before, after = template_sizes(tok)
    count_dropped = DroppedBytes(tok)
    records, encoded, round_trips = [], [], 0
    for text in test_lines(tokens, near, nfc):
        ids = tok.encode(text).ids
        plain_encoding = tok.encode(text, add_special_tokens=False)
        plain = plain_encoding.ids
        if ids[before:len(ids) - after] != plain:
            sys.exit(f"{name}: template ids are not around the text's ids for {text!r}")
        rec = {"kind": "encode", "text": text, "ids": ids}
        dropped = count_dropped(text, plain_encoding)
        if dropped:
            rec["dropped_bytes"] = dropped
        decoded = tok.decode(ids, skip_special_tokens=True)
        if decoded != text:
            rec["decoded"] = decoded
        decoded = tok.decode(plain, skip_special_tokens=False)
        if decoded != text:
            rec["decoded_all"] = decoded
        round_trips += "decoded_all" not in rec
        records.append(rec)
        encoded.append(ids)
    records += decode_cases(tok, encoded, random.Random(9))
    path = os.path.join(out_dir, "expected.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{out_dir}: {len(encoded)} encode lines ({round_trips} decode back to their text), "
          f"{len(records) - len(encoded)} decode cases, {tok.get_vocab_size()} ids")


def main():
    names = sys.argv[1:] or list(KINDS)
    for name in names:
        write_kind(name, KINDS[name])


if __name__ == "__main__":
    main()
