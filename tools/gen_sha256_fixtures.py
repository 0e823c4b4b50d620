#!/usr/bin/env python3
"""Records SHA-256 digests of pseudo-random byte strings for experiments/common/sha256.cc's test.

The oracle is Python's hashlib (OpenSSL underneath). The lengths cover every padding case: the
empty string, around one block's 55/56/63/64/65 bytes, around two blocks, and random lengths up to
1000 bytes. Deterministic (fixed seed); needs nothing beyond the standard library:

    python3 tools/gen_sha256_fixtures.py     # -> tests/fixtures/sha256/random.json
"""

import hashlib
import json
import os
import random

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "sha256", "random.json")


def main():
    rng = random.Random(46)
    lengths = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129]
    lengths += [rng.randrange(1, 1001) for _ in range(26)]
    cases = []
    for n in lengths:
        data = bytes(rng.randrange(256) for _ in range(n))
        cases.append({"hex": data.hex(), "sha256": hashlib.sha256(data).hexdigest()})
    with open(OUT, "w") as f:
        json.dump({"oracle": "python hashlib", "cases": cases}, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
