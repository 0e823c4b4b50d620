#!/usr/bin/env python3
"""Trains the demo model's byte-level BPE tokenizer and records reference ids for the tests.

Outputs:
  models/demo/opt-demo/{vocab.json, merges.txt, tokenizer.json}   the demo tokenizer
  tests/fixtures/tokenizer/{vocab.json, merges.txt, tokenizer.json} the same files, for the tests
  tests/fixtures/tokenizer/expected.jsonl                          reference ids and texts

The oracle is Hugging Face `tokenizers`. It needs a throwaway virtual environment outside the
repository (the project itself never imports Python):

    python3 -m venv $VENV
    $VENV/bin/pip install tokenizers==0.23.3 transformers regex "unicodedata2==16.0.0"
    $VENV/bin/python tools/gen_tokenizer_fixtures.py

Everything is deterministic (fixed seeds, no network). The tokenizer follows OPT's conventions:
GPT-2 byte-level BPE (ByteLevel pre-tokenizer, add_prefix_space=False, GPT-2 regex), vocabulary of
exactly 4096 entries, OPT's reserved ids <s>=0, <pad>=1, </s>=2, <unk>=3, and `</s>` prepended
as BOS with no EOS appended (GPT2Tokenizer with OPT's add_bos_token=True). As in OPT's own
tokenizer files, only <pad> and </s> are special (added) tokens: matched when they occur inside
text and dropped by decode(skip_special_tokens=True); <s> and <unk> are ordinary entries.

char_classes.txt records HF's class of every code point (run-length), for the C++ tables' test.

Cross-checks before anything is written:
  * HF's pre-tokenizer classifies every code point (letter / number / whitespace / other) the
    same way as Unicode 16.0 data (unicodedata2), which tools/gen_unicode_tables.py turns into the
    C++ tables; so no test line needs to avoid characters whose category changed.
  * an independent pure-Python GPT-2 encoder (the original algorithm: `regex` pattern, lowest-rank
    pair merged everywhere, repeat) produces the same ids as HF for every line;
  * transformers.GPT2Tokenizer built from vocab.json + merges.txt with OPT's special tokens
    produces the same ids (BOS included) for every line;
  * HF decodes every line back to its exact text.

expected.jsonl records, one JSON object per line, with a "kind":
  encode        {"text", "ids"} ids from HF with BOS 2 first; "decoded" (decode with special
                tokens skipped) is present only where it differs from "text" (lines that
                contain a special-token string such as "</s>").
  decode        {"ids", "skip_special", "text"}: HF's decode of arbitrary id sequences (partial
                UTF-8 sequences become U+FFFD, special tokens kept or skipped).
  encode_bytes  {"hex", "ids", "lossy"}: invalid UTF-8 input (HF cannot take it). Oracle: the
                pure-Python encoder with each invalid byte treated as one "other" character
                (Python's surrogateescape); "lossy" = the bytes decoded with U+FFFD replacement.
"""
import json
import os
import random
import sys
import tempfile

import regex
import unicodedata2
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_DIR = os.path.join(REPO, "models", "demo", "opt-demo")
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "tokenizer")

VOCAB_SIZE = 4096
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0, 1, 2, 3 as in OPT
OPT_ADDED = ["<pad>", "</s>"]  # the tokens OPT's tokenizer treats as special
BOS_ID = 2
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Unicode White_Space: what Oniguruma's \s matches.
WHITE_SPACE = {0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000}

