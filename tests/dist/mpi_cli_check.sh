#!/usr/bin/env bash
# `mpiexec -n NP h2oflex run CONFIG` as a user starts it, checked from the outside:
#   results  one results JSON, written by rank 0, with NP stages that cover the model's units in
#            order, and the same tokens (tokens_sha256, per variant) as the single-process run;
#            KV on disk, full and H2O; each stage's weights placed by its `stages:` entry (in RAM
#            on even stages, on disk on odd ones), one process's half on disk
#   kill     a rank killed with SIGKILL mid-decode ends the job within LIMIT_S seconds, nonzero,
#            with mpiexec's report of the dead rank, and no rank left running
#   error    a config error (no policy: section; a stages list of the wrong length) ends every
#            rank with the message, nonzero
#   generate `h2oflex generate` on the demo model: the results of one process, and a job resumed
#            after its first lines gives them too
# Usage: mpi_cli_check.sh MODE NP H2OFLEX MPIEXEC NP_FLAG [MPIEXEC FLAGS...]
set -euo pipefail
mode=$1 np=$2 h2oflex=$3 mpiexec=$4 np_flag=$5
shift 5
flags=("$@")
limit_s=${LIMIT_S:-10}
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -c 3000 "$f" >&2; }; done
  exit 1
}

write_config() {  # $1 file, $2 prompt_len, $3 gen_len, $4 weights on CPU (%), $5 cache on CPU (%)
  cat >"$1" <<EOF
name: mpi-cli
model: opt-125m
dummy: true
prompt_len: $2
gen_len: $3
compute_dtype: auto
seed: 3
policy:
  gpu_batch_size: 2
  num_gpu_batches: 2
  weights: {gpu: 0, cpu: $4}
  cache: {gpu: 0, cpu: $5}
  activations: {gpu: 100, cpu: 0}
  overlap: true
  cpu_cache_compute: true
hardware:
  host_mem: 4GiB
  device_mem: 1GiB
  disk_mem: 4GiB
  disk_path: $work
EOF
}

mpi() { "$mpiexec" "$np_flag" "$np" "${flags[@]}" "$@"; }

case $mode in
results)
  # Stage by stage placements (stages: [{set: ...}]): even stages keep their weights in RAM, odd
  # ones on disk; one process runs the config's own (half on disk).
  write_config "$work/run.yaml" 16 5 50 0
  cp "$work/run.yaml" "$work/one.yaml"
  echo "stages:" >>"$work/run.yaml"
  for ((r = 0; r < np; r++)); do
    echo "  - {set: {policy: {weights: {gpu: 0, cpu: $((r % 2 == 0 ? 100 : 0))}}}}" >>"$work/run.yaml"
  done
  for f in run one; do
    cat >>"$work/$f.yaml" <<EOF
variants:
  - name: full
    set: {kv: {policy: full}}
  - name: h2o
    set: {kv: {policy: h2o, heavy_ratio: 0.25, recent_ratio: 0.25}}
EOF
  done
  "$h2oflex" run "$work/one.yaml" --json "$work/one.json" >"$work/one.log" 2>&1 ||
    fail "the single-process run failed"
  mpi "$h2oflex" run "$work/run.yaml" --json "$work/job.json" >"$work/job.log" 2>&1 ||
    fail "the $np-process run failed"
  python3 - "$work/one.json" "$work/job.json" "$np" "$work/job.log" <<'EOF' || fail "results differ"
