// `inferlab tokenize`: token ids of texts, exactly as Hugging Face tokenizers gives them.
#include <fstream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "report/emit.hpp"
#include "report/engine_report.hpp"
#include "util/json_file.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

namespace {
struct TokenizeArgs {
  CommonArgs common;
  std::string model, tokenizer, text, input;
  bool add_bos = false;
};

// One {"text": ...} object per line; blank lines are skipped.
std::vector<std::string> read_jsonl_texts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read --input file '" + path + "'");
  std::vector<std::string> texts;
  std::string line;
  // A line is bounded as it is read: the text's own bound plus room for the JSON around it.
  constexpr size_t kMaxLineBytes = engine::Tokenizer::kMaxTextBytes + 1024;
  int64_t number = 0;
  for (LineRead read; (read = read_bounded_line(in, line, kMaxLineBytes)) != LineRead::end;) {
    ++number;
    if (read == LineRead::too_long) {
      throw InputError(path + " line " + std::to_string(number) + " is over 4 MiB");
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto context = path + " line " + std::to_string(number);
    nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    if (object.is_discarded()) throw InputError(context + " is not valid JSON");
    texts.push_back(require_string(object, "text", context));
  }
  return texts;
}
}  // namespace

void register_tokenize(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Token ids of texts (byte-level BPE)");
  auto* model = cmd->add_option("--model", args->model, "Checkpoint folder or shipped model");
  auto* tokenizer = cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json");
  model->excludes(tokenizer);
  auto* text = cmd->add_option("--text", args->text, "One text");
  auto* input = cmd->add_option("--input", args->input, "JSONL file, one {\"text\": ...} a line");
  text->excludes(input);
  cmd->add_flag("--add-bos", args->add_bos, "Start each text with the BOS token");
  add_format_option(cmd, args->common);
  cmd->callback([args] {
    OutputFormat format = parse_output_format(args->common.format);
    if (args->text.empty() == args->input.empty()) {
      throw InputError("give one of --text T or --input FILE.jsonl");
    }
    auto tok = engine::Tokenizer::from_file(tokenizer_path(args->model, args->tokenizer));
    std::vector<std::string> texts =
        args->input.empty() ? std::vector<std::string>{args->text} : read_jsonl_texts(args->input);
    std::vector<std::vector<int32_t>> tokens;
    for (const auto& t : texts) tokens.push_back(tok.encode(t, args->add_bos));
    std::string text_out = tokenize_text(tokens);
    emit(tokenize_json(tokens), text_out, text_out, format);
  });
}

}  // namespace inferlab::cli
