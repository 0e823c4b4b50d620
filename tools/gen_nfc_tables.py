#!/usr/bin/env python3
"""Generates models/tokenizer/nfc_tables.cc: the Unicode data that NFC normalization needs.

NFC (canonical decomposition, canonical reordering, canonical composition) needs three things
per code point, all written here as compact sorted tables:
  * its canonical decomposition, one or two code points (the full decomposition is reached by
    applying it again), with a flag saying whether the pair composes back (a primary composite,
    i.e. not excluded from composition);
  * its canonical combining class, as [first, last, class] runs of the non-zero classes.
Hangul syllables are left out: they decompose and compose arithmetically.

The reference, Hugging Face `tokenizers`, normalizes with the tables of its
unicode-normalization-alignments crate, which are Unicode 9.0's: a combining mark assigned
later (U+1AC4, U+1DF6, U+07FD, ...) has class 0 there, so NFC leaves it where it stands. The
tables here are therefore Unicode 9.0's, made from recent data (the `unicodedata2` package) cut
to the characters assigned by 9.0 (Age <= 9.0 in DerivedAge.txt, which Debian's unicode-data
package ships): a character's combining class and decomposition never change once assigned, so
that cut is exactly 9.0's data. Where `tokenizers` is importable the script checks the result
against its NFC, mark by mark and composition by composition:

    python3 -m venv $VENV && $VENV/bin/pip install "unicodedata2==16.0.0" tokenizers==0.23.3
    $VENV/bin/python tools/gen_nfc_tables.py
"""
import os
import re
import sys

try:
    import unicodedata2 as unicodedata
except ImportError:
    import unicodedata

    print(
        f"warning: unicodedata2 not installed, using built-in Unicode {unicodedata.unidata_version}",
        file=sys.stderr,
    )

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "models", "tokenizer", "nfc_tables.cc")
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
DERIVED_AGE = "/usr/share/unicode/DerivedAge.txt"
TABLES_VERSION = (9, 0)  # the Unicode version of the reference's normalization tables


def assigned_by(version):
    """The code points assigned in `version` or earlier, from DerivedAge.txt."""
    if not os.path.exists(DERIVED_AGE):
        sys.exit(f"{DERIVED_AGE} is missing: apt-get install unicode-data")
    out = set()
    with open(DERIVED_AGE, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\d+)\.(\d+)", line)
            if m and (int(m[3]), int(m[4])) <= version:
                out.update(range(int(m[1], 16), int(m[2] or m[1], 16) + 1))
    return out


ASSIGNED = assigned_by(TABLES_VERSION)


def decompositions():
    """(code point, first, second or 0, composes) for every canonical decomposition."""
    out = []
    for cp in range(0x110000):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or 0xD800 <= cp <= 0xDFFF or cp not in ASSIGNED:
            continue
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):  # none, or a compatibility mapping (NFKC only)
            continue
        parts = [int(p, 16) for p in d.split()]
        assert 1 <= len(parts) <= 2, (hex(cp), d)
        # A pair composes back unless the code point is excluded from composition; NFC of the
        # code point itself tells which.
        composes = len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp)
        out.append((cp, parts[0], parts[1] if len(parts) == 2 else 0, composes))
    return out


def combining_class_runs():
    runs = []
    for cp in range(0x110000):
        ccc = unicodedata.combining(chr(cp)) if cp in ASSIGNED else 0
        if ccc == 0:
            continue
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == ccc:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, ccc])
    return runs


def check_against_tokenizers(decomp, runs):
    """Every mark of any Unicode version moves (or not) past a class-240 mark as `tokenizers`'
    NFC moves it, and every pair composes (or not) as there."""
    try:
        from tokenizers import normalizers
    except ImportError:
        print("warning: tokenizers not installed, tables not checked against it", file=sys.stderr)
        return
    nfc = normalizers.NFC().normalize_str
    ccc = {cp: c for a, b, c in runs for cp in range(a, b + 1)}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or not unicodedata.combining(chr(cp)):
            continue
        moves = nfc("a\u0345" + chr(cp)) != "a\u0345" + chr(cp)  # U+0345 has class 240
        assert moves == (0 < ccc.get(cp, 0) < 240), f"U+{cp:04X}: combining class differs"
    for cp, a, b, composes in decomp:
        if b:
            assert (nfc(chr(a) + chr(b)) == chr(cp)) == composes, f"U+{cp:04X}: composition differs"
    print("checked against tokenizers' NFC")


def rows(items, per_row):
    return ["    " + " ".join(items[i:i + per_row]) for i in range(0, len(items), per_row)]


def main():
    decomp = decompositions()
    runs = combining_class_runs()
    check_against_tokenizers(decomp, runs)
    version = ".".join(map(str, TABLES_VERSION)) + ".0"
    decomp_items = [f"{{0x{cp:X}, 0x{a:X}, 0x{b:X}, {int(c)}}}," for cp, a, b, c in decomp]
    ccc_items = [f"{{0x{a:X}, 0x{b:X}, {c}}}," for a, b, c in runs]
    text = "\n".join([
        f"// Generated by tools/gen_nfc_tables.py: Unicode {version}'s data (as Hugging Face "
        f"tokenizers' NFC),",
        f"// cut from Unicode {unicodedata.unidata_version}'s. Do not edit.",
        "// Canonical decompositions and combining classes, for NFC.",
        '#include "models/tokenizer/nfc_tables.h"',
        "",
        "namespace h2oflex::tokenizer::tables {",
        "",
        f'const char kNfcUnicodeVersion[] = "{version}";',
        "",
        "// clang-format off",
        "const CanonicalDecomposition kCanonicalDecompositions[] = {",
        *rows(decomp_items, 3),
        "};",
        "const CombiningClassRun kCombiningClassRuns[] = {",
        *rows(ccc_items, 4),
        "};",
        "// clang-format on",
        "const size_t kCanonicalDecompositionsCount =",
        "    sizeof(kCanonicalDecompositions) / sizeof(kCanonicalDecompositions[0]);",
        "const size_t kCombiningClassRunsCount =",
        "    sizeof(kCombiningClassRuns) / sizeof(kCombiningClassRuns[0]);",
        "",
        "}  // namespace h2oflex::tokenizer::tables",
        "",
    ])
    with open(OUT, "w", encoding="ascii") as f:
        f.write(text)
    print(f"wrote {OUT}: {len(decomp)} decompositions "
          f"({sum(1 for d in decomp if d[3])} compose), {len(runs)} combining class runs")


if __name__ == "__main__":
    main()
