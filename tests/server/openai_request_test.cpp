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
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "Hi");
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.echo);
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_EQ(r.temperature, 1.0);  // OpenAI's default
  EXPECT_FALSE(r.stream);
  const auto full = completion(
      R"({"model": "m", "prompt": [1, 2, 3], "max_tokens": 5, "min_tokens": 2, "temperature": 0,
          "top_p": 0.5, "top_k": -1, "seed": -3, "stream": true,
          "stream_options": {"include_usage": true}, "stop": "\n", "stop_token_ids": [7],
          "ignore_eos": true, "n": 1, "logprobs": null, "user": "x"})");
  ASSERT_EQ(full.prompts.size(), 1u);
  EXPECT_FALSE(full.prompts[0].text.has_value());
  EXPECT_EQ(full.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
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
  expect_400(R"({"model": "m", "prompt": [[1], 5]})", "prompt", "array of token ids");
  expect_400(R"({"model": "m", "prompt": ["a", ""]})", "prompt", "empty");
  expect_400(R"({"model": "m", "prompt": [[1], []]})", "prompt", "non-empty");
  expect_400(R"({"model": "m", "prompt": [1, -2]})", "prompt", "between");
  expect_400(R"({"model": "m", "prompt": [1, 2.5]})", "prompt", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": 0})", "max_tokens", "'echo': true");
  expect_400(R"({"model": "m", "prompt": "x", "max_tokens": -1})", "max_tokens", "between 0");
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
  expect_400(R"({"model": "m", "prompt": "x", "n": 2, "best_of": 3})", "best_of", "other than n");
  expect_400(R"({"model": "m", "prompt": "x", "prompt_logprobs": 1})", "prompt_logprobs",
             "not supported");
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

TEST(OpenAiRequest, LogprobsEchoNAndSeveralPrompts) {
  const auto r = completion(
      R"({"model": "m", "prompt": "x", "logprobs": 3, "echo": true, "max_tokens": 0, "n": 2,
          "best_of": 2})");
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.max_tokens, 0);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(completion(R"({"model": "m", "prompt": "x", "logprobs": 0})").logprobs, 0);
  // false and null: no logprobs (a client's explicit default).
  EXPECT_FALSE(completion(R"({"model": "m", "prompt": "x", "logprobs": false})").logprobs);
  EXPECT_FALSE(completion(R"({"model": "m", "prompt": "x", "logprobs": null})").logprobs);
  // lm-evaluation-harness sends token-id prompts as a batch: one prompt each.
  const auto batch = completion(R"({"model": "m", "prompt": [[1, 2], [3]]})");
  ASSERT_EQ(batch.prompts.size(), 2u);
  EXPECT_EQ(batch.prompts[1].ids, std::vector<int32_t>{3});
  const auto texts = completion(R"({"model": "m", "prompt": ["a", "b"]})");
  ASSERT_EQ(texts.prompts.size(), 2u);
  EXPECT_EQ(texts.prompts[1].text, "b");
  const auto chat = Endpoint::chat_completions;
  const auto c = parse_completion_request(
      R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": true,
          "top_logprobs": 5})",
      chat);
  EXPECT_EQ(c.logprobs, 5);
  EXPECT_EQ(parse_completion_request(
                R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
                    "logprobs": true})",
                chat)
                .logprobs,
            0);
  EXPECT_FALSE(parse_completion_request(
                   R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
                       "logprobs": false, "top_logprobs": 0})",
                   chat)
                   .logprobs);
}

TEST(OpenAiRequest, BadLogprobsEchoAndNAreA400NamingTheField) {
  expect_400(R"({"model": "m", "prompt": "x", "logprobs": -1})", "logprobs", "between 0 and 20");
  expect_400(R"({"model": "m", "prompt": "x", "logprobs": 21})", "logprobs", "between 0 and 20");
  expect_400(R"({"model": "m", "prompt": "x", "logprobs": true})", "logprobs", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "logprobs": 2.5})", "logprobs", "integer");
  expect_400(R"({"model": "m", "prompt": "x", "top_logprobs": 2})", "top_logprobs",
             "'logprobs': k");
  expect_400(R"({"model": "m", "prompt": "x", "echo": 1})", "echo", "true or false");
  expect_400(R"({"model": "m", "prompt": "x", "n": 0})", "n", "between 1 and 128");
  expect_400(R"({"model": "m", "prompt": "x", "n": 129})", "n", "between 1 and 128");
  const auto chat = Endpoint::chat_completions;
  const std::string messages = R"("messages": [{"role": "user", "content": "x"}])";
  expect_400(R"({"model": "m", )" + messages + R"(, "top_logprobs": 2})", "top_logprobs",
             "'logprobs': true", chat);
  expect_400(R"({"model": "m", )" + messages + R"(, "logprobs": false, "top_logprobs": 2})",
             "top_logprobs", "'logprobs': true", chat);
  expect_400(R"({"model": "m", )" + messages + R"(, "logprobs": true, "top_logprobs": 21})",
             "top_logprobs", "between 0 and 20", chat);
  expect_400(R"({"model": "m", )" + messages + R"(, "logprobs": 3})", "logprobs", "true or false",
             chat);
  expect_400(R"({"model": "m", )" + messages + R"(, "echo": true})", "echo", "not supported", chat);
  expect_400(R"({"model": "m", )" + messages + R"(, "max_tokens": 0})", "max_tokens", "echo", chat);
}

TEST(OpenAiRequest, ResponsesSerializeInvalidUtf8) {
  // A model's bytes can end mid-character; the JSON stays valid (U+FFFD).
  const std::string text = dump_json(completion_json({"cmpl-1", 0, "m", Endpoint::completions},
                                                     {{0, "a\xff", "length", nullptr}}, 1, 1));
  EXPECT_NE(text.find("a\xEF\xBF\xBD"), std::string::npos) << text;
}

}  // namespace
}  // namespace inferlab::server
