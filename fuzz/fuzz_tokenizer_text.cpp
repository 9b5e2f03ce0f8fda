// What a user types or sends: arbitrary bytes (ill-formed UTF-8 included) into encode, and the
// same bytes read as token ids into the streaming decoder. Besides crashes it checks the
// documented round trips: decode(encode(x)) == x (NFC(x) for a normalizing tokenizer), and the
// streamed pieces == utf8_lossy(decode(ids)) over the ids it accepted.
#include <cstdint>
#include <cstdio>
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

// The committed tiny tokenizers (no normalizer with the Llama 3 split regex; NFC with GPT-2's
// ByteLevel regex). With INFERLAB_FUZZ_REAL_TOKENIZERS=1 also the real Llama 3 and Qwen3 files
// of third_party/tokenizers/ (scripts/fetch-tokenizer.sh): the long runs use them, CI's short
// budget does not (loading them under ASan takes about 30 s of CPU).
std::vector<std::unique_ptr<Loaded>>& tokenizers() {
  static std::vector<std::unique_ptr<Loaded>> loaded;
  return loaded;
}

void load_tokenizers() {
  const std::filesystem::path source = INFERLAB_FUZZ_SOURCE_DIR;
  auto& out = tokenizers();
  const std::pair<std::filesystem::path, bool> tiny[] = {
      {source / "fuzz/data/tiny_tokenizer.json", false},
      {source / "fuzz/data/tiny_nfc_tokenizer.json", true}};
  for (const auto& [path, nfc] : tiny) {
    out.push_back(std::make_unique<Loaded>(Loaded{Tokenizer::from_file(path), nfc}));
  }
  const char* real_wanted = std::getenv("INFERLAB_FUZZ_REAL_TOKENIZERS");
  if (real_wanted == nullptr || std::string(real_wanted) != "1") return;
  const std::pair<const char*, bool> real[] = {{"llama3", false}, {"qwen3", true}};
  for (auto [name, nfc] : real) {
    const auto path = source / "third_party/tokenizers" / name / "tokenizer.json";
    if (!std::filesystem::exists(path)) {
      fprintf(stderr, "fuzz_tokenizer_text: no %s (run scripts/fetch-tokenizer.sh)\n",
              path.c_str());
      abort();
    }
    out.push_back(std::make_unique<Loaded>(Loaded{Tokenizer::from_file(path), nfc}));
  }
}

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "fuzz_tokenizer_text: %s\n", what);
    abort();
  }
}

}  // namespace

// Before fuzzing starts, so the load counts against no input's timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  load_tokenizers();
  return 0;
}

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