# ---------------------------------------------------------------------------------------------
# Text material. Two disjoint word pools: the training corpus draws on TRAIN_WORDS, test lines
# mostly on TEST_WORDS, so most test words are split into pieces the tokenizer never saw whole.
TRAIN_WORDS = """the of and to in is was for on that with as by at from it this be are an or
have has had not but which they you he she we his her their there been were would will can
could should may might must about after before between during through under over again more
most other some such only own same than too very just because while where when what who how
all any both each few many much time year people way day man woman child world life hand part
place case week company system program question work government number night point home water
room mother area money story fact month lot right study book eye job word business issue side
kind head house service friend father power hour game line end member law car city community
name president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment air
teacher force education foot boy age policy music market sense nation plan college interest
death experience effect class control care field development role effort rate heart drug show
leader light voice wife police mind price report decision son view relationship town road arm
difference value building action model season society tax director position player record paper
space ground form event official matter center couple site project activity star table need
court oil situation cost industry figure street image phone data picture practice piece land
product doctor wall patient worker news test movie north love support technology step baby
computer type attention film tree source organization hair window evidence population site
run walk talk think know make take see come want look use find give tell ask seem feel try
leave call keep let begin help start turn play move live believe hold bring happen write sit
stand lose pay meet include continue set learn lead understand watch follow stop create speak
read allow add spend grow open win offer remember consider appear buy wait serve die send
expect build stay fall cut reach kill remain suggest raise pass sell require report decide pull
good new first last long great little own old big high different small large next early young
important public bad able late hard major better economic strong possible whole free military
true federal international full special easy clear recent certain personal open red difficult
available likely short single medical current wrong private past foreign fine common poor
natural significant similar hot dead central happy serious ready simple left physical general
environmental financial blue democratic dark various entire close legal religious cold final
main green nice huge popular traditional cultural quickly slowly carefully always never often
sometimes usually already still yet soon today tomorrow yesterday here everywhere nowhere
""".split()

TEST_WORDS = """quasar zephyr obsidian labyrinth marmalade juxtaposition kaleidoscope
serendipity ephemeral mellifluous petrichor sonder vellichor onomatopoeia bibliophile
cacophony defenestration flabbergasted gobbledygook hullabaloo ineffable jubilant knapsack
lollygag mnemonic nincompoop oxymoron pneumonia quixotic rhythm syzygy taciturn ubiquitous
vicissitude wherewithal xylophone yesteryear zeitgeist aardvark bamboozle cantankerous
discombobulate eavesdrop fiddlesticks gargantuan haberdasher idiosyncrasy jamboree kerfuffle
lackadaisical malarkey nonchalant obfuscate persnickety quagmire rambunctious shenanigans
thingamajig umbrage vexillology whippersnapper xenophobia yodel zigzag astronaut barometer
catamaran dirigible electrolyte fjord gyroscope hydrofoil isotope javelin kilobyte lighthouse
magnetron nebula oscilloscope periscope quartz radiator spectrometer telescope ultrasound
velocipede windmill accordion bagpipe clarinet didgeridoo euphonium flugelhorn glockenspiel
harmonica ocarina piccolo sousaphone theremin ukulele vibraphone Zanzibar Kathmandu Reykjavik
Ouagadougou Ulaanbaatar Tegucigalpa Antananarivo Thimphu Nuuk Tbilisi Yerevan Montevideo
""".split()

NAMES = ["Alice", "Bob", "Carol", "Dmitri", "Eve", "Fatima", "Giulia", "Hiroshi", "Ingrid",
         "José", "Kwame", "Léa", "Mehmet", "Nadia", "Olúwaseun", "Priya", "Quentin", "Rosa",
         "Søren", "Tomás", "Uma", "Václav", "Wei", "Ximena", "Yusuf", "Zoë"]

