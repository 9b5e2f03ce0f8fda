// A request body of the OpenAI-compatible server, read as /v1/completions and as
// /v1/chat/completions: a 400 ApiError is the documented answer, anything else is a finding.
#include <stdexcept>
#include <string>

#include "fuzz_support.hpp"
#include "server/api_error.hpp"
#include "server/openai_request.hpp"
#include "server/openai_response.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab::server;
  const auto text = inferlab::fuzz::as_text(data, size);
  for (Endpoint endpoint : {Endpoint::completions, Endpoint::chat_completions}) {
    try {
      const CompletionRequest request = parse_completion_request(text, endpoint);
      // What the server echoes of a request must serialize whatever bytes it held.
      const std::string text =
          request.prompts.empty() ? std::string() : request.prompts[0].text.value_or("");
      (void)dump_json(completion_json({"cmpl-1", 0, request.model, endpoint},
                                      {{0, text, "stop", nullptr}}, 1, 1));
    } catch (const ApiError& error) {
      if (error.status() != 400) throw std::logic_error("a parse error that is not a 400");
      (void)dump_json(error.body());
    }
  }
  return 0;
}
