// The request bodies the server takes: every field's type and range, and the refusals that keep
// a client from getting silently different output.
#include "server/openai_request.hpp"

#include <gtest/gtest.h>

#include "server/api_error.hpp"
#include "server/openai_response.hpp"

namespace inferlab::server {
namespace {

CompletionRequest completion(const std::string& body) {
  return parse_completion_request(body, Endpoint::completions);
}

// The 400's param names the field, and the message contains `part`.
void expect_400(const std::string& body, const std::string& param, const std::string& part,
                Endpoint endpoint = Endpoint::completions) {
  try {
    parse_completion_request(body, endpoint);
    ADD_FAILURE() << "accepted: " << body;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << body;
    const auto json = e.body();
    EXPECT_EQ(json["error"]["type"], "invalid_request_error");
    if (!param.empty()) {
      EXPECT_EQ(json["error"]["param"], param) << body;
    }
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(OpenAiRequest, CompletionFieldsAndDefaults) {
  const auto r = completion(R"({"model": "m", "prompt": "Hi"})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt_text, "Hi");
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_EQ(r.temperature, 1.0);  // OpenAI's default
  EXPECT_FALSE(r.stream);
  const auto full = completion(
      R"({"model": "m", "prompt": [1, 2, 3], "max_tokens": 5, "min_tokens": 2, "temperature": 0,
          "top_p": 0.5, "top_k": -1, "seed": -3, "stream": true,
          "stream_options": {"include_usage": true}, "stop": "\n", "stop_token_ids": [7],
          "ignore_eos": true, "n": 1, "logprobs": null, "user": "x"})");
  EXPECT_EQ(full.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(full.max_tokens, 5);
  EXPECT_EQ(full.min_tokens, 2);
  EXPECT_EQ(full.top_k, 0);  // -1: no limit
  EXPECT_EQ(full.seed, static_cast<uint64_t>(-3));
  EXPECT_TRUE(full.include_usage);
  EXPECT_EQ(full.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(full.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_TRUE(full.ignore_eos);
}

TEST(OpenAiRequest, ChatMessagesWithTextParts) {
  const auto r = parse_completion_request(
      R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}]}],
          "max_completion_tokens": 9})",
      Endpoint::chat_completions);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].role, "user");
  EXPECT_EQ(r.messages[1].content, "Hi!");
  EXPECT_EQ(r.max_tokens, 9);
}

TEST(OpenAiRequest, EveryMalformedFieldIsA400NamingIt) {
  expect_400("{not json", "", "not valid JSON");
  expect_400("[1, 2]", "", "JSON object");
  expect_400(R"({"prompt": "x"})", "model", "required");
  expect_400(R"({"model": 5, "prompt": "x"})", "model", "string");
  expect_400(R"({"model": "m"})", "prompt", "required");
  expect_400(R"({"model": "m", "prompt": ""})", "prompt", "empty");
  expect_400(R"({"model": "m", "prompt": []})", "prompt", "non-empty");
  expect_400(R"({"model": "m", "prompt": ["a", "b"]})", "prompt", "several prompts");
  expect_400(R"({"model": "m", "prompt": [1, -2]})", "prompt", "between");
  expect_400(R"({"model": "m", "prompt": [1, 2.5]})", "prompt", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": 0})", "max_tokens", "between 1");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": "5"})", "max_tokens", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": 1e300})", "max_tokens", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": 2, "min_tokens": 3})", "min_tokens",
             "exceed");
  expect_400(R"({"model": "m", "prompt": "x", "temperature": 2.5})", "temperature", "between 0");
  expect_400(R"({"model": "m", "prompt": "x", "temperature": "hot"})", "temperature", "number");
  expect_400(R"({"model": "m", "prompt": "x", "top_p": 0})", "top_p", "(0, 1]");
  expect_400(R"({"model": "m", "prompt": "x", "top_k": -2})", "top_k", "between");
  expect_400(R"({"model": "m", "prompt": "x", "stream": "yes"})", "stream", "true or false");
  expect_400(R"({"model": "m", "prompt": "x", "stream_options": {"include_usage": true}})",
             "stream_options", "stream");
  expect_400(R"({"model": "m", "prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop",
             "at most 4");
  expect_400(R"({"model": "m", "prompt": "x", "stop": [""]})", "stop", "1 to 256");
  expect_400(R"({"model": "m", "prompt": "x", "stop": 3})", "stop", "string");
  expect_400(R"({"model": "m", "prompt": "x", "stop_token_ids": 3})", "stop_token_ids", "array");
  expect_400(R"({"model": "m", "prompt": "x", "seed": 1.5})", "seed", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "ignore_eos": 1})", "ignore_eos", "true or false");
  // Asked-for features the server does not have are refused, not ignored.
  expect_400(R"({"model": "m", "prompt": "x", "n": 2})", "n", "n");
  expect_400(R"({"model": "m", "prompt": "x", "logprobs": 5})", "logprobs", "not supported");
  expect_400(R"({"model": "m", "prompt": "x", "echo": true})", "echo", "not supported");
  expect_400(R"({"model": "m", "prompt": "x", "presence_penalty": 0.5})", "presence_penalty",
             "other than 0");
  expect_400(R"({"model": "m", "prompt": "x", "suffix": "y"})", "suffix", "not supported");
  const auto chat = Endpoint::chat_completions;
  expect_400(R"({"model": "m"})", "messages", "required", chat);
  expect_400(R"({"model": "m", "messages": []})", "messages", "non-empty", chat);
  expect_400(R"({"model": "m", "messages": [{"role": "robot", "content": "x"}]})",
             "messages[0].role", "system, user or assistant", chat);
  expect_400(R"({"model": "m", "messages": [{"role": "user"}]})", "messages[0].content",
             "no content", chat);
  expect_400(
      R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
      "messages[0].content", "parts", chat);
}

TEST(OpenAiRequest, ResponsesSerializeInvalidUtf8) {
  // A model's bytes can end mid-character; the JSON stays valid (U+FFFD).
  const std::string text = dump_json(
      completion_json({"cmpl-1", 0, "m", Endpoint::completions}, "a\xff", "length", 1, 1));
  EXPECT_NE(text.find("a\xEF\xBF\xBD"), std::string::npos) << text;
}

}  // namespace
}  // namespace inferlab::server
