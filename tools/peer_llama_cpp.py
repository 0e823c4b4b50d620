#!/usr/bin/env python3
"""The llama.cpp peer: llama-batched-bench on the same GGUF file and shapes as an h2oflex row.

Builds llama.cpp's `llama-batched-bench` once (CPU only) from the llama.cpp source that
llama-cpp-python's source distribution carries, runs it on `--model FILE.gguf` with `batch`
sequences of `prompt_len` random tokens and `gen_len - 1` decode steps, parses its table and
prints one JSON object in h2oflex's definitions (the protocol of tools/peer_hf.py):
prefill tok/s = batch x prompt / prefill s, decode tok/s = batch x (gen - 1) / decode s,
total tok/s = batch x gen / (prefill + decode). The prefill yields each sequence's first token
(as h2oflex's does), so llama.cpp's TG phase runs gen_len - 1 steps.

    python3 tools/peer_llama_cpp.py --model model.gguf --batch 4 --prompt-len 128 \
        --gen-len 8 --threads 2

The build lives in --build-dir (default $H2OFLEX_LLAMA_CPP_DIR, else
${XDG_CACHE_HOME:-~/.cache}/h2oflex/llama.cpp), outside the repository: the sdist of
llama-cpp-python==--version is fetched with pip (or given with --source), unpacked, and only the
llama-batched-bench target is built with cmake (Release, GGML_NATIVE=ON, no CUDA, no curl, -j2).
A failed build is remembered in build-failed.txt there (delete it to try again) and every later
run exits 1 with its reason at once. --bench PATH uses an existing llama-batched-bench instead.

A row's memory cap (`memory_cap:` in a suite) is the suite's business: it runs this script in
the capped cgroup, so the build, when it happens there, shares the cap; put an uncapped row
first so that the build happens outside it.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile

DEFAULT_VERSION = "0.3.36"
BENCH = "llama-batched-bench"
# cmake options: CPU only, tuned for this machine, no network code.
CMAKE_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=ON",
                 "-DGGML_CUDA=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                 "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                 "-DLLAMA_BUILD_SERVER=OFF"]
# One row of llama-batched-bench's table:
# |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*" + r"\|\s*([0-9.]+)\s*" * 6
                 + r"\|\s*$")


class PeerError(Exception):
    pass


def default_build_dir():
    env = os.environ.get("H2OFLEX_LLAMA_CPP_DIR")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "h2oflex", "llama.cpp")


def run_logged(argv, log, cwd=None):
    """Runs argv (no shell), appending its output to the open file `log`; True on success."""
    log.write("$ " + " ".join(argv) + "\n")
    log.flush()
    try:
        return subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd).returncode == 0
    except OSError as e:
        log.write(f"cannot start {argv[0]}: {e}\n")
        return False


def log_tail(path, lines=8):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:]).strip()


def build_bench(build_dir, version, source):
    """The path of llama-batched-bench in build_dir, built first if it is not there."""
    binary = os.path.join(build_dir, "build", "bin", BENCH)
    failed = os.path.join(build_dir, "build-failed.txt")
    if os.path.exists(binary):
        return binary
    if os.path.exists(failed):
        with open(failed) as f:
            raise PeerError(f"{f.read().strip()}; not retried: an earlier llama.cpp build failed "
                            f"(delete {failed} to try again)")
    os.makedirs(build_dir, exist_ok=True)
    log_path = os.path.join(build_dir, "build.log")

    def fail(what):
        # Short enough for a table cell (the suite shows a failed peer's last 300 characters):
        # what failed, the log's last words, where the log is.
        last = " ".join(log_tail(log_path, 3).split())[-80:]
        reason = f"{what}: {last} (log {log_path})"
        with open(failed, "w") as f:
            f.write(reason + "\n")
        raise PeerError("llama.cpp could not be built: " + reason)

    with open(log_path, "w") as log:
        if source is None:
            if not run_logged([sys.executable, "-m", "pip", "download", "--no-deps",
                               "--no-binary", ":all:", f"llama-cpp-python=={version}",
                               "-d", build_dir], log):
                fail(f"pip download llama-cpp-python=={version} failed")
            source = os.path.join(build_dir, f"llama_cpp_python-{version}.tar.gz")
        try:
            with tarfile.open(source) as tar:
                top = tar.getnames()[0].split("/")[0]
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(build_dir, filter="data")
                else:
                    tar.extractall(build_dir)
        except (OSError, tarfile.TarError, IndexError) as e:
            log.write(f"cannot unpack {source}: {e}\n")
            log.flush()
            fail(f"cannot unpack {os.path.basename(source)}")
        src = os.path.join(build_dir, top, "vendor", "llama.cpp")
        if not os.path.isfile(os.path.join(src, "CMakeLists.txt")):
            log.write(f"{source} carries no vendor/llama.cpp\n")
            log.flush()
            fail(f"{os.path.basename(source)} carries no vendor/llama.cpp")
        cmake_dir = os.path.join(build_dir, "build")
        if not run_logged(["cmake", "-S", src, "-B", cmake_dir] + CMAKE_OPTIONS, log):
            fail("cmake configure failed")
        if not run_logged(["cmake", "--build", cmake_dir, "-j2", "--target", BENCH], log):
            fail("cmake build failed")
    if not os.path.exists(binary):
        fail(f"the build wrote no {binary}")
    return binary


def context_size(batch, tokens_per_sequence):
    """llama-batched-bench's -c: every sequence's tokens, each sequence's share rounded up to 256
    (llama.cpp pads and divides the context among the sequences; a shape that does not fit is
    left out of its table without an error)."""
    return batch * -(-tokens_per_sequence // 256) * 256


def parse_table(text, prompt_len, steps, batch):
    """The row of llama-batched-bench's table for (prompt_len, steps, batch) as a dict of its
    columns; PeerError when it is not there (llama-batched-bench silently skips a shape that does
    not fit its context)."""
    for line in text.splitlines():
        m = ROW.match(line.strip())
        if not m:
            continue
        pp, tg, b, n_kv = (int(m.group(i)) for i in range(1, 5))
        if (pp, tg, b) != (prompt_len, steps, batch):
            continue
        t_pp, s_pp, t_tg, s_tg, t, s = (float(m.group(i)) for i in range(5, 11))
        return {"pp": pp, "tg": tg, "b": b, "n_kv": n_kv, "t_pp": t_pp, "s_pp": s_pp,
                "t_tg": t_tg, "s_tg": s_tg, "t": t, "s": s}
    raise PeerError(f"no row PP {prompt_len} TG {steps} B {batch} in {BENCH}'s output")


def result_from_row(row, batch, prompt_len, gen_len):
    """h2oflex's result keys from a table row. The latencies come from the throughput columns
    (S = tokens / T, printed to 0.01 tok/s), which carry more digits than the T columns."""
    prefill_s = batch * prompt_len / row["s_pp"]
    decode_s = batch * (gen_len - 1) / row["s_tg"]
    total_s = prefill_s + decode_s
    return {
        "prefill": {"latency_s": prefill_s, "throughput_tok_s": row["s_pp"]},
        "decode": {"latency_s": decode_s, "throughput_tok_s": row["s_tg"]},
        "total": {"latency_s": total_s, "throughput_tok_s": batch * gen_len / total_s},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="GGUF file")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, required=True)
    ap.add_argument("--gen-len", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build-dir", "--build_dir", default=default_build_dir())
    ap.add_argument("--version", default=DEFAULT_VERSION, help="llama-cpp-python's sdist version")
    ap.add_argument("--source", help="a llama-cpp-python sdist tarball (instead of pip download)")
    ap.add_argument("--bench", help=f"an existing {BENCH} (no build)")
    ap.add_argument("--repack", choices=["on", "off"], default="on",
                    help="llama.cpp's weight repacking into its CPU-specific buffers (its "
                         "default on; off = --no-repack, e.g. where its AMX path crashes)")
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--save-output", "--save_output",
                    help=f"write {BENCH}'s table (stdout; the model path as its file name) here: "
                         "the test fixture tests/fixtures/llama_cpp/ comes from this")
    a = ap.parse_args()
    if a.batch < 1 or a.prompt_len < 1 or a.gen_len < 2 or a.threads < 1:
        sys.exit("peer_llama_cpp: batch, prompt_len and threads must be >= 1 and gen_len >= 2")
    if not os.path.isfile(a.model):
        sys.exit(f"peer_llama_cpp: --model {a.model}: no such file (llama.cpp reads a GGUF)")
    steps = a.gen_len - 1
    try:
        bench = a.bench or build_bench(os.path.abspath(a.build_dir), a.version, a.source)
        argv = [bench, "-m", a.model, "-c", str(context_size(a.batch, a.prompt_len + steps)),
                "-npp", str(a.prompt_len), "-ntg", str(steps), "-npl", str(a.batch),
                "-t", str(a.threads), "-tb", str(a.threads)]
        if a.repack == "off":
            argv.append("--no-repack")
        try:
            p = subprocess.run(argv, capture_output=True, text=True, errors="replace")
        except OSError as e:
            raise PeerError(f"cannot start {bench}: {e}")
        if p.returncode != 0:
            raise PeerError(f"{BENCH} exited with status {p.returncode}: "
                            + (p.stdout + p.stderr)[-400:].strip())
        row = parse_table(p.stdout + "\n" + p.stderr, a.prompt_len, steps, a.batch)
        if a.save_output:
            with open(a.save_output, "w") as f:
                f.write(p.stdout.replace(a.model, os.path.basename(a.model)))
    except PeerError as e:
        sys.exit(f"peer_llama_cpp: {e}")
    result = {"peer": "llama.cpp", "bench": bench, "command": argv[1:], "model": a.model,
              "threads": a.threads, "batch": a.batch, "prompt_len": a.prompt_len,
              "gen_len": a.gen_len, "table_row": row}
    result.update(result_from_row(row, a.batch, a.prompt_len, a.gen_len))
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
