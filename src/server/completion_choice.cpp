#include "server/completion_choice.hpp"

namespace inferlab::server {

ChoiceStream::ChoiceStream(const engine::Tokenizer& tokenizer, ChoiceSetup setup,
                           std::shared_ptr<RequestStream> stream)
    : tokenizer_(tokenizer),
      setup_(std::move(setup)),
      stream_(std::move(stream)),
      text_(tokenizer, setup_.stops),
      completion_logprobs_(tokenizer) {}

bool ChoiceStream::cancel() {
  if (stream_->cancelled()) return false;
  stream_->cancel();
  return true;
}

ChoiceStream::Piece ChoiceStream::next(std::chrono::milliseconds timeout) {
  const RequestStream::Update u = stream_->wait(timeout);
  Piece piece;
  piece.json.index = setup_.index;
  const bool chat = setup_.endpoint == Endpoint::chat_completions;
  ResponseJson chat_content = ResponseJson::array();
  // The echoed prompt first: at once without logprobs, else with its logprobs (the engine
  // sends them before the first token).
  if (setup_.echo && !echoed_ && (!has_logprobs() || u.prompt_logprobs)) {
    piece.json.text = echo_text(tokenizer_, setup_.prompt);
    if (has_logprobs()) completion_logprobs_.add_prompt(setup_.prompt, *u.prompt_logprobs);
    echoed_ = true;
  }
  if (!setup_.score_only) {
    // A token at a time, so that the logprobs stop at the token that completed a stop string.
    for (size_t k = 0; k < u.tokens.size() && !text_.stopped(); ++k) {
      const int32_t token = u.tokens[k];
      piece.json.text += text_.push(std::span<const int32_t>(&token, 1));
      if (!text_.stopped()) piece.tokens_came = true;
      if (!has_logprobs() || k >= u.logprobs.size()) continue;
      if (chat) {
        chat_content.push_back(chat_logprob_json(tokenizer_, u.logprobs[k]));
      } else {
        completion_logprobs_.add(token, u.logprobs[k]);
      }
    }
    if (text_.stopped()) piece.cancelled = cancel();
  }
  if (u.finished) {
    finished_ = true;
    piece.finished = true;
    piece.error = u.error;
    if (setup_.score_only) {
      // Only the prompt was asked for: the one token the engine generated is not shown.
      piece.json.finish_reason = u.finish_reason == "error" ? "error" : "length";
    } else {
      piece.json.text += text_.finish();
      piece.json.finish_reason = text_.stopped() ? std::string("stop") : u.finish_reason;
      piece.completion_tokens = u.completion_tokens;
    }
  }
  if (has_logprobs()) {
    piece.json.logprobs =
        chat ? ResponseJson{{"content", std::move(chat_content)}} : completion_logprobs_.take();
  }
  return piece;
}

}  // namespace inferlab::server
