#include "experiments/cli/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "experiments/bench/bench_gemm.h"
#include "experiments/bench/bench_io.h"
#include "experiments/convert/convert_command.h"
#include "experiments/eval/eval_cli.h"
#include "experiments/generate/generate_cli.h"
#include "experiments/plan/plan_command.h"
#include "experiments/profile/profile_command.h"
#include "experiments/run/run_command.h"
#include "experiments/suite/experiment_runner.h"
#include "experiments/tokenize/tokenize_command.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

namespace {

// Measures one suite row by running its config through the same path as `h2oflex run`.
MeasuredRow measure_row(const YAML::Node& row_config) {
  MeasuredRow m;
  YAML::Node cfg = YAML::Clone(row_config);
  const RunConfig config = parse_run_config(cfg, "suite row");
  const nlohmann::json r = run_experiment_config(config);
  m.total_tok_s = r["total"]["throughput_tok_s"].get<double>();
  m.decode_tok_s = r["decode"]["throughput_tok_s"].get<double>();
  m.prefill_tok_s = r["prefill"]["throughput_tok_s"].get<double>();
  m.projected = r["projected"].get<bool>();
  m.details = r;
  return m;
}

// A failed command: its message and exit code; in a job of several processes, the message ends
// every rank of the job (the others may be waiting on this one).
int fail(int code, const char* kind, const char* what) {
  if (in_multi_process_job()) job_transport()->abort_all(std::string(kind) + what);
  std::fprintf(stderr, "%s%s\n", kind, what);
  return code;
}

// An integer option whose every value must be >= 1, refused in its own words (CLI11's
// PositiveNumber prints its double range, "not in range 0.000000 to 1.797…e+308").
CLI::Validator at_least_one(const std::string& option, const std::string& what) {
  return CLI::Validator(
      [option, what](std::string& value) -> std::string {
        long long n = 0;
        size_t used = 0;
        try {
          n = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size() || n < 1) {
          return option + " " + value + ": each " + what + " must be an integer >= 1";
        }
        return "";
      },
      ">= 1");
}

}  // namespace

