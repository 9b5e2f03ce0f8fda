#include "engine/tokenizer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/added_tokens.hpp"
#include "engine/tokenizer/bpe.hpp"
#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/normalizer.hpp"
#include "engine/tokenizer/pre_tokenizer.hpp"
#include "engine/tokenizer/tokenizer_file.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::engine {

struct Tokenizer::Impl {
  Impl(const TokenizerSpec& spec, const std::string& context)
      : bpe(spec, context),
        added(spec.added_tokens),
        add_prefix_space(spec.add_prefix_space),
        nfc(spec.normalize_nfc) {
    for (const auto& pattern : spec.split_patterns) {
      splitters.push_back(std::make_unique<RegexSplitter>(pattern, context));
    }
    int32_t max_id = bpe.max_id();
    for (const auto& t : spec.added_tokens) max_id = std::max(max_id, t.id);
    id_bytes.assign(static_cast<size_t>(max_id) + 1, std::string());
    known.assign(id_bytes.size(), false);
    special.assign(id_bytes.size(), false);
    for (int32_t id = 0; id <= bpe.max_id(); ++id) {
      const std::string* token = bpe.token(id);
      if (!token) continue;
      // HF's ByteLevel decoder keeps a token's own text when it is not all byte characters.
      auto bytes = bytes_of_byte_level(*token);
      id_bytes[id] = bytes ? std::move(*bytes) : *token;
      known[id] = true;
    }
    for (const auto& t : spec.added_tokens) {
      id_bytes[t.id] = t.content;
      known[t.id] = true;
      special[t.id] = t.special;
      added_ids.emplace(t.content, t.id);
    }
    bos = spec.bos_id;
    if (bos && (*bos < 0 || static_cast<size_t>(*bos) >= known.size() || !known[*bos])) {
      throw InputError(context + ": the BOS id " + std::to_string(*bos) + " is not a token");
    }
  }

  void encode_plain(std::string_view text, std::vector<int32_t>& ids) const {
    std::string normalized, prefixed;
    if (nfc) {
      normalized = normalize_nfc(text);
      text = normalized;
    }
    if (add_prefix_space && !text.empty() && text.front() != ' ') {
      prefixed.reserve(text.size() + 1);
      prefixed += ' ';
      prefixed.append(text);
      text = prefixed;
    }
    std::vector<std::string_view> pieces{text}, next;
    for (const auto& splitter : splitters) {
      next.clear();
      for (auto piece : pieces) splitter->split(piece, next);
      pieces.swap(next);
    }
    std::string word;
    for (auto piece : pieces) {
      word.clear();
      append_byte_level(word, piece);
      bpe.encode_word(word, ids);
    }
  }

  BpeModel bpe;
  AddedTokenMatcher added;
  bool add_prefix_space;
  bool nfc;
  std::vector<std::unique_ptr<RegexSplitter>> splitters;
  std::vector<std::string> id_bytes;
  std::vector<bool> known, special;
  std::unordered_map<std::string, int32_t> added_ids;
  std::optional<int32_t> bos;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& context) {
  TokenizerSpec spec = parse_tokenizer_json(json_text, context);
  return Tokenizer(std::make_unique<Impl>(spec, context));
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& given) {
  std::error_code ec;
  std::filesystem::path path = given;
  if (std::filesystem::is_directory(path, ec)) path /= "tokenizer.json";
  TokenizerSpec spec = read_tokenizer_file(path);
  const std::string context = "tokenizer file '" + path.string() + "'";
  auto config_path = path.parent_path() / "tokenizer_config.json";
  if (!spec.bos_id && std::filesystem::is_regular_file(config_path, ec)) {
    nlohmann::json config = read_json_file(config_path, "tokenizer config");
    auto bos = config.find("bos_token");
    std::string text;
    if (bos != config.end() && bos->is_string()) text = bos->get<std::string>();
    if (bos != config.end() && bos->is_object() && bos->contains("content") &&
        (*bos)["content"].is_string()) {
      text = (*bos)["content"].get<std::string>();
    }
    for (const auto& t : spec.added_tokens) {
      if (!text.empty() && t.content == text) spec.bos_id = t.id;
    }
  }
  return Tokenizer(std::make_unique<Impl>(spec, context));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  if (text.size() > kMaxTextBytes) {
    throw InputError("the text to tokenize is " + std::to_string(text.size()) +
                     " bytes, over the bound of " + std::to_string(kMaxTextBytes) + " bytes");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos) {
    if (!impl_->bos) throw InputError("this tokenizer has no BOS token to add");
    ids.push_back(*impl_->bos);
  }
  for (const TextSpan& span : impl_->added.split(text)) {
    if (span.token_id >= 0) {
      ids.push_back(span.token_id);
    } else {
      impl_->encode_plain(text.substr(span.begin, span.end - span.begin), ids);
    }
  }
  return ids;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->known.size() || !impl_->known[id]) {
    throw InputError("token id " + std::to_string(id) + " is not in the vocabulary (ids 0.." +
                     std::to_string(static_cast<int64_t>(impl_->known.size()) - 1) + ")");
  }
  return impl_->id_bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string out;
  for (int32_t id : ids) {
    const std::string& bytes = token_bytes(id);
    if (skip_special_tokens && impl_->special[id]) continue;
    out += bytes;
  }
  return out;
}

std::optional<int32_t> Tokenizer::added_token_id(std::string_view content) const {
  auto it = impl_->added_ids.find(std::string(content));
  if (it == impl_->added_ids.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto id = added_token_id(token)) return id;
  int32_t id = impl_->bpe.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

std::optional<int32_t> Tokenizer::bos_id() const {
  return impl_->bos;
}

int32_t Tokenizer::vocab_size() const {
  return static_cast<int32_t>(impl_->known.size());
}

}  // namespace inferlab::engine
