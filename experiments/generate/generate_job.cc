#include "experiments/generate/generate_job.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "experiments/generate/block_loop.h"
#include "experiments/generate/completion.h"
#include "experiments/generate/error_report.h"
#include "experiments/generate/job_input.h"
#include "experiments/generate/job_record.h"
#include "experiments/generate/progress_meter.h"
#include "experiments/generate/result_log.h"
#include "models/chat_template/model_chat_template.h"
#include "models/gguf/gguf_checkpoint.h"
#include "models/gguf/gguf_tokenizer.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/core/timer.h"

namespace h2oflex::generate {

namespace {

std::string result_line(const GenerateRequest& request, const Completion& c,
                        const PreparedRequest& p) {
  nlohmann::ordered_json j;  // "id" first: ResultLog recognizes torn lines by that prefix
  j["id"] = request.id;
  j["text"] = c.text;
  j["prompt_tokens"] = p.prompt_ids.size();
  // Bytes of the prompt the vocabulary has no token for (dropped, as Hugging Face drops them).
  if (p.dropped_bytes > 0) j["prompt_dropped_bytes"] = p.dropped_bytes;
  j["completion_tokens"] = c.completion_tokens;
  j["finish_reason"] = c.finish_reason;
  if (request.messages) {
    // A chat answer also in the shape of OpenAI's chat completions: choices[0].message.
    nlohmann::ordered_json choice;
    choice["index"] = 0;
    choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    choice["finish_reason"] = c.finish_reason;
    j["choices"] = nlohmann::ordered_json::array({choice});
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A job with results keeps the settings it started with; a new (or empty) one records its own.
void keep_job_record(const JobSettings& settings, const nlohmann::ordered_json& record,
                     bool has_results) {
  const std::string path = job_record_path_for(settings.output_path);
  const std::optional<nlohmann::ordered_json> recorded = read_job_record(path);
  if (has_results && recorded) {
    check_same_job(*recorded, record, path, settings.output_path);
    return;
  }
  if (has_results) {
    std::fprintf(stderr,
                 "generate: %s holds results but there is no job record %s; recording this run's "
                 "settings, which the earlier results may not share\n",
                 settings.output_path.c_str(), path.c_str());
  }
  write_job_record(path, record);
}

}  // namespace

std::optional<chat_template::ChatTemplate> chat_template_for(
    const std::vector<GenerateRequest>& requests, const std::string& model_dir) {
  const bool any_chat = std::any_of(requests.begin(), requests.end(), [](const GenerateRequest& r) {
    return r.messages.has_value();
  });
  if (!any_chat || model_dir.empty()) return std::nullopt;
  if (is_gguf_path(model_dir)) return load_gguf_chat_template(GgufFile::open(model_dir));
  return chat_template::load_model_chat_template(model_dir);
}

uint64_t request_sampling_key(const std::string& id) {
  return stable_hash(id.data(), id.size());
}

uint64_t seeded_sampling_key(uint64_t seed) {
  // Not an id's hash: the text "seed=N" keeps the two kinds of keys apart.
  const std::string text = "seed=" + std::to_string(seed);
  return stable_hash(text.data(), text.size()) ^ 0x9E3779B97F4A7C15ull;
}

JobSummary run_generate_job(const JobSettings& settings, const BpeTokenizer& tokenizer,
                            const BlockRunner& run_block) {
  JobSummary summary;
  JobInput input = read_job_input(settings.input_path);
  const std::optional<chat_template::ChatTemplate> chat =
      chat_template_for(input.requests, settings.chat_template_dir);
  std::vector<PreparedRequest> prepared =
      prepare_requests(input.requests, tokenizer, chat ? &*chat : nullptr, settings.defaults,
                       settings.max_positions, input.errors);
  summary.requests = static_cast<int64_t>(prepared.size());
  size_t dropping = 0;
  for (const PreparedRequest& p : prepared) dropping += p.dropped_bytes > 0;
  if (dropping > 0) {
    std::fprintf(stderr,
                 "generate: %zu prompt(s) hold bytes the vocabulary has no token for; they are "
                 "dropped (prompt_dropped_bytes on their result lines)\n",
                 dropping);
  }
  summary.errors = static_cast<int64_t>(input.errors.size());

  ResultLog log = ResultLog::open(settings.output_path);  // locks the output first
  if (!settings.job_record.is_null()) {
    nlohmann::ordered_json record = settings.job_record;
    // The template decides a chat request's prompt: a resume must render with the same one.
    if (chat) {
      char digest[17];
      std::snprintf(digest, sizeof digest, "%016llx",
                    static_cast<unsigned long long>(
                        stable_hash(chat->source().data(), chat->source().size())));
      record["chat_template"] = digest;
    }
    keep_job_record(settings, record, log.lines() > 0);
  }
  summary.truncated_bytes = log.truncated_bytes();
  if (log.truncated_bytes() > 0) {
    std::fprintf(stderr, "generate: removed a partial last line (%lld bytes) from %s\n",
                 static_cast<long long>(log.truncated_bytes()), settings.output_path.c_str());
  }
  const std::string errors_path = errors_path_for(settings.output_path);
  write_error_report(errors_path, input.errors);
  if (!input.errors.empty()) {
    std::fprintf(stderr, "generate: %zu input line(s) rejected, see %s\n", input.errors.size(),
                 errors_path.c_str());
  }

  GroupingOptions grouping;
  grouping.block_size = settings.block_size;
  grouping.by_length = settings.group_by_length;
  grouping.max_positions = settings.max_positions;
  const std::vector<JobBlock> blocks = plan_blocks(prepared, grouping);
  summary.cost = plan_cost(blocks, prepared);

  auto id_of = [&](size_t p) -> const std::string& { return input.requests[prepared[p].index].id; };
  for (size_t p = 0; p < prepared.size(); ++p)
    summary.already_done += log.done_ids().count(id_of(p));
  std::fprintf(stderr,
               "generate: %lld requests in %zu blocks of up to %d (%s), %lld already in %s\n",
               static_cast<long long>(summary.requests), blocks.size(), settings.block_size,
               settings.group_by_length ? "grouped by length" : "input order",
               static_cast<long long>(summary.already_done), settings.output_path.c_str());

  ProgressMeter progress(summary.requests, summary.already_done, settings.progress_terminal,
                         settings.progress_interval_s);
  BlockLoop loop;
  loop.seed = settings.seed;
  loop.stop_ids = settings.stop_ids;
  loop.stop_requested = settings.stop_requested;
  loop.done = [&](size_t p) { return log.done_ids().count(id_of(p)) != 0; };
  loop.on_block = [&](const std::vector<FinishedRequest>& finished) {
    std::vector<std::string> lines, line_ids;
    int64_t block_tokens = 0;
    for (const FinishedRequest& f : finished) {
      const GenerateRequest& request = input.requests[prepared[f.prepared].index];
      lines.push_back(result_line(request, f.completion, prepared[f.prepared]));
      line_ids.push_back(request.id);
      block_tokens += f.completion.completion_tokens;
    }
    log.append(lines, line_ids);
    progress.advance(static_cast<int64_t>(lines.size()), block_tokens);
  };
  const BlockLoopSummary ran =
      run_blocks(blocks, prepared, input.requests, loop, tokenizer, run_block);
  summary.blocks_run = ran.blocks_run;
  summary.completed = ran.completed;
  summary.completion_tokens = ran.completion_tokens;
  summary.interrupted = ran.interrupted;
  summary.generate_s = ran.generate_s;
  progress.finish();
  return summary;
}

}  // namespace h2oflex::generate
