#include "engine/tokenizer/tokenizer_file.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.hpp"

namespace inferlab::engine {

const char* const kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {
using nlohmann::json;

[[noreturn]] void fail(const std::string& context, const std::string& what) {
  throw InputError(context + ": " + what);
}

// A member by reference (never a copy: a hostile file may nest a million levels deep, and
// copying recurses), or null.
const json& member(const json& object, const char* key) {
  static const json null_value;
  auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

// Sequences of normalizers, pre-tokenizers and processors nest; real files nest one level.
void check_depth(int depth, const std::string& context) {
  if (depth > 16) fail(context, "Sequences nest more than 16 levels deep");
}

std::string type_of(const json& node) {
  if (!node.is_object()) return "";
  auto it = node.find("type");
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

bool flag(const json& node, const char* key, bool fallback, const std::string& context) {
  auto it = node.find(key);
  if (it == node.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(context, std::string("'") + key + "' must be true or false");
  return it->get<bool>();
}

int32_t token_id(const json& value, const std::string& context) {
  if (!value.is_number_integer()) fail(context, "a token id must be a whole number");
  auto id = value.get<int64_t>();
  if (id < 0 || id > kMaxTokenId) {
    fail(context,
         "token id " + std::to_string(id) + " is outside 0.." + std::to_string(kMaxTokenId));
  }
  return static_cast<int32_t>(id);
}

void check_token_text(const std::string& text, const std::string& context) {
  if (text.empty()) fail(context, "a token is the empty string");
  if (text.size() > kMaxTokenBytes) {
    fail(context, "a token is " + std::to_string(text.size()) + " bytes long (at most " +
                      std::to_string(kMaxTokenBytes) + ")");
  }
}

void read_model(const json& model, TokenizerSpec& spec, const std::string& context) {
  const std::string where = context + ": model";
  if (!model.is_object()) fail(context, "missing 'model' object");
  std::string type = type_of(model);
  if (type.empty() && model.contains("merges")) type = "BPE";
  if (type != "BPE") {
    fail(where, "type '" + type +
                    "' is not supported (inferlab reads byte-level BPE: "
                    "Llama 3, Qwen2; known: BPE)");
  }
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() != 0.0) fail(where, "BPE dropout is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it == model.end() || it->is_null()) continue;
    if (!it->is_string() || !it->get<std::string>().empty()) {
      fail(where, std::string("'") + key + "' is not supported");
    }
  }
  spec.ignore_merges = flag(model, "ignore_merges", false, where);

  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) fail(where, "missing 'vocab' object");
  if (vocab->empty()) fail(where, "the vocab is empty");
  spec.vocab.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    check_token_text(it.key(), where + ".vocab");
    spec.vocab.emplace(it.key(), token_id(it.value(), where + ".vocab['" + it.key() + "']"));
  }

  auto merges = model.find("merges");
  if (merges == model.end() || merges->is_null()) return;
  if (!merges->is_array()) fail(where, "'merges' must be an array");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string at = where + ".merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      // "a b": exactly one space (byte-level tokens hold no spaces).
      const auto& text = m.get_ref<const std::string&>();
      size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        fail(at, "'" + text + "' is not two tokens separated by one space");
      }
      spec.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(at, "a merge must be \"a b\" or [\"a\", \"b\"]");
    }
  }
}

void read_added_tokens(const json& root, TokenizerSpec& spec, const std::string& context) {
  auto list = root.find("added_tokens");
  if (list == root.end() || list->is_null()) return;
  if (!list->is_array()) fail(context, "'added_tokens' must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    const std::string at = context + ": added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) fail(at, "expected an object");
    AddedToken token;
    auto id = t.find("id");
    if (id == t.end()) fail(at, "missing 'id'");
    token.id = token_id(*id, at);
    auto content = t.find("content");
    if (content == t.end() || !content->is_string()) fail(at, "missing 'content' string");
    token.content = content->get<std::string>();
    check_token_text(token.content, at);
    token.special = flag(t, "special", false, at);
    token.single_word = flag(t, "single_word", false, at);
    token.lstrip = flag(t, "lstrip", false, at);
    token.rstrip = flag(t, "rstrip", false, at);
    token.normalized = flag(t, "normalized", false, at);
    spec.added_tokens.push_back(std::move(token));
  }
}

void read_normalizer(const json& node, TokenizerSpec& spec, const std::string& context,
                     int depth = 0) {
  if (node.is_null()) return;
  check_depth(depth, context);
  std::string type = type_of(node);
  if (type == "Sequence") {
    auto list = node.find("normalizers");
    if (list == node.end() || !list->is_array()) {
      fail(context, "normalizer Sequence without a list");
    }
    for (const json& n : *list) read_normalizer(n, spec, context, depth + 1);
    return;
  }
  if (type == "NFC" && !spec.normalize_nfc) {
    spec.normalize_nfc = true;
    return;
  }
  fail(context, "normalizer '" + type +
                    "' is not supported (known: none, NFC; Llama 3 has none, Qwen2 and Qwen3 NFC)");
}