CONTRACTIONS = ["it's", "don't", "can't", "won't", "they're", "we're", "you're", "we've",
                "I've", "they've", "I'm", "you'll", "we'll", "she'll", "he'd", "I'd", "they'd",
                "that's", "isn't", "didn't", "shouldn't", "let's", "who's", "o'clock",
                "IT'S", "DON'T", "CAN'T", "THEY'RE", "WE'VE", "I'M", "YOU'LL", "HE'D", "THAT'S",
                "It'S", "You'Re", "We'Ve", "I'M", "She'Ll", "He'D", "rock'n'roll", "'tis",
                "'Twas", "'em", "ma'am", "y'all", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
                "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "''s", "'''", "'sup", "'dle"]

# Phrases in several scripts, precomposed unless noted.
SCRIPT_PHRASES = {
    "french": ["Ça va très bien, merci beaucoup", "l'été dernier à Montréal", "Où est la gare ?",
               "déjà-vu, naïveté et cœur", "Élodie a mangé une crème brûlée"],
    "german": ["Grüße aus München", "Die Straße ist schön und groß", "Übermäßig häufige Fehler",
               "Fußgängerüberweg", "ÄÖÜ äöü ß ẞ"],
    "spanish": ["¿Dónde está la biblioteca?", "¡Qué día tan bonito!", "El niño come piña",
                "Mañana será otro día", "Año nuevo, vida nueva"],
    "vietnamese": ["Tiếng Việt có nhiều dấu", "Xin chào, bạn khỏe không?",
                   "Người ta thường nói rằng", "Hà Nội mùa thu"],
    "polish": ["Zażółć gęślą jaźń", "Łódź jest dużym miastem", "Źdźbło trawy"],
    "decomposed": ["Cafe\u0301 cre\u0300me", "n\u0303o", "A\u030a ring", "e\u0301e\u0301e\u0301"],
    "greek": ["Καλημέρα κόσμε", "Η γλώσσα μου έδωσαν ελληνική", "ΑΒΓΔ αβγδ ω"],
    "cyrillic": ["Привет, мир!", "Съешь же ещё этих мягких французских булок",
                 "Москва — столица России", "Український текст: їжак, ґанок, є"],
    "arabic": ["مرحبا بالعالم", "اللغة العربية جميلة", "الرقم ٣٤٥ باللغة العربية",
               "كتاب، قلم، ورقة"],
    "hebrew": ["שלום עולם", "עברית היא שפה שמית"],
    "devanagari": ["नमस्ते दुनिया", "हिन्दी भाषा बहुत सुंदर है", "संख्या १२३ है", "क्षत्रिय ज्ञान"],
    "thai": ["สวัสดีครับ", "ภาษาไทยไม่มีช่องว่างระหว่างคำ"],
    "chinese": ["你好，世界！", "我们今天去公园散步。", "中文没有空格分词", "机器学习与深度学习",
                "繁體中文：臺灣的夜市"],
    "japanese": ["こんにちは世界", "東京タワーに行きました。", "カタカナとひらがな",
                 "ｶﾀｶﾅ半角", "日本語の文章です"],
    "korean": ["안녕하세요 세계", "한국어 문장입니다.", "서울에서 부산까지"],
    "math": ["∀x∈ℝ: x²≥0", "∑ᵢ aᵢ = ½ · ⅓", "α+β=γ", "√2 ≈ 1.414", "∞ ≠ ∅", "Ⅻ Ⅳ ⅷ",
             "x₁ + x₂ = y³", "①②③ ⑩", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙"],
    "fullwidth": ["ＡＢＣ　１２３", "ｈｅｌｌｏ，ｗｏｒｌｄ！"],
}

EMOJI = ["😀", "😂", "🚀", "🎉", "❤️", "❤", "👍", "👍🏻", "👍🏽", "👍🏿", "👋🏼", "👨‍👩‍👧‍👦",
         "👩‍💻", "🧑🏽‍🚀", "🏳️‍🌈", "🇫🇷", "🇯🇵", "🇺🇸", "✨", "🔥", "1️⃣", "#️⃣", "🤷‍♀️",
         "🙏🏾", "🐍", "☕", "🌍", "👩🏻‍🤝‍👨🏿", "🫠", "🧠", "💯", "🎶", "⚡", "©", "™", "☃"]

PUNCT_RUNS = ["!", "!!!", "?!", "?!?", "...", "…", "---", "—", "–", "***", "(((", ")))", "<<>>",
              "###", "@@", "~~~", "''", '""', "``", "«»", "“”", "‘’", ";;", "::", "/*", "*/",
              "=>", "->", "!=", "==", "<=", ">=", "&&", "||", "%%", "^^", "$$", "__", "[]",
              "{}", "\\\\", "|", "¿", "¡", "§", "¶", "•", "·", "†", "‰", "°", "€", "£", "¥", "₹"]

SPACES = [" ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n",
          " \n", "\n ", " \t ", "\t \n", "\u00a0", "\u3000", "\u2003", "\u202f", "\u2009",
          " \u00a0 ", "\x0b", "\x0c", "\u2028", "\u0085", "\u1680", "\u205f"]

CODE_SNIPPETS = [
    "def {f}({a}, {b}):\n    return {a} + {b} * {n}\n",
    "for (int i = 0; i < {n}; ++i) {{\n\tsum += values[i];\n}}\n",
    "if ({a} != nullptr && {b}->size() > {n}) {{ return -1; }}",
    "SELECT {a}, COUNT(*) FROM {b} WHERE id = {n} GROUP BY {a};",
    '{{"{a}": {n}, "{b}": [1, 2, 3], "ok": true, "none": null}}',
    "const {f} = ({a}) => {a}.map(x => x ** 2).filter(Boolean);",
    "#include <vector>\nstd::vector<float> {a}({n}, 0.0f);",
    "$ grep -rn '{a}' ./src | wc -l  # count {b}",
    "class {F}:\n    def __init__(self):\n        self.{a} = {n}\n        self._{b} = None\n",
    "    x = np.zeros(({n}, {n}), dtype=np.float32)\n\ty = x.T @ x",
    "<div class=\"{a}\"><span>{b}</span></div>",
    "fn {f}(&mut self, {a}: u32) -> Result<(), Error> {{ Ok(()) }}",
    "    }}\n  }}\n}}\n",
    "// TODO({a}): fix the {b} bug before v{n}.0",
    "let {a} = vec![{n}; 4];\n\t\t\t// indented with tabs",
]

TLDS = ["com", "org", "net", "io", "de", "co.uk", "edu", "dev"]


def rand_word(rng, pool):
    w = rng.choice(pool)
    r = rng.random()
    if r < 0.1:
        return w.capitalize()
    if r < 0.13:
        return w.upper()
    return w


def sentence(rng, pool):
    n = rng.randint(3, 18)
    words = []
    for i in range(n):
        r = rng.random()
        if r < 0.08:
            words.append(rng.choice(CONTRACTIONS))
        elif r < 0.14:
            words.append(rng.choice(NAMES))
        elif r < 0.18:
            words.append(rng.choice(NAMES) + "'s")
        elif r < 0.22:
            words.append(number(rng))
        else:
            words.append(rand_word(rng, pool))
        if rng.random() < 0.08:
            words[-1] += rng.choice([",", ";", ":", " -", "'", '"', ")"])
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + rng.choice([".", ".", ".", "!", "?", "...", "?!", ":", ""])


def number(rng):
    kind = rng.randrange(14)
    if kind == 0:
        return str(rng.randint(0, 9))
    if kind == 1:
        return str(rng.randint(10, 10**rng.randint(2, 12)))
    if kind == 2:
        return f"{rng.uniform(-1000, 1000):.{rng.randint(1, 6)}f}"
    if kind == 3:
        return f"{rng.randint(1000, 10**9):,}"
    if kind == 4:
        return f"{rng.randint(1900, 2100)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 5:
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    if kind == 6:
        return f"+{rng.randint(1, 99)} ({rng.randint(100, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    if kind == 7:
        return f"0x{rng.getrandbits(32):08X}"
    if kind == 8:
        return f"{rng.uniform(1, 10):.3f}e{rng.randint(-30, 30)}"
    if kind == 9:
        return f"{rng.randint(0, 100)}%"
    if kind == 10:
        return rng.choice(["$", "€", "£", "¥"]) + f"{rng.randint(1, 5000)}.{rng.randint(0, 99):02d}"
    if kind == 11:
        n = rng.randint(1, 31)
        return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
    if kind == 12:
        return f"v{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(5, 40)))


def url(rng, pool):
    w = lambda: rng.choice(pool).lower()
    kind = rng.randrange(4)
    if kind == 0:
        return f"https://www.{w()}{w()}.{rng.choice(TLDS)}/{w()}/{w()}?id={rng.randint(1, 99999)}&q={w()}+{w()}#sec-{rng.randint(1, 9)}"
    if kind == 1:
        return f"{w()}.{w()}{rng.randint(1, 99)}@{w()}-mail.{rng.choice(TLDS)}"
    if kind == 2:
        return f"/home/{w()}/{w()}_{w()}/{w()}.{rng.choice(['txt', 'py', 'json', 'tar.gz', 'cc'])}"
    return f"C:\\Users\\{w().capitalize()}\\Documents\\{w()} {w()}.docx"


def code(rng, pool):
    tmpl = rng.choice(CODE_SNIPPETS)
    w = lambda: rng.choice(pool).lower()
    return tmpl.format(f=w() + "_" + w(), F=w().capitalize() + w().capitalize(), a=w(), b=w(),
                       n=rng.randint(0, 4096))


def unicode_text(rng):
    script = rng.choice(sorted(SCRIPT_PHRASES))
    parts = [rng.choice(SCRIPT_PHRASES[script]) for _ in range(rng.randint(1, 3))]
    return rng.choice([" ", "", "\n", "。", ", "]).join(parts)


def emoji_text(rng, pool):
    out = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.5:
            out.append(rng.choice(EMOJI) * rng.choice([1, 1, 1, 2, 3]))
        else:
            out.append(rand_word(rng, pool))
    return rng.choice([" ", "", " "]).join(out)


def whitespace_text(rng, pool):
    out = []
    if rng.random() < 0.3:
        out.append(rng.choice(SPACES))
    for _ in range(rng.randint(1, 6)):
        out.append(rng.choice([rand_word(rng, pool), number(rng), rng.choice(PUNCT_RUNS),
                               rng.choice(EMOJI)]))
        out.append(rng.choice(SPACES) * rng.choice([1, 1, 2, 3]))
    if rng.random() < 0.5:
        out.pop()
    return "".join(out)


def punct_text(rng, pool):
    out = []
    for _ in range(rng.randint(2, 10)):
        r = rng.random()
        if r < 0.5:
            out.append(rng.choice(PUNCT_RUNS))
        elif r < 0.8:
            out.append(rand_word(rng, pool))
        else:
            out.append(rng.choice(CONTRACTIONS))
        if rng.random() < 0.5:
            out.append(" ")
    return "".join(out)


def paragraph(rng, pool):
    """One training or test text: a mixture of the generators above."""
    kind = rng.random()
    if kind < 0.35:
        return " ".join(sentence(rng, pool) for _ in range(rng.randint(1, 4)))
    if kind < 0.45:
        return code(rng, pool)
    if kind < 0.52:
        return " ".join(number(rng) for _ in range(rng.randint(1, 6)))
    if kind < 0.58:
        return rng.choice(["See ", "Visit ", "Mail ", "", "Path: "]) + url(rng, pool)
    if kind < 0.75:
        return unicode_text(rng)
    if kind < 0.83:
        return emoji_text(rng, pool)
    if kind < 0.93:
        return whitespace_text(rng, pool)
    return punct_text(rng, pool)


def training_corpus():
    rng = random.Random(20240601)
    pool = TRAIN_WORDS
    return [paragraph(rng, pool) for _ in range(30000)]


# ---------------------------------------------------------------------------------------------
# Test lines: held-out words, plus generators that never appear in training.
def random_code_points(rng, assigned):
    """Random assigned characters from mixed blocks, with separators."""
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x2070, 0x218F),
              (0x2190, 0x23FF), (0x2460, 0x24FF), (0x3000, 0x30FF), (0x4E00, 0x4FFF),
              (0xAC00, 0xAD00), (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF),
              (0x10000, 0x1007F), (0x1F1E6, 0x1F1FF), (0x0, 0x1F)]
    out = []
    for _ in range(rng.randint(1, 30)):
        lo, hi = rng.choice(blocks)
        while True:
            cp = rng.randint(lo, hi)
            if assigned(cp):
                break
        out.append(chr(cp))
        if rng.random() < 0.2:
            out.append(rng.choice(SPACES))
    return "".join(out)


def random_ascii(rng):
    alphabet = "abcXYZ019 \t\n'!?.,-_()<>/\\\"#$%&*+=:;@[]^`{|}~sdmtlvre"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))


def special_mix(rng, pool):
    pieces = ["</s>", "<s>", "<pad>", "<unk>", "</s", "< /s>", "<s >", "<<s>>", "</s></s>",
              "<pad><pad>", "s>", "<", "</"]
    out = []
    for _ in range(rng.randint(1, 6)):
        out.append(rng.choice([rng.choice(pieces), rand_word(rng, pool), " ", "\n", "  "]))
    return "".join(out)


def fixed_test_lines():
    """Hand-written edge cases."""
    lines = ["", " ", "  ", "\n", "\n\n", "\t", " \t\n ", "a", "A", "'", "''", "'s", "'S", "'ll",
             "I'll", "I'LL", "you'd've", "Don't you're we've I'm he'll she'd it's",
             "DON'T YOU'RE WE'VE I'M HE'LL SHE'D IT'S", "hello world", "hello  world",
             "hello   world", "hello\tworld", "hello \tworld", "hello\t world", "hello\n\nworld",
             "  leading spaces", "trailing spaces  ", "   ", "\n \n \n", "a \n b", "x\r\ny\r\n",
             "123", "1234567890123", " 42", "  42", "3.14159", "1,000,000", "a1b2c3", "٣٤٥",
             "१२३", "Ⅻ", "½", "²³", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇯🇵", "é", "e\u0301",
             "中文", "日本語", "한국어", "Привет", "مرحبا", "नमस्ते", "!!!", "...", "?!?!",
             " !!!", "  !!!", "a!b?c", "https://example.com/a?b=c&d=e#f", "foo@bar.com",
             "</s>", "<s>", "<pad>", "<unk>", "a</s>b", "a </s> b", "</s></s>", "<pad>x<pad>",
             "\u00a0", "a\u00a0b", "a\u3000b", "a\u2028b", "a\u0085b", "\x0b\x0c", "\x1c\x1d",
             "\x00", "a\x00b", "\x7f", "\u200b", "a\u200db", "\ufeffBOM", "\uffff", "\U0010ffff",
             "x" * 300, "ab" * 200, " " * 50 + "x", "\n" * 30, "😀" * 40,
             "The quick brown fox jumps over the lazy dog.",
             "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!"]
    return lines


def test_lines():
    rng = random.Random(77)
    pool = TEST_WORDS
    assigned = lambda cp: unicodedata2.category(chr(cp)) not in ("Cn", "Cs")
    lines = fixed_test_lines()
    for i in range(2400):
        r = i % 12
        if r < 6:
            lines.append(paragraph(rng, pool))
        elif r == 6:
            lines.append(paragraph(rng, TRAIN_WORDS + pool))
        elif r == 7:
            lines.append(random_code_points(rng, assigned))
        elif r == 8:
            lines.append(random_ascii(rng))
        elif r == 9:
            lines.append(special_mix(rng, pool))
        elif r == 10:
            lines.append("\n".join(paragraph(rng, pool) for _ in range(rng.randint(2, 4))))
        else:
            lines.append(whitespace_text(rng, pool))
    return lines


# ---------------------------------------------------------------------------------------------
# Independent reference: the original GPT-2 encoder algorithm, written out here.
def bytes_to_unicode():
    visible = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    mapping = {b: chr(b) for b in visible}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


class ReferenceGpt2:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.byte_map = bytes_to_unicode()
        self.pattern = regex.compile(GPT2_PATTERN)
        self.specials = sorted(OPT_ADDED, key=len, reverse=True)

    def bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            pairs = [(parts[i], parts[i + 1]) for i in range(len(parts) - 1)]
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return [self.vocab[p] for p in parts]

    def encode_plain(self, text):
        """text may hold lone surrogates (U+DC80..U+DCFF) that stand for invalid bytes."""
        ids = []
        for piece in self.pattern.findall(text):
            raw = piece.encode("utf-8", errors="surrogateescape")
            ids += self.bpe("".join(self.byte_map[b] for b in raw))
        return ids

    def encode(self, text):
        """BOS, then special-token strings matched leftmost-longest, plain text between."""
        ids = [BOS_ID]
        start = i = 0
        while i < len(text):
            hit = next((s for s in self.specials if text.startswith(s, i)), None)
            if hit is None:
                i += 1
                continue
            ids += self.encode_plain(text[start:i]) + [self.vocab[hit]]
            i += len(hit)
            start = i
        return ids + self.encode_plain(text[start:])


# ---------------------------------------------------------------------------------------------
def unicode_class_runs(pre):
    """HF's class (L, N, S = whitespace, O = other) of every code point, as [first, last, class]
    runs. Exits unless it equals the Unicode 16.0 data that tools/gen_unicode_tables.py uses."""
    def hf_class(c):
        if len(pre.pre_tokenize_str("a" + c)) == 1:
            return "L"
        if len(pre.pre_tokenize_str("1" + c)) == 1:
            return "N"
        if len(pre.pre_tokenize_str("!" + c)) == 1:
            return "O"
        return "S" if len(pre.pre_tokenize_str(c + "  ")) == 1 else "?"

    def data_class(c):
        cat = unicodedata2.category(c)
        if cat[0] in "LN":
            return cat[0]
        return "S" if ord(c) in WHITE_SPACE else "O"

    runs, bad = [], []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue  # surrogates are not characters; UTF-8 cannot carry them
        cls = hf_class(chr(cp))
        if cls != data_class(chr(cp)):
            bad.append(cp)
        if runs and runs[-1][2] == cls and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, cls])
    if bad:
        sys.exit(f"Unicode class mismatch at {len(bad)} code points, first {[hex(c) for c in bad[:20]]}"
                 f" (unicodedata2 {unicodedata2.unidata_version})")
    print(f"unicode classes: HF agrees with Unicode {unicodedata2.unidata_version} on every code point")
    return runs


def train():
    """Trains on the corpus, then rebuilds the tokenizer the way OPT ships it."""
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    # The trainer puts its special tokens first, in order: this reserves OPT's ids 0..3.
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    trained.train_from_iterator(training_corpus(), trainer=trainer)

    # OPT's tokenizer registers only <pad> and </s> as special (added) tokens: they are matched
    # inside text and skipped when decoding. <s> and <unk> are ordinary vocabulary entries.
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path, merges_path = trained.model.save(tmp)
        tok = Tokenizer(models.BPE.from_file(vocab_path, merges_path))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in OPT_ADDED])
    tok.post_processor = processors.TemplateProcessing(single="</s> $A", pair="</s> $A </s> $B",
                                                       special_tokens=[("</s>", BOS_ID)])
    vocab = tok.get_vocab()
    if len(vocab) != VOCAB_SIZE:
        sys.exit(f"trained vocabulary has {len(vocab)} entries, want {VOCAB_SIZE}")
    for i, s in enumerate(SPECIALS):
        if vocab[s] != i:
            sys.exit(f"special token {s} got id {vocab[s]}, want {i}")
    return tok


def write_files(tok, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tok.model.save(out_dir)  # vocab.json + merges.txt
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)


def load_vocab_merges(d):
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    merges = []
    with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#version") or not line:
                continue
            a, b = line.split(" ")
            merges.append((a, b))
    return vocab, merges


def transformers_tokenizer(vocab, merges):
    """transformers' GPT2Tokenizer as OPT configures it, built from vocab.json + merges.txt."""
    from transformers import GPT2Tokenizer

    return GPT2Tokenizer(vocab=dict(vocab), merges=list(merges), bos_token="</s>",
                         eos_token="</s>", unk_token="</s>", pad_token="<pad>",
                         add_bos_token=True, add_prefix_space=False)


def decode_cases(tok, encoded, rng):
    """Arbitrary id runs (cut mid-character, with specials) and HF's decode of them."""
    cases = []
    for _ in range(300):
        ids = rng.choice(encoded)
        if len(ids) > 2:
            a = rng.randrange(len(ids))
            b = rng.randrange(a, min(len(ids), a + 12) + 1)
            ids = ids[a:b]
        if rng.random() < 0.3:
            ids = ids + [rng.randrange(4)] + [rng.randrange(VOCAB_SIZE) for _ in range(3)]
        for skip in (True, False):
            cases.append({"kind": "decode", "ids": ids, "skip_special": skip,
                          "text": tok.decode(ids, skip_special_tokens=skip)})
    return cases


def invalid_utf8_cases(ref, rng):
    samples = [b"\xff", b"\x80", b"abc\xffdef", b"\xc3", b"\xc3(", b"caf\xc3", b"\xe2\x82",
               b"\xe2\x82(x", b"\xf0\x9f\x98", b"\xf0\x9f\x98 smile", b"\xed\xa0\x80",
               b"\xc0\xaf", b"\xf5\x80\x80\x80", b"\xf4\x90\x80\x80", b" \xff\xfe ", b"'\xffs",
               b"x\x80\x80\x80y", b"\xfe\xfe\xfe", b"hello \xe4\xb8 world", b"\xe4\xb8\xad\xe6"]
    for _ in range(40):
        raw = bytearray("".join(rng.choice(["ab", " ", "中", "é", "'s", "12", "😀", "!"])
                                for _ in range(rng.randint(1, 8))).encode())
        for _ in range(rng.randint(1, 3)):
            raw.insert(rng.randrange(len(raw) + 1), rng.randrange(0x80, 0x100))
        samples.append(bytes(raw))
    cases = []
    for raw in samples:
        text = raw.decode("utf-8", errors="surrogateescape")
        cases.append({"kind": "encode_bytes", "hex": raw.hex(), "ids": ref.encode(text),
                      "lossy": raw.decode("utf-8", errors="replace")})
    return cases


def main():
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    runs = unicode_class_runs(pre)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    with open(os.path.join(FIXTURE_DIR, "char_classes.txt"), "w", encoding="ascii") as f:
        f.write("# first last class: the GPT-2 regex class HF tokenizers gives each code point\n")
        f.write("# (L letter, N number, S whitespace, O other), hex, surrogates omitted\n")
        for first, last, cls in runs:
            f.write(f"{first:X} {last:X} {cls}\n")

    tok = train()
    write_files(tok, DEMO_DIR)
    write_files(tok, FIXTURE_DIR)
    # Reload from disk so the oracle is exactly what the C++ side reads.
    tok = Tokenizer.from_file(os.path.join(FIXTURE_DIR, "tokenizer.json"))
    vocab, merges = load_vocab_merges(FIXTURE_DIR)
    ref = ReferenceGpt2(vocab, merges)
    hf_slow = transformers_tokenizer(vocab, merges)

    lines = test_lines()
    train_set = set(training_corpus())
    in_train = sum(1 for t in lines if t in train_set)
    records, encoded = [], []
    for text in lines:
        ids = tok.encode(text).ids
        if ids[:1] != [BOS_ID]:
            sys.exit(f"no BOS for {text!r}")
        if ref.encode(text) != ids:
            sys.exit(f"reference GPT-2 encoder disagrees on {text!r}:\n{ref.encode(text)}\n{ids}")
        if hf_slow(text)["input_ids"] != ids:
            sys.exit(f"transformers GPT2Tokenizer disagrees on {text!r}")
        if tok.decode(ids[1:], skip_special_tokens=False) != text:
            sys.exit(f"HF round trip failed on {text!r}")
        rec = {"kind": "encode", "text": text, "ids": ids}
        decoded = tok.decode(ids, skip_special_tokens=True)
        if decoded != text:
            rec["decoded"] = decoded
        records.append(rec)
        encoded.append(ids)
    rng = random.Random(5)
    records += decode_cases(tok, encoded, rng)
    records += invalid_utf8_cases(ref, rng)

    path = os.path.join(FIXTURE_DIR, "expected.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    n_tokens = sum(len(e) for e in encoded)
    print(f"wrote {path}: {len(lines)} encode lines ({in_train} also in the training corpus, "
          f"{n_tokens} tokens), {len(records) - len(lines)} decode / invalid-UTF-8 cases")


if __name__ == "__main__":
    main()
