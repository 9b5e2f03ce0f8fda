#include "engine/tokenizer/bpe.hpp"

#include <queue>

#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

BpeModel::BpeModel(const TokenizerSpec& spec, const std::string& context)
    : vocab_(spec.vocab), ignore_merges_(spec.ignore_merges) {
  int32_t max_id = 0;
  for (const auto& [text, id] : vocab_) max_id = std::max(max_id, id);
  id_to_token_.assign(static_cast<size_t>(max_id) + 1, std::string());
  for (const auto& [text, id] : vocab_) {
    if (!id_to_token_[id].empty()) {
      throw InputError(context + ": tokens '" + id_to_token_[id] + "' and '" + text +
                       "' share the id " + std::to_string(id));
    }
    id_to_token_[id] = text;
  }
  const auto& alphabet = byte_level_alphabet();
  for (unsigned b = 0; b < 256; ++b) {
    if (!vocab_.count(alphabet[b])) {
      throw InputError(context + ": the vocab lacks the byte-level token '" + alphabet[b] +
                       "' for byte " + std::to_string(b) +
                       " (a byte-level BPE vocab holds all 256 bytes)");
    }
  }
  merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [a, b] = spec.merges[rank];
    // a and b by explicit reference: clang before 16 cannot capture structured bindings.
    auto at = [&, &a = a, &b = b] {
      return context + ": merges[" + std::to_string(rank) + "] '" + a + " " + b + "'";
    };
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end()) throw InputError(at() + " names the unknown token '" + a + "'");
    if (ib == vocab_.end()) throw InputError(at() + " names the unknown token '" + b + "'");
    auto merged = vocab_.find(a + b);
    if (merged == vocab_.end()) {
      throw InputError(at() + " makes '" + a + b + "', which is not in the vocab");
    }
    // A repeated pair keeps its last rank, as HF's map does.
    merges_[pair_key(ia->second, ib->second)] = Merge{static_cast<int32_t>(rank), merged->second};
  }
}

const std::string* BpeModel::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || id_to_token_[id].empty()) {
    return nullptr;
  }
  return &id_to_token_[id];
}

int32_t BpeModel::find(std::string_view text) const {
  auto it = vocab_.find(std::string(text));
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  if (word.size() > kCachedWordBytes) {
    merge_word(word, ids);
    return;
  }
  std::string key(word);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  merge_word(word, word_ids);
  ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kCacheEntries) cache_.clear();
  cache_.emplace(std::move(key), std::move(word_ids));
}

// HF tokenizers' Word::merge_all, step for step (including how it skips stale heap entries),
// so ties and odd vocabularies resolve the same way.
void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  // 32-bit links: a word is at most Tokenizer::kMaxTextBytes long.
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1: none
    bool removed;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  size_t pos = 0;
  while (pos < word.size()) {
    size_t n = utf8_sequence_length(word, pos);
    if (n == 0) n = 1;  // not reached: byte-level text is valid UTF-8
    auto it = vocab_.find(std::string(word.substr(pos, n)));
    pos += n;
    if (it == vocab_.end()) continue;  // HF drops characters it has no token for
    auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{it->second, index - 1, index + 1, false});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const Candidate& o) const {  // a max-heap: lowest rank, then leftmost, on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate> queue;
  auto push_pair = [&](int32_t left) {
    int32_t right = symbols[left].next;
    if (right < 0) return;
    auto m = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (m != merges_.end()) queue.push(Candidate{m->second.rank, left, m->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i);

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    int32_t right_pos = left.next;
    auto m = merges_.find(pair_key(left.id, symbols[right_pos].id));
    if (m == merges_.end() || m->second.new_id != top.new_id) continue;  // stale entry
    left.id = top.new_id;
    symbols[right_pos].removed = true;
    left.next = symbols[right_pos].next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace inferlab::engine