import json, sys
one, job, np, log = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), open(sys.argv[4]).read()
assert log.count("loading opt-125m") == len(job["variants"]), "status lines from more than one rank"
assert log.count("wrote ") == 1, "more than one rank wrote the results"
for a, b in zip(one["variants"], job["variants"], strict=True):
    name = a["name"]
    assert a["tokens_sha256"] == b["tokens_sha256"], f"{name}: tokens differ from one process"
    stages = b["stages"]
    assert [s["rank"] for s in stages] == list(range(np)), f"{name}: stages {stages}"
    units = [u for s in stages for u in range(s["units"][0], s["units"][1] + 1)]
    assert units == list(range(12 + 2)), f"{name}: the stages' units {units}"
    assert sum(s["layers"] for s in stages) == 12, f"{name}: layers"
    for key in ("peak_bytes", "bytes_moved", "stage_busy_s"):
        assert all(s[key] for s in stages), f"{name}: a stage without {key}"
    total = sum(m["bytes"] for m in b["bytes_moved"])
    assert total == sum(m["bytes"] for s in stages for m in s["bytes_moved"]), f"{name}: bytes_moved total"
    for tier in ("host", "disk"):
        assert b["peak_bytes"][tier] == sum(s["peak_bytes"][tier] for s in stages), f"{name}: peak {tier}"
    # Two GPU batches: the stages pass the block on in two micro-blocks (NP >= 2).
    assert b["policy"]["stages"] == np and b["policy"]["micro_blocks"] == 2, b["policy"]
    # What crossed the stages: a stage before the last sends its hidden states (block 4 x
    # hidden 768 x f32, over the 16 prompt positions in prefill, one per step in the 4 decode
    # steps), the last sends each step's 4 token ids to every other stage.
    for s in stages:
        last = s["rank"] == np - 1
        expect = {"prefill": 4 * 4 * (np - 1) if last else 4 * 16 * 768 * 4,
                  "decode": 4 * 4 * 4 * (np - 1) if last else 4 * 4 * 768 * 4}
        assert s["sent_bytes"] == expect, f"{name}: stage {s['rank']} sent {s['sent_bytes']}, expected {expect}"
    assert b["stage_sent_bytes"]["decode"] == sum(s["sent_bytes"]["decode"] for s in stages)
    # A stage with its weights on disk reads its own part once per micro-block and step (5
    # steps), not the whole model's; one with them in RAM reads none.
    def weight_reads(r):
        return sum(m["bytes"] for m in r["bytes_moved"] if m["kind"] == "weight" and m["src"] == "disk")
    assert weight_reads(a) > 0, f"{name}: one process read no weights from disk"
    for s in stages:
        reads, rank = weight_reads(s), s["rank"]
        if rank % 2 == 0:
            assert reads == 0, f"{name}: stage {rank} keeps its weights in RAM but read {reads} bytes"
        else:
            assert 0 < reads / 2 <= 0.75 * b["model_bytes"] * 5, \
                f"{name}: stage {rank} read {reads} weight bytes of a {b['model_bytes']}-byte model"
print("ok:", np, "stages,", len(job["variants"]), "variants, tokens equal to one process")
EOF
  ;;
kill)
  write_config "$work/run.yaml" 8 500 100 100
  mpi "$h2oflex" run "$work/run.yaml" >"$work/job.log" 2>&1 &
  job=$!
  for _ in $(seq 300); do
    grep -q "decode step" "$work/job.log" && break
    kill -0 "$job" 2>/dev/null || fail "the job ended before decoding"
    sleep 0.2
  done
  grep -q "decode step" "$work/job.log" || fail "the job did not reach decode within 60 s"
  ranks() { pgrep -f "run $work/run.yaml" | grep -vx "$job" || true; }
  victim=""
  for pid in $(ranks); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -Eqx '(OMPI_COMM_WORLD_RANK|PMI_RANK)=1'; then
      victim=$pid
    fi
  done
  [[ -n $victim ]] || fail "no process of rank 1 found"
  start=$(date +%s%N)
  kill -9 "$victim"
  deadline=$(($(date +%s) + limit_s))
  while kill -0 "$job" 2>/dev/null && (($(date +%s) < deadline)); do sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    kill -9 "$job" $(ranks) 2>/dev/null || true
    fail "the job still runs $limit_s s after rank 1 was killed"
  fi
  rc=0
  wait "$job" || rc=$?
  elapsed_ms=$((($(date +%s%N) - start) / 1000000))
  ((rc != 0)) || fail "the job exited 0 after rank 1 was killed"
  sleep 0.5
  [[ -z $(ranks) ]] || fail "ranks still running after the job ended: $(ranks)"
  grep -Eiq "rank 1.*(signal 9|killed)|killed|signal" "$work/job.log" ||
    fail "the job's output does not say that a rank was killed"
  echo "ok: the job ended ${elapsed_ms} ms after rank 1 was killed, status $rc"
  ;;
