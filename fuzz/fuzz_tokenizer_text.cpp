// What a user types or sends: arbitrary bytes (ill-formed UTF-8 included) into encode, and the
// same bytes read as token ids into the streaming decoder. Besides crashes it checks the
// documented round trips: decode(encode(x)) == x (NFC(x) for a normalizing tokenizer), and the
// streamed pieces == utf8_lossy(decode(ids)) over the ids it accepted.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/normalizer.hpp"
#include "engine/tokenizer/stream_decoder.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "fuzz_support.hpp"

namespace {

using inferlab::engine::Tokenizer;

struct Loaded {
  Tokenizer tokenizer;
  bool normalizes_nfc;
};

// The committed tiny tokenizer, and the real Llama 3 (no normalizer) and Qwen3 (NFC) files when
// scripts/fetch-tokenizer.sh has put them in third_party/tokenizers/.
const std::vector<std::unique_ptr<Loaded>>& tokenizers() {
  static const auto loaded = [] {
    const std::filesystem::path source = INFERLAB_FUZZ_SOURCE_DIR;
    std::vector<std::unique_ptr<Loaded>> out;
    out.push_back(std::make_unique<Loaded>(
        Loaded{Tokenizer::from_file(source / "fuzz/data/tiny_tokenizer.json"), false}));
    const std::pair<const char*, bool> real[] = {{"llama3", false}, {"qwen3", true}};
    for (auto [name, nfc] : real) {
      const auto path = source / "third_party/tokenizers" / name / "tokenizer.json";
      if (std::filesystem::exists(path)) {
        out.push_back(std::make_unique<Loaded>(Loaded{Tokenizer::from_file(path), nfc}));
      }
    }
    return out;
  }();
  return loaded;
}

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "fuzz_tokenizer_text: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  using namespace inferlab::engine;
  const std::string_view text = fuzz::as_text(data, size);
  std::vector<int32_t> raw_ids(size / 4);
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * 4);
  for (const auto& loaded : tokenizers()) {
    const Tokenizer& tokenizer = loaded->tokenizer;
    const auto ids = tokenizer.encode(text);
    const std::string expected = loaded->normalizes_nfc ? normalize_nfc(text) : std::string(text);
    check(tokenizer.decode(ids) == expected, "decode(encode(x)) != x");

    StreamDecoder stream(tokenizer);
    std::string streamed;
    std::vector<int32_t> accepted;
    for (int32_t id : raw_ids) {
      fuzz::accept_input_errors([&] {
        streamed += stream.push(id);
        accepted.push_back(id);
      });
    }
    streamed += stream.finish();
    check(is_valid_utf8(streamed), "streamed text is not valid UTF-8");
    check(streamed == utf8_lossy(tokenizer.decode(accepted)), "streamed != utf8_lossy(decode)");
  }
  return 0;
}
