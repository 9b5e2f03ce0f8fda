#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"

namespace inferlab::engine {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Llama 3's chat prompt, written out as its tokenizer_config.json template renders it:
//   <|begin_of_text|> then for each message
//   <|start_header_id|>ROLE<|end_header_id|>\n\n CONTENT(trimmed) <|eot_id|>
//   and, with add_generation_prompt, <|start_header_id|>assistant<|end_header_id|>\n\n
// The token texts are read from the tokenizer (BOS from bos_id()); InputError when it lacks
// them (not a Llama 3 tokenizer) or when there are no messages. As with HF's
// apply_chat_template, special-token text inside a message becomes the special token.
std::string llama3_chat_prompt(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                               bool add_generation_prompt = true);

// The prompt above, encoded.
std::vector<int32_t> encode_llama3_chat(const Tokenizer& tokenizer,
                                        std::span<const ChatMessage> messages,
                                        bool add_generation_prompt = true);

// Ids that end generation, sorted, no duplicates: generation_config.json's eos_token_id (a
// number or a list) and tokenizer_config.json's eos_token, both from `checkpoint_dir` when
// present, and <|eot_id|> / <|eom_id|> where the tokenizer has them. InputError for a
// malformed file or an id outside the vocabulary; an empty result is an InputError too
// (generation could not stop).
std::vector<int32_t> stop_token_ids(const Tokenizer& tokenizer,
                                    const std::filesystem::path& checkpoint_dir);

}  // namespace inferlab::engine
