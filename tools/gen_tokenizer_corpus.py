#!/usr/bin/env python3
"""Writes a tokenizer test corpus: JSONL lines {"text": ...}, the input of `h2oflex tokenize`.

    python3 tools/gen_tokenizer_corpus.py OUT.jsonl [--seed 45] [--lines 12000] [--no-debian]

Every line comes from a seeded generator (the same seed gives the same file), in turn from these
kinds of text:
  prose       sentences and paragraphs in Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari,
              Thai, CJK and Hangul script, mixed within a line and across lines
  code        snippets (Python, C++, Rust, SQL, JSON, HTML, shell) with indentation by spaces and
              tabs, and long lines of code
  numbers     digit runs of every length, decimals, dates, hex, and the numerals of other scripts
              (Arabic-Indic, Devanagari, fullwidth, superscript, fractions, Roman, circled)
  emoji       single, repeated, skin tones, ZWJ families, flags, keycaps, variation selectors
  controls    C0 control characters (every one of 0x00-0x1F, including the bytes some
              vocabularies lack), DEL and C1 controls, alone, between letters, inside
              punctuation and digit runs
  whitespace  long runs of spaces (up to 400), newlines (up to 80), tabs, CR LF and the Unicode
              space characters, around words
  random      code points drawn from all of Unicode (assigned or not, private use included;
              surrogates excluded: text is UTF-8)
  markup      special-token text of the supported families (<s>, </s>, <|endoftext|>,
              <|im_start|>, <|begin_of_text|>, ...) and near misses, inside text
After them come the paragraphs of the license texts Debian ships in /usr/share/common-licenses
(the base-files package: the same on every Debian 12 machine), unless --no-debian.

The word lists and phrase generators are tools/gen_tokenizer_fixtures.py's (imported); that
module needs the `regex`, `unicodedata2` and `tokenizers` packages (see its header), so run this
in the same throwaway virtual environment.
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tokenizer_fixtures as base  # noqa: E402  (the shared text generators)

DEBIAN_TEXTS = "/usr/share/common-licenses"

MORE_PHRASES = {
    "persian": ["زبان فارسی زیباست", "۱۲۳۴ کتاب"],
    "armenian": ["Բարեւ աշխարհ"],
    "georgian": ["გამარჯობა მსოფლიო"],
    "ethiopic": ["ሰላም ልዑል"],
    "tamil": ["வணக்கம் உலகம்", "தமிழ் மொழி ௧௨௩"],
    "bengali": ["বাংলা ভাষা ১২৩"],
    "khmer": ["សួស្តី​ពិភពលោក"],
    "tibetan": ["བོད་ཡིག"],
    "mongolian": ["ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ"],
    "cherokee": ["ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ"],
    "turkish": ["İstanbul'da ılık bir gün", "IĞDIR ığdır"],
    "czech": ["Příliš žluťoučký kůň úpěl ďábelské ódy"],
}

NUMERALS = ["٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "০১২৩৪৫৬৭৮৯", "０１２３４５６７８９",
            "⁰¹²³⁴⁵⁶⁷⁸⁹", "₀₁₂₃₄₅₆₇₈₉", "½⅓¼⅕⅙⅛⅔¾", "ⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩⅪⅫ", "①②③④⑤⑥⑦⑧⑨⑩",
            "𝟎𝟏𝟐𝟑𝟒", "〇一二三四五六七八九十", "๐๑๒๓๔๕๖๗๘๙", "᠐᠑᠒᠓", "𐒠𐒡𐒢"]

MORE_EMOJI = ["🧑‍🤝‍🧑", "👩‍👩‍👦", "🏴‍☠️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "*️⃣", "0️⃣", "☺︎", "☺️", "🇪🇺", "🇺🇳", "🫶🏼",
              "🧔🏾‍♂️", "👁️‍🗨️", "😶‍🌫️", "❤️‍🔥", "🐈‍⬛", "🫨", "🪿"]

MARKUP = ["<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|padding|>", "<|im_start|>",
          "<|im_end|>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
          "<|start_header_id|>", "<|end_header_id|>", "<mask>", "<sep>", "[tag]", "<day>",
          "<repo_name>", "<file_sep>", "<filename>", "<gh_stars>", "<jupyter_code>",
          "<|im_start", "im_end|>", "< s>", "</s", "<|", "|>", "<<s>>", "<|endoftext|>x"]

CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
# The bytes SmolLM2's vocabulary lacks that are also characters: drawn more often.
MISSING_CONTROLS = ["\x04", "\x06", "\x13", "\x14", "\x16", "\x1d"]

SPACE_CHARS = [" ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2003", "\u2009", "\u202f",
               "\u205f", "\u1680", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c"]

MORE_CODE = [
    "#!/bin/sh\nset -eu\nfor f in *.txt; do\n  wc -l \"$f\"\ndone\n",
    "template <typename T>\nstruct {F} {{\n  T {a}[{n}];\n  constexpr size_t size() const {{ return {n}; }}\n}};",
    "    if {a} is None:\n        raise ValueError(f\"{b} must be set, got {{{a}!r}}\")\n",
    "<?xml version=\"1.0\"?>\n<{a} id=\"{n}\">\n\t<{b}/>\n</{a}>",
    "fn main() {{\n    let {a}: Vec<u8> = (0..{n}).map(|x| x as u8).collect();\n    println!(\"{{:?}}\", {a});\n}}",
    "SELECT *\n  FROM {a}\n WHERE {b} BETWEEN {n} AND {n}0\n ORDER BY 1 DESC;",
    "{{\n    \"{a}\": [\n        {n},\n        \"{b}\"\n    ],\n    \"nested\": {{\"x\": null}}\n}}",
    "\t\t\t\treturn {a}[{n}] ?? {b};\n\t\t\t}}\n\t\t}}\n\t}}\n}}",
]


def pool():
    return base.TEST_WORDS + base.TRAIN_WORDS


def prose(rng, words):
    r = rng.random()
    if r < 0.4:
        return " ".join(base.sentence(rng, words) for _ in range(rng.randint(1, 5)))
    if r < 0.7:
        return base.unicode_text(rng)
    if r < 0.85:
        script = rng.choice(sorted(MORE_PHRASES))
        return " ".join(rng.choice(MORE_PHRASES[script]) for _ in range(rng.randint(1, 3)))
    return "\n".join(base.paragraph(rng, words) for _ in range(rng.randint(2, 5)))


def code(rng, words):
    if rng.random() < 0.5:
        return base.code(rng, words)
    w = lambda: rng.choice(words).lower()
    text = rng.choice(MORE_CODE).format(F=w().capitalize() + w().capitalize(), a=w(), b=w(),
                                        n=rng.randint(0, 99999))
    if rng.random() < 0.2:  # a long line
        text = "; ".join([text.replace("\n", " ")] * rng.randint(3, 12))
    return text


def numbers(rng, words):
    out = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.5:
            out.append(base.number(rng))
        elif r < 0.75:
            s = rng.choice(NUMERALS)
            a = rng.randrange(len(s))
            out.append(s[a:a + rng.randint(1, len(s))])
        elif r < 0.9:
            out.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 80))))
        else:
            out.append(base.rand_word(rng, words) + str(rng.randint(0, 10**6)))
    return rng.choice([" ", "", ", ", "\n", " + "]).join(out)


def emoji(rng, words):
    if rng.random() < 0.6:
        return base.emoji_text(rng, words)
    return rng.choice(["", " "]).join(rng.choice(base.EMOJI + MORE_EMOJI) * rng.randint(1, 4)
                                      for _ in range(rng.randint(1, 6)))


def controls(rng, words):
    out = []
    for _ in range(rng.randint(1, 10)):
        r = rng.random()
        c = rng.choice(MISSING_CONTROLS if rng.random() < 0.5 else CONTROLS)
        if r < 0.25:
            out.append(c * rng.randint(1, 4))
        elif r < 0.45:  # inside a word
            w = base.rand_word(rng, words)
            k = rng.randrange(len(w) + 1)
            out.append(w[:k] + c + w[k:])
        elif r < 0.65:  # inside punctuation and digit runs, where neighbours of a drop merge
            p = rng.choice(base.PUNCT_RUNS + ["!!", "...", "==", "12", "2024", "--"])
            k = rng.randrange(len(p) + 1)
            out.append(p[:k] + c + p[k:])
        elif r < 0.8:
            out.append(" " + c + base.rand_word(rng, words))
        else:
            out.append(base.rand_word(rng, words))
        out.append(rng.choice(["", " ", " ", "\n", c]))
    return "".join(out)


def whitespace(rng, words):
    out = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.3:
            out.append(" " * rng.randint(1, 400))
        elif r < 0.5:
            out.append("\n" * rng.randint(1, 80))
        elif r < 0.6:
            out.append("\t" * rng.randint(1, 40))
        elif r < 0.7:
            out.append("".join(rng.choice(SPACE_CHARS) for _ in range(rng.randint(1, 30))))
        else:
            out.append(rng.choice([base.rand_word(rng, words), base.number(rng),
                                   rng.choice(base.PUNCT_RUNS)]))
    return "".join(out)


def random_text(rng, words):
    out = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.5:
            cp = rng.randint(0x20, 0x2FFF)
        elif r < 0.8:
            cp = rng.randint(0x3000, 0xFFFD)
        else:
            cp = rng.randint(0x10000, 0x10FFFF)
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0xFFFD
        out.append(chr(cp))
        if rng.random() < 0.15:
            out.append(rng.choice(SPACE_CHARS[:3]))
    return "".join(out)


def markup(rng, words):
    out = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.4:
            out.append(rng.choice(MARKUP))
        elif r < 0.8:
            out.append(base.rand_word(rng, words))
        else:
            out.append(rng.choice([" ", "  ", "\n", "\t", " \n "]))
    return "".join(out)


GENERATORS = [prose, prose, code, numbers, emoji, controls, whitespace, random_text, markup]


def debian_paragraphs():
    if not os.path.isdir(DEBIAN_TEXTS):
        return []
    out = []
    for name in sorted(os.listdir(DEBIAN_TEXTS)):
        path = os.path.join(DEBIAN_TEXTS, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        out += [p for p in text.split("\n\n") if p.strip()]
    return out


def corpus(seed, lines, debian):
    rng = random.Random(seed)
    words = pool()
    out = base.fixed_test_lines()
    while len(out) < lines:
        out.append(GENERATORS[len(out) % len(GENERATORS)](rng, words))
    if debian:
        out += debian_paragraphs()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--lines", type=int, default=12000, help="generated lines")
    parser.add_argument("--no-debian", action="store_true", help="leave out Debian's texts")
    args = parser.parse_args()
    texts = corpus(args.seed, args.lines, not args.no_debian)
    with open(args.out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    size = sum(len(t.encode()) for t in texts)
    print(f"{args.out}: {len(texts)} lines, {size} bytes of text")


if __name__ == "__main__":
    main()
