// `inferlab init-weights`: a Hugging Face checkpoint folder with random weights at a model's
// real shapes, and a tokenizer beside them.
#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "engine/init_weights.hpp"
#include "report/emit.hpp"
#include "report/engine_report.hpp"
#include "util/data_dir.hpp"

namespace inferlab::cli {

namespace {
struct InitWeightsArgs {
  CommonArgs common;
  std::string model, out, tokenizer;
  uint64_t seed = 1;
};

// --tokenizer none: no tokenizer; a file: it and the tokenizer_config.json beside it; empty:
// the fetched Llama 3 tokenizer.
void choose_tokenizer(const std::string& flag, engine::InitWeightsOptions& options) {
  if (flag == "none") return;
  std::filesystem::path json = flag.empty() ? fetched_tokenizer_dir("llama3") / "tokenizer.json"
                                            : std::filesystem::path(flag);
  if (std::filesystem::is_directory(json)) json /= "tokenizer.json";
  if (!std::filesystem::is_regular_file(json)) {
    throw InputError("tokenizer file '" + json.string() + "' does not exist");
  }
  options.tokenizer_json = json;
  auto config = json.parent_path() / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config)) options.tokenizer_config_json = config;
}
}  // namespace

void register_init_weights(CLI::App& app) {
  auto args = std::make_shared<InitWeightsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "init-weights", "Write a Hugging Face checkpoint with random weights at a model's shapes");
  cmd->add_option("--model", args->model, "Shipped model name or config.json")->required();
  cmd->add_option("--out", args->out, "Checkpoint folder to write")->required();
  cmd->add_option("--seed", args->seed, "Seed of the weights")->capture_default_str();
  cmd->add_option("--tokenizer", args->tokenizer,
                  "tokenizer.json to copy (default: the fetched Llama 3 one; none: no tokenizer)");
  add_format_option(cmd, args->common);
  cmd->callback([args] {
    OutputFormat format = parse_output_format(args->common.format);
    engine::InitWeightsOptions options;
    options.out_dir = args->out;
    options.seed = args->seed;
    choose_tokenizer(args->tokenizer, options);
    auto result = engine::init_weights(engine::load_llama_config(args->model), options);
    emit(init_weights_json(args->out, args->seed, result), init_weights_table(args->out, result),
         format);
  });
}

}  // namespace inferlab::cli
