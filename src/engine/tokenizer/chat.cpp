#include "engine/tokenizer/chat.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/utf8.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::engine {

namespace {
// Python's str.isspace() set, which Jinja's trim strips.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end) {
    size_t n = utf8_sequence_length(text, begin);
    if (n == 0 || !is_python_space(utf8_decode_at(text, begin, n))) break;
    begin += n;
  }
  while (end > begin) {
    size_t n = 1;
    while (n <= 4 && n <= end - begin && utf8_sequence_length(text, end - n) != n) ++n;
    if (n > 4 || n > end - begin || !is_python_space(utf8_decode_at(text, end - n, n))) break;
    end -= n;
  }
  return text.substr(begin, end - begin);
}

std::string require_added(const Tokenizer& tokenizer, const char* content) {
  if (!tokenizer.added_token_id(content)) {
    throw InputError(std::string("the tokenizer has no '") + content +
                     "' token: --chat needs a Llama 3 (instruct) tokenizer");
  }
  return content;
}
}  // namespace

std::string llama3_chat_prompt(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                               bool add_generation_prompt) {
  if (messages.empty()) throw InputError("a chat needs at least one message");
  const std::string start = require_added(tokenizer, "<|start_header_id|>");
  const std::string end = require_added(tokenizer, "<|end_header_id|>");
  const std::string eot = require_added(tokenizer, "<|eot_id|>");
  std::string bos = require_added(tokenizer, "<|begin_of_text|>");
  if (auto id = tokenizer.bos_id()) bos = tokenizer.token_bytes(*id);
  std::string prompt = bos;
  for (const auto& m : messages) {
    if (m.role.empty()) throw InputError("a chat message has an empty role");
    prompt += start + m.role + end + "\n\n" + trim(m.content) + eot;
  }
  if (add_generation_prompt) prompt += start + "assistant" + end + "\n\n";
  return prompt;
}

std::vector<int32_t> encode_llama3_chat(const Tokenizer& tokenizer,
                                        std::span<const ChatMessage> messages,
                                        bool add_generation_prompt) {
  return tokenizer.encode(llama3_chat_prompt(tokenizer, messages, add_generation_prompt));
}

std::vector<int32_t> stop_token_ids(const Tokenizer& tokenizer,
                                    const std::filesystem::path& checkpoint_dir) {
  std::vector<int32_t> ids;
  auto add_id = [&](const nlohmann::json& value, const std::string& where) {
    if (!value.is_number_integer())
      throw InputError(where + ": eos_token_id must be whole numbers");
    auto id = value.get<int64_t>();
    if (id < 0 || id >= tokenizer.vocab_size()) {
      throw InputError(where + ": eos_token_id " + std::to_string(id) +
                       " is outside the vocabulary (0.." +
                       std::to_string(tokenizer.vocab_size() - 1) + ")");
    }
    ids.push_back(static_cast<int32_t>(id));
  };
  std::error_code ec;
  auto generation = checkpoint_dir / "generation_config.json";
  if (std::filesystem::is_regular_file(generation, ec)) {
    auto config = read_json_file(generation, "generation config");
    const std::string where = "generation config '" + generation.string() + "'";
    if (config.is_object() && config.contains("eos_token_id")) {
      const auto& eos = config["eos_token_id"];
      if (eos.is_array()) {
        for (const auto& v : eos) add_id(v, where);
      } else if (!eos.is_null()) {
        add_id(eos, where);
      }
    }
  }
  auto tokenizer_config = checkpoint_dir / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(tokenizer_config, ec)) {
    auto config = read_json_file(tokenizer_config, "tokenizer config");
    if (config.is_object() && config.contains("eos_token")) {
      const auto& eos = config["eos_token"];
      std::string text;
      if (eos.is_string()) text = eos.get<std::string>();
      if (eos.is_object() && eos.contains("content") && eos["content"].is_string()) {
        text = eos["content"].get<std::string>();
      }
      if (!text.empty()) {
        auto id = tokenizer.token_id(text);
        if (!id) {
          throw InputError("tokenizer config '" + tokenizer_config.string() + "': eos_token '" +
                           text + "' is not a token of the tokenizer");
        }
        ids.push_back(*id);
      }
    }
  }
  for (const char* name : {"<|eot_id|>", "<|eom_id|>"}) {
    if (auto id = tokenizer.added_token_id(name)) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) {
    throw InputError(
        "no end-of-sequence token: give the checkpoint a generation_config.json "
        "with eos_token_id or a tokenizer_config.json with eos_token");
  }
  return ids;
}

}  // namespace inferlab::engine
