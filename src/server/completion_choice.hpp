#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"
#include "server/logprobs_json.hpp"
#include "server/openai_request.hpp"
#include "server/openai_response.hpp"
#include "server/request_stream.hpp"
#include "server/text_stream.hpp"

namespace inferlab::server {

// What one choice of a request shows of its job.
struct ChoiceSetup {
  int64_t index = 0;  // choices[].index: prompt i's choice j is i * n + j
  Endpoint endpoint = Endpoint::completions;
  std::vector<std::string> stops;
  std::optional<int> logprobs;  // top logprobs per token; absent: no logprobs
  bool echo = false;            // completions: the prompt's text (and logprobs) first
  bool score_only = false;      // max_tokens 0 with echo: the generated token is not shown
  std::vector<int32_t> prompt;  // its tokens (echo)
};

// One choice on its way from the engine (its RequestStream) to the client: its text (echo,
// then the generated text cut at a stop string) and its tokens' logprobs in the endpoint's
// format, in pieces as they come. A stop string ends the sequence (the stream is cancelled); the
// token that completed it is the last whose logprobs are shown.
class ChoiceStream {
 public:
  ChoiceStream(const engine::Tokenizer& tokenizer, ChoiceSetup setup,
               std::shared_ptr<RequestStream> stream);

  struct Piece {
    ChoiceJson json;                // text and logprobs since the last piece, finish reason
    bool tokens_came = false;       // tokens came before any stop string (text maybe held back)
    bool finished = false;          // the finish reason is set
    std::string error;              // finish reason "error": why
    int64_t completion_tokens = 0;  // when finished
    bool cancelled = false;         // a stop string ended the sequence: wake the loop
  };
  // What came since the last call, waiting up to `timeout` for something.
  Piece next(std::chrono::milliseconds timeout);
  // Ends the sequence (the client went away); true when this call cancelled it.
  bool cancel();
  bool finished() const { return finished_; }
  int64_t index() const { return setup_.index; }
  bool has_logprobs() const { return setup_.logprobs.has_value(); }

 private:
  const engine::Tokenizer& tokenizer_;
  ChoiceSetup setup_;
  std::shared_ptr<RequestStream> stream_;
  TextStream text_;
  CompletionLogprobs completion_logprobs_;
  bool echoed_ = false, finished_ = false;
};

}  // namespace inferlab::server
