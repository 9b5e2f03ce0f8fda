#include "server/request_stream.hpp"

namespace inferlab::server {

void RequestStream::push(const std::vector<int32_t>& tokens, double,
                         const std::vector<engine::PositionLogprobs>& logprobs) {
  if (tokens.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_.insert(pending_.end(), tokens.begin(), tokens.end());
    pending_logprobs_.insert(pending_logprobs_.end(), logprobs.begin(), logprobs.end());
  }
  ready_.notify_all();
}

void RequestStream::push_prompt_logprobs(std::vector<engine::PositionLogprobs> logprobs) {
  {
    std::lock_guard lock(mutex_);
    prompt_logprobs_ = std::move(logprobs);
  }
  ready_.notify_all();
}

void RequestStream::finish(const std::string& reason, int64_t completion_tokens, double,
                           const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    finish_reason_ = reason;
    error_ = error;
    completion_tokens_ = completion_tokens;
  }
  ready_.notify_all();
}

RequestStream::Update RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] {
    return !pending_.empty() || prompt_logprobs_ || (finished_ && !finish_seen_);
  });
  Update update;
  update.tokens.swap(pending_);
  update.logprobs.swap(pending_logprobs_);
  update.prompt_logprobs.swap(prompt_logprobs_);
  if (finished_) {
    finish_seen_ = true;
    update.finished = true;
    update.finish_reason = finish_reason_;
    update.error = error_;
    update.completion_tokens = completion_tokens_;
  }
  return update;
}

}  // namespace inferlab::server
