#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/logprobs.hpp"

namespace inferlab::server {

// One request's tokens on their way from the engine's loop (one thread) to its HTTP handler
// (another): the loop pushes tokens (with their logprobs where the job asked for them; the
// prompt's before the first token) and finally a finish reason; the handler waits for them, and
// cancels when its client went away or a stop string ended the text.
class RequestStream {
 public:
  explicit RequestStream(double submitted_s) : submitted_s_(submitted_s) {}

  // --- The engine's side ---
  // `logprobs`: empty, or one entry per token.
  void push(const std::vector<int32_t>& tokens, double now_s,
            const std::vector<engine::PositionLogprobs>& logprobs = {});
  // The prompt's logprobs (entry p - 1 scores prompt token p), once.
  void push_prompt_logprobs(std::vector<engine::PositionLogprobs> logprobs);
  // "stop", "length", "abort" or "error"; completion_tokens counts a stop token that ended it.
  void finish(const std::string& reason, int64_t completion_tokens, double now_s,
              const std::string& error = "");

  // --- The handler's side ---
  struct Update {
    std::vector<int32_t> tokens;                     // new since the last wait
    std::vector<engine::PositionLogprobs> logprobs;  // theirs, where asked for
    std::optional<std::vector<engine::PositionLogprobs>> prompt_logprobs;  // once, where asked
    bool finished = false;
    std::string finish_reason, error;
    int64_t completion_tokens = 0;
  };
  // Waits until there is something new or `timeout` passes.
  Update wait(std::chrono::milliseconds timeout);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

  double submitted_s() const { return submitted_s_; }

 private:
  const double submitted_s_;
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<int32_t> pending_;
  std::vector<engine::PositionLogprobs> pending_logprobs_;
  std::optional<std::vector<engine::PositionLogprobs>> prompt_logprobs_;
  bool finished_ = false, finish_seen_ = false;
  std::string finish_reason_, error_;
  int64_t completion_tokens_ = 0;
};

}  // namespace inferlab::server