void read_pre_tokenizer(const json& node, TokenizerSpec& spec, bool& byte_level,
                        const std::string& context, int depth = 0) {
  if (node.is_null()) return;
  check_depth(depth, context);
  std::string type = type_of(node);
  const std::string where = context + ": pre_tokenizer " + type;
  if (type == "Sequence") {
    auto list = node.find("pretokenizers");
    if (list == node.end() || !list->is_array()) fail(where, "missing 'pretokenizers' list");
    for (const json& p : *list) read_pre_tokenizer(p, spec, byte_level, context, depth + 1);
  } else if (type == "Split") {
    if (byte_level) fail(where, "a Split after ByteLevel is not supported");
    auto behavior = node.find("behavior");
    if (behavior == node.end() || *behavior != "Isolated") {
      fail(where, "only the 'Isolated' behavior is supported");
    }
    if (flag(node, "invert", false, where)) fail(where, "'invert': true is not supported");
    auto pattern = node.find("pattern");
    if (pattern == node.end() || !pattern->is_object()) fail(where, "missing 'pattern'");
    if (auto r = pattern->find("Regex"); r != pattern->end() && r->is_string()) {
      spec.split_patterns.push_back(r->get<std::string>());
    } else if (auto s = pattern->find("String"); s != pattern->end() && s->is_string()) {
      spec.split_patterns.push_back("\\Q" + s->get<std::string>() + "\\E");
    } else {
      fail(where, "the pattern must be {\"Regex\": …} or {\"String\": …}");
    }
  } else if (type == "ByteLevel") {
    if (byte_level) fail(where, "two ByteLevel pre-tokenizers");
    byte_level = true;
    spec.add_prefix_space = flag(node, "add_prefix_space", true, where);
    if (flag(node, "use_regex", true, where)) spec.split_patterns.push_back(kGpt2SplitPattern);
  } else {
    fail(where, "is not supported (known: Sequence, Split, ByteLevel)");
  }
}

// The first special token of the single-sequence template, if it comes before the text.
void read_post_processor(const json& node, TokenizerSpec& spec, const std::string& context,
                         int depth = 0) {
  check_depth(depth, context);
  std::string type = type_of(node);
  if (type == "Sequence") {
    auto list = node.find("processors");
    if (list != node.end() && list->is_array()) {
      for (const json& p : *list) read_post_processor(p, spec, context, depth + 1);
    }
    return;
  }
  if (type != "TemplateProcessing") return;
  const std::string where = context + ": post_processor";
  auto single = node.find("single");
  if (single == node.end() || !single->is_array() || single->empty()) return;
  const json& first = (*single)[0];
  auto special = first.find("SpecialToken");
  if (!first.is_object() || special == first.end()) return;
  auto name = special->find("id");
  auto table = node.find("special_tokens");
  if (name == special->end() || !name->is_string() || table == node.end() || !table->is_object() ||
      !table->contains(name->get<std::string>())) {
    fail(where, "the template's first special token is not in 'special_tokens'");
  }
  const json& entry = (*table)[name->get<std::string>()];
  auto ids = entry.find("ids");
  if (ids == entry.end() || !ids->is_array() || ids->size() != 1) {
    fail(where, "the template's first special token must have exactly one id");
  }
  spec.bos_id = token_id((*ids)[0], where);
}
}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& context) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(context, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail(context, "expected a JSON object (a Hugging Face tokenizer.json)");
  TokenizerSpec spec;
  try {
    read_model(member(root, "model"), spec, context);
    read_added_tokens(root, spec, context);
    read_normalizer(member(root, "normalizer"), spec, context);
    bool byte_level = false;
    read_pre_tokenizer(member(root, "pre_tokenizer"), spec, byte_level, context);
    if (!byte_level) {
      fail(context,
           "the pre-tokenizer has no ByteLevel step (inferlab reads byte-level BPE "
           "tokenizers only)");
    }
    read_post_processor(member(root, "post_processor"), spec, context);
  } catch (const json::exception& e) {
    fail(context, std::string("unexpected content: ") + e.what());
  }
  return spec;
}

TokenizerSpec read_tokenizer_file(const std::filesystem::path& path) {
  const std::string context = "tokenizer file '" + path.string() + "'";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw InputError(context + " does not exist or is not a file");
  }
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError("cannot read " + context);
  if (size > kMaxTokenizerFileBytes) {
    throw InputError(context + " is " + std::to_string(size) + " bytes, over the bound of " +
                     std::to_string(kMaxTokenizerFileBytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + context);
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) throw InputError("cannot read " + context);
  return parse_tokenizer_json(text, context);
}

}  // namespace inferlab::engine
