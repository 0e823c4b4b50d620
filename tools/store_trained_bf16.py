#!/usr/bin/env python3
"""Stores a trained model's f32 weights as bf16 (round to nearest, ties to even), in place.

The trained models under models/trained are kept in bf16 so that the repository stays small
(half the bytes of f32); the engine and Hugging Face both widen bf16 to f32 exactly, so the
tests that compare them see the same weights. After converting, regenerate the fixtures that
depend on the weights (tools/gen_eval_fixtures.py, tools/gen_llama_eval_fixtures.py).
Standard library only:

    python3 tools/store_trained_bf16.py models/trained/opt-small-en models/trained/llama-small-en
"""

import array
import json
import os
import struct
import sys


def to_bf16(raw):
    """f32 bytes (little-endian) -> bf16 bytes, rounded to nearest even; NaN stays NaN."""
    words = array.array("I")
    words.frombytes(raw)
    if sys.byteorder != "little":
        words.byteswap()
    out = array.array("H", bytes(2 * len(words)))
    for i, w in enumerate(words):
        if (w & 0x7F800000) == 0x7F800000 and (w & 0x007FFFFF):
            out[i] = (w >> 16) | 0x0040  # a quiet NaN
        else:
            out[i] = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def convert(model_dir):
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][0])
    if all(v["dtype"] == "BF16" for _, v in tensors):
        print(f"{path}: already bf16")
        return
    new_header = {"__metadata__": header["__metadata__"]} if "__metadata__" in header else {}
    blobs, offset = [], 0
    for name, v in tensors:
        begin, end = v["data_offsets"]
        raw = data[begin:end]
        if v["dtype"] == "F32":
            raw = to_bf16(raw)
        elif v["dtype"] != "BF16":
            sys.exit(f"{path}: {name} is {v['dtype']}; only F32 is converted")
        new_header[name] = {"dtype": "BF16", "shape": v["shape"],
                            "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(new_header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    config_path = os.path.join(model_dir, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    key = "torch_dtype" if "torch_dtype" in config else "dtype"
    config[key] = "bfloat16"
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{path}: {len(data)} -> {offset} bytes of weights")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        convert(d)