int cli_main(int argc, char** argv) {
  // Before any command runs: SIGINT / SIGTERM remove its half-written temporary files.
  install_temp_file_cleanup();
  CLI::App app{"h2oflex: high-throughput offloaded generation with H2O KV eviction"};
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "run one throughput experiment from a YAML config");
  run_cmd->add_option("config", run.config_path, "run configuration (YAML)")->required();
  run_cmd->add_option("--json", run.json_out, "write the result document here");
  run_cmd->add_option("--set", run.overrides, "override a config key: key=value (repeatable)");
  run_cmd->add_flag("--plan-only", run.plan_only,
                    "check the memory plan against the budgets (and, with hardware_profile, "
                    "print the cost model's prediction) without loading or running anything");

  BenchIoOptions bio;
  std::string bio_size = "4GiB", bio_chunk = "1MiB";
  CLI::App* bio_cmd =
      app.add_subcommand("bench-io", "sequential disk throughput of the io engine (and fio)");
  bio_cmd->add_option("--path", bio.path, "directory for the test file")->required();
  bio_cmd->add_option("--size", bio_size, "file size, e.g. 4GiB");
  bio_cmd->add_option("--chunk", bio_chunk, "request size, e.g. 1MiB");
  bio_cmd->add_option("--queue-depth", bio.queue_depth, "requests in flight");
  bio_cmd->add_option("--json", bio.json_out, "write the result document here");

  BenchComputeOptions bc;
  CLI::App* bench_cmd = app.add_subcommand("bench", "compute benchmarks: gemm, prefill, decode");
  bench_cmd->add_option("what", bc.what, "gemm | prefill | decode")->required();
  bench_cmd->add_option("--model", bc.model, "OPT model whose shapes to use");
  bench_cmd->add_option("--batch", bc.batch, "sequences");
  bench_cmd->add_option("--prompt-len", bc.prompt_len, "prompt tokens");
  bench_cmd->add_option("--gen-len", bc.gen_len,
                        "decode: generated tokens (gen-len - 1 steps timed)");
  bench_cmd->add_option("--repeats", bc.repeats, "timed repetitions (median reported)");
  bench_cmd->add_option("--compute-dtype", bc.compute_dtype, "auto | f32 | f16 | bf16");
  bench_cmd->add_option("--json", bc.json_out, "write the result document here");

  PlanOptions plan;
  std::string plan_device, plan_host, plan_disk;
  CLI::App* plan_cmd = app.add_subcommand("plan", "choose a policy with the cost model");
  plan_cmd
      ->add_option(
          "--model", plan.model,
          "a published model name (opt-30b, llama-3-8b, pythia-6.9b, ...), a model directory or a "
          "GGUF file")
      ->required();
  plan_cmd->add_option("--hardware", plan.hardware_path, "hardware profile YAML")->required();
  plan_cmd->add_option("--prompt-len", plan.prompt_len, "prompt length");
  plan_cmd->add_option("--gen-len", plan.gen_len, "generated tokens");
  plan_cmd->add_option("--kv", plan.kv,
                       "full | h2o:HEAVY,RECENT | streaming:SINK,RECENT | tova:HEAVY,RECENT | "
                       "snapkv:HEAVY,RECENT | random:HEAVY,RECENT");
  plan_cmd->add_option("--device-mem", plan_device, "tighter device budget, e.g. 16GiB");
  plan_cmd->add_option("--host-mem", plan_host, "tighter host budget");
  plan_cmd->add_option("--disk-mem", plan_disk, "tighter disk budget");
  plan_cmd->add_option("--json", plan.json_out, "write the plan as JSON here");
  plan_cmd->add_flag("--allow-compression", plan.allow_compression,
                     "also consider 4-bit weights / KV cache (lossy: changes the outputs)");
  plan_cmd->add_option("--stages", plan.stages,
                       "pipeline stages, one machine each (the layers split evenly; default 1)");
  plan_cmd->add_option("--stage-hardware", plan.stage_hardware,
                       "one hardware profile per stage, in order (repeat; default: --hardware "
                       "for every stage)");

  ExperimentOptions exp;
  CLI::App* exp_cmd =
      app.add_subcommand("experiment", "run a suite of experiments (a paper table)");
  exp_cmd->add_option("suite", exp.suite_path, "suite YAML")->required();
  exp_cmd->add_option("--out", exp.out_dir, "output directory")->required();
  exp_cmd->add_flag("--predict", exp.predict, "only evaluate the cost model");

  ConvertOptions conv;
  CLI::App* conv_cmd = app.add_subcommand(
      "convert", "a Hugging Face checkpoint or GGUF file into the offload layout");
  conv_cmd->add_option("--from", conv.from, "Hugging Face directory or GGUF file (.gguf)")
      ->required();
  conv_cmd->add_option("--to", conv.to, "output directory")->required();
  conv_cmd->add_option("--dtype", conv.dtype, "matrix storage type: bf16 (default), f16, f32");

  ProfileOptions prof;
  std::string prof_size = "1GiB";
  CLI::App* prof_cmd =
      app.add_subcommand("profile", "measure this machine and write a hardware profile (YAML)");
  prof_cmd->add_option("--out", prof.out_path, "hardware profile to write")->required();
  prof_cmd->add_option("--disk-path", prof.disk_path, "directory for the disk measurement");
  prof_cmd->add_option("--size", prof_size, "disk test file size, e.g. 1GiB");
  prof_cmd->add_option("--name", prof.name, "profile name");
  prof_cmd->add_option("--compute-dtype", prof.compute_dtype, "auto | f32 | f16 | bf16");
  prof_cmd->add_option("--model", prof.model, "OPT model whose layer shape to measure");
  prof_cmd
      ->add_option("--decode-batches", prof.decode_rows,
                   "GPU batch sizes of the decode-rate table, e.g. 4,16,64")
      ->delimiter(',')
      ->check(at_least_one("--decode-batches", "batch size"));
  prof_cmd->add_option("--repeats", prof.repeats, "timed repetitions per measurement (median)")
      ->check(at_least_one("--repeats", "count"));

  GenerateJobOptions gen;
  CLI::App* gen_cmd = add_generate_subcommand(app, gen);

  EvalOptions eval;
  EvalCli eval_cli;
  add_eval_subcommand(app, eval, eval_cli);

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd = add_tokenize_subcommand(app, tokenize);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    // Under mpirun every rank runs the same command; `run` and `generate` know how to be one
    // stage.
    H2OFLEX_INPUT_CHECK(!in_multi_process_job() || run_cmd->parsed() || gen_cmd->parsed(),
                        "under mpirun only `h2oflex run` and `h2oflex generate` run as pipeline "
                        "stages (",
                        job_transport()->size(), " processes); run other commands as one process");
    if (run_cmd->parsed()) return run_command(run);
    if (bench_cmd->parsed()) return run_bench_compute(bc);
    if (bio_cmd->parsed()) {
      bio.size_bytes = parse_byte_size(bio_size);
      bio.chunk = parse_byte_size(bio_chunk);
      return run_bench_io(bio);
    }
    if (plan_cmd->parsed()) {
      if (!plan_device.empty()) plan.limits.device_mem = parse_byte_size(plan_device);
      if (!plan_host.empty()) plan.limits.host_mem = parse_byte_size(plan_host);
      if (!plan_disk.empty()) plan.limits.disk_mem = parse_byte_size(plan_disk);
      return run_plan(plan);
    }
    if (exp_cmd->parsed()) return run_experiment(exp, measure_row);
    if (gen_cmd->parsed()) return run_generate(gen);
    if (const int rc = eval_cli.run(eval); rc >= 0) return rc;
    if (prof_cmd->parsed()) {
      prof.disk_bytes = parse_byte_size(prof_size);
      return run_profile(prof);
    }
    if (conv_cmd->parsed()) return run_convert(conv);
    if (tokenize_cmd->parsed()) return run_tokenize(tokenize);
  } catch (const InputError& e) {
    return fail(2, "error: ", e.what());
  } catch (const IoError& e) {
    return fail(1, "I/O error: ", e.what());
  } catch (const std::exception& e) {
    return fail(1, "error: ", e.what());
  }
  return 0;
}

}  // namespace h2oflex