error)
  write_config "$work/run.yaml" 8 4 100 100
  python3 - "$work/run.yaml" <<'EOF'
import sys, re
p = sys.argv[1]
text = open(p).read()
text = re.sub(r"policy:\n(  .*\n)+", "", text)
open(p, "w").write(text)
EOF
  rc=0
  timeout $((limit_s + 5)) "$mpiexec" "$np_flag" "$np" "${flags[@]}" \
    "$h2oflex" run "$work/run.yaml" >"$work/job.log" 2>&1 || rc=$?
  ((rc != 0)) || fail "the job exited 0 without a policy"
  ((rc != 124)) || fail "the job hung on a config error"
  grep -q "needs a policy: section" "$work/job.log" || fail "the message is missing"
  # A stages list that does not match the processes is refused on every rank.
  write_config "$work/bad.yaml" 8 4 100 100
  printf 'stages:\n  - {set: {policy: {weights: {cpu: 0}}}}\n' >>"$work/bad.yaml"
  rc=0
  timeout $((limit_s + 5)) "$mpiexec" "$np_flag" "$np" "${flags[@]}" \
    "$h2oflex" run "$work/bad.yaml" >"$work/bad.log" 2>&1 || rc=$?
  ((rc != 0 && rc != 124)) || fail "a stages list of 1 for $np processes: status $rc"
  grep -q "stages lists 1 stage(s) but the job has $np processes" "$work/bad.log" ||
    fail "the stages message is missing"
  echo "ok: a config error ends the $np-rank job, status $rc"
  ;;
generate)
  # The demo model, the same job as one process and as NP stages, then resumed as NP stages.
  model="$(cd "$(dirname "$0")/../.." && pwd)/models/demo/opt-demo"
  write_config "$work/gen.yaml" 8 6 50 100
  sed -i '/^model:/d; /^dummy:/d; /^prompt_len:/d' "$work/gen.yaml"
  for i in $(seq 1 11); do
    echo "{\"id\": \"r$i\", \"prompt\": \"Request $i says$(printf ' word%.0s' $(seq 1 $((i % 5))))\", \"max_new_tokens\": $((3 + i % 4))}"
  done >"$work/in.jsonl"
  gen() {  # OUTPUT, then the launcher and binary
    local out=$1
    shift
    "$@" generate --model "$model" --input "$work/in.jsonl" --config "$work/gen.yaml" --output "$out"
  }
  gen "$work/one.jsonl" "$h2oflex" >"$work/one.log" 2>&1 || fail "one process failed"
  gen "$work/job.jsonl" mpi "$h2oflex" >"$work/job.log" 2>&1 || fail "the $np-rank job failed"
  [[ $(wc -l <"$work/job.jsonl") -eq 11 ]] || fail "the job wrote $(wc -l <"$work/job.jsonl") lines, not 11"
  diff <(sort "$work/one.jsonl") <(sort "$work/job.jsonl") >"$work/diff.log" ||
    fail "the $np-rank job's results differ from one process's"
  [[ $(grep -c "generate: [0-9]* requests in" "$work/job.log") -eq 1 ]] ||
    fail "more than one rank ran the job"
  # Resume: a job that wrote its first block (or part of it) and was stopped.
  head -n 3 "$work/job.jsonl" >"$work/resumed.jsonl"
  cp "$work/job.job.json" "$work/resumed.job.json"
  gen "$work/resumed.jsonl" mpi "$h2oflex" >"$work/resumed.log" 2>&1 ||
    fail "the resumed $np-rank job failed"
  grep -q "3 already in" "$work/resumed.log" || fail "the resumed job did not skip the 3 done"
  diff <(sort "$work/one.jsonl") <(sort "$work/resumed.jsonl") >"$work/diff.log" ||
    fail "the resumed job's results differ from one process's"
  echo "ok: generate as $np stages equals one process, and resumes"
  ;;
*)
  echo "unknown mode $mode" >&2
  exit 2
  ;;
esac
