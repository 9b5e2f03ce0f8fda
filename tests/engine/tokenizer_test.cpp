// The byte-level BPE tokenizer: a hand-made tokenizer.json with hand-worked ids, bad files and
// hostile text, and (when scripts/fetch-tokenizer.sh has run) the real Llama 3 tokenizer.
#include "engine/tokenizer/tokenizer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/chat.hpp"
#include "engine/tokenizer/normalizer.hpp"
#include "engine/tokenizer/pre_tokenizer.hpp"
#include "engine/tokenizer/stream_decoder.hpp"
#include "engine/tokenizer/tokenizer_file.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;

const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tiny tokenizer: the 256 byte tokens with id = byte value, then merges
//   h e -> he (256), l l -> ll (257), he ll -> hell (258), hell o -> hello (259),
//   Ġ w -> Ġw (260), a a -> aa (263), and "xyz" (264) reachable by no merge;
// added tokens <|eot|> (261, special) and <|bos|> (262, the template's BOS).
json tiny_json(bool ignore_merges = false) {
  json vocab = json::object();
  const auto& alphabet = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) vocab[alphabet[b]] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  vocab["Ġw"] = 260;
  vocab["aa"] = 263;
  vocab["xyz"] = 264;
  return json{
      {"version", "1.0"},
      {"added_tokens", json::array({json{{"id", 261}, {"content", "<|eot|>"}, {"special", true}},
                                    json{{"id", 262}, {"content", "<|bos|>"}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {json{{"type", "Split"},
                   {"pattern", {{"Regex", kLlama3Pattern}}},
                   {"behavior", "Isolated"},
                   {"invert", false}},
              json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({json{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}},
                                json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens",
         {{"<|bos|>", {{"id", "<|bos|>"}, {"ids", {262}}, {"tokens", {"<|bos|>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges",
         json::array({"h e", "l l", "he ll", json::array({"hell", "o"}), "Ġ w", "a a"})}}}};
}

Tokenizer tiny(bool ignore_merges = false) {
  return Tokenizer::from_json(tiny_json(ignore_merges).dump(), "tiny");
}

Ids bytes_of(std::string_view s) {
  Ids ids;
  for (char c : s) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

TEST(TokenizerTiny, MergesByRank) {
  auto t = tiny();
  EXPECT_EQ(t.encode("hello"), (Ids{259}));
  EXPECT_EQ(t.encode("hell"), (Ids{258}));
  EXPECT_EQ(t.encode("helo"), (Ids{256, 'l', 'o'}));
  // " world" is one pre-token: Ġ w merges, the rest stays bytes.
  EXPECT_EQ(t.encode("hello world"), (Ids{259, 260, 'o', 'r', 'l', 'd'}));
  // Equal ranks: leftmost first.
  EXPECT_EQ(t.encode("aaa"), (Ids{263, 'a'}));
  EXPECT_EQ(t.encode("aaaa"), (Ids{263, 263}));
  EXPECT_EQ(t.encode(""), Ids{});
}

TEST(TokenizerTiny, IgnoreMergesTakesWholeWords) {
  EXPECT_EQ(tiny(false).encode("xyz"), bytes_of("xyz"));
  EXPECT_EQ(tiny(true).encode("xyz"), (Ids{264}));
  EXPECT_EQ(tiny(true).encode("hello"), (Ids{259}));
}

TEST(TokenizerTiny, PreTokenizerSplits) {
  auto t = tiny();
  // Digits in groups of three; contractions split off; whitespace before a word stays apart
  // from all but one space.
  EXPECT_EQ(t.encode("12345"), (Ids{'1', '2', '3', '4', '5'}));
  // "  hello" splits into " " and " hello" (\s+(?!\S) leaves one space for the word).
  EXPECT_EQ(t.encode("  hello"), (Ids{' ', ' ', 259}));
  EXPECT_EQ(t.encode("I'M"), (Ids{'I', '\'', 'M'}));
}

TEST(TokenizerTiny, AddedTokensFirst) {
  auto t = tiny();
  EXPECT_EQ(t.encode("hello<|eot|>hello"), (Ids{259, 261, 259}));
  EXPECT_EQ(t.encode("<|eot|><|eot|>"), (Ids{261, 261}));
  EXPECT_EQ(t.encode("<|eot|"), bytes_of("<|eot|"));
  EXPECT_EQ(t.encode("hello", true), (Ids{262, 259}));
  EXPECT_EQ(t.bos_id(), 262);
  EXPECT_TRUE(t.is_special(261));
  EXPECT_FALSE(t.is_special(259));
  EXPECT_EQ(t.token_id("<|eot|>"), 261);
  EXPECT_EQ(t.token_id("Ġw"), 260);
  EXPECT_FALSE(t.token_id("nope").has_value());
  EXPECT_EQ(t.vocab_size(), 265);
}

TEST(TokenizerTiny, DecodeRoundTrips) {
  auto t = tiny();
  for (std::string s : {"hello world", "hello<|eot|>  x\r\n\ty", "naïve 日本 😀", "aaa 123"}) {
    EXPECT_EQ(t.decode(t.encode(s)), s) << s;
  }
  EXPECT_EQ(t.decode(Ids{259, 261}, /*skip_special_tokens=*/true), "hello");
  EXPECT_THROW(t.decode(Ids{265}), InputError);
  EXPECT_THROW(t.decode(Ids{-1}), InputError);
}

TEST(TokenizerTiny, AnyBytesRoundTrip) {
  auto t = tiny();
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 64, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(t.decode(t.encode(s)), s);
  }
  // Ill-formed UTF-8 is byte-encoded: a lone continuation byte, a cut sequence, a surrogate.
  EXPECT_EQ(t.encode("a\x80"), (Ids{'a', 0x80}));
  EXPECT_EQ(t.decode(t.encode("\xE6\x97 x\xED\xA0\x80")), "\xE6\x97 x\xED\xA0\x80");
}

TEST(TokenizerTiny, StreamDecoderHoldsBackCutCharacters) {
  auto t = tiny();
  StreamDecoder stream(t);
  // "日" is E6 97 A5: one byte token at a time.
  EXPECT_EQ(stream.push(0xE6), "");
  EXPECT_EQ(stream.pending_bytes(), 1u);
  EXPECT_EQ(stream.push(0x97), "");
  EXPECT_EQ(stream.push(0xA5), "日");
  EXPECT_EQ(stream.push(259), "hello");
  EXPECT_EQ(stream.push(261), "<|eot|>");
  // A byte that can never start a character comes out as U+FFFD at once.
  EXPECT_EQ(stream.push(0xFF), "\xEF\xBF\xBD");
  EXPECT_EQ(stream.push(0xF0), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  StreamDecoder skipping(t, true);
  EXPECT_EQ(skipping.push(261), "");
}

TEST(TokenizerTiny, BadFiles) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      Tokenizer::from_json(text, "t.json");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("{", "not valid JSON");
  expect_error("[]", "expected a JSON object");
  auto j = tiny_json();
  j["model"]["type"] = "WordPiece";
  expect_error(j.dump(), "type 'WordPiece' is not supported");
  j = tiny_json();
  j["model"]["merges"].push_back("q nope");
  expect_error(j.dump(), "unknown token 'nope'");
  j = tiny_json();
  j["model"]["merges"].push_back("x y");
  expect_error(j.dump(), "makes 'xy', which is not in the vocab");
  j = tiny_json();
  j["model"]["merges"].push_back("a b c");
  expect_error(j.dump(), "not two tokens");
  j = tiny_json();
  j["model"]["vocab"].erase("Ġ");
  expect_error(j.dump(), "byte 32");
  j = tiny_json();
  j["model"]["vocab"]["big"] = int64_t{1} << 40;
  expect_error(j.dump(), "outside");
  j = tiny_json();
  j["model"]["vocab"]["dup"] = 5;
  expect_error(j.dump(), "share the id 5");
  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_error(j.dump(), "does not compile");
  j = tiny_json();
  j["normalizer"] = json{{"type", "NFKC"}};
  expect_error(j.dump(), "normalizer 'NFKC' is not supported");
  j = tiny_json();
  j["pre_tokenizer"] = json{{"type", "Whitespace"}};
  expect_error(j.dump(), "not supported");
  j = tiny_json();
  j["pre_tokenizer"] = nullptr;
  expect_error(j.dump(), "no ByteLevel");
  j = tiny_json();
  j["added_tokens"][0]["content"] = "";
  expect_error(j.dump(), "empty string");
  j = tiny_json();
  j.erase("model");
  expect_error(j.dump(), "missing 'model'");
  j = tiny_json();
  j["model"]["vocab"] = json::array();
  expect_error(j.dump(), "missing 'vocab'");
}

TEST(TokenizerTiny, FilesAndBounds) {
  auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_tok_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_THROW(Tokenizer::from_file(dir / "missing.json"), InputError);
  EXPECT_THROW(Tokenizer::from_file(dir), InputError);  // a folder without tokenizer.json
  { std::ofstream(dir / "tokenizer.json") << tiny_json().dump(); }
  EXPECT_EQ(Tokenizer::from_file(dir).encode("hello"), (Ids{259}));
  // Over the size bound: refused before it is read.
  auto big = dir / "big.json";
  { std::ofstream(big) << "{"; }
  std::filesystem::resize_file(big, kMaxTokenizerFileBytes + 1);
  try {
    Tokenizer::from_file(big);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("over the bound"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
  auto t = tiny();
  EXPECT_THROW(t.encode(std::string(Tokenizer::kMaxTextBytes + 1, 'a')), InputError);
}

TEST(TokenizerTiny, LongInputsTakeLinearTime) {
  auto t = tiny();
  for (std::string unit : {"a", " ", "\n", " \n", "\r\n", "!", "1", "ab ", "😀", "h", "he"}) {
    std::string text;
    while (text.size() < (1u << 20)) text += unit;
    std::clock_t start = std::clock();
    auto ids = t.encode(text);
    double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
    EXPECT_LT(seconds, 5.0 * testing::kTimeBoundScale) << "'" << unit << "' x " << text.size();
    EXPECT_EQ(t.decode(ids), text);
  }
}

TEST(TokenizerTiny, HostileFiles) {
  // A catastrophic regex: PCRE2's step limit turns it into an InputError, in bounded time.
  auto j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a+)+[^a]";
  auto t = Tokenizer::from_json(j.dump(), "t.json");
  std::clock_t start = std::clock();
  EXPECT_THROW(t.encode(std::string(64, 'a')), InputError);
  EXPECT_LT(double(std::clock() - start) / CLOCKS_PER_SEC, 10.0 * testing::kTimeBoundScale);
  // A long added token that the text almost matches everywhere: still linear.
  auto k = tiny_json();
  k["added_tokens"].push_back(json{{"id", 264}, {"content", std::string(4000, 'a') + "b"}});
  auto u = Tokenizer::from_json(k.dump(), "t.json");
  std::string almost(1 << 20, 'a');
  start = std::clock();
  EXPECT_EQ(u.decode(u.encode(almost)), almost);
  EXPECT_EQ(u.encode(almost + "b").back(), 264);
  EXPECT_LT(double(std::clock() - start) / CLOCKS_PER_SEC, 10.0 * testing::kTimeBoundScale);
  // Nesting a million deep: an error, not a stack overflow.
  std::string deep =
      "{\"model\": " + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  EXPECT_THROW(Tokenizer::from_json(deep, "t.json"), InputError);
  // Sequences nested deeply (written as text: nlohmann's dump recurses).
  j = tiny_json();
  j["pre_tokenizer"] = "NESTED";
  std::string nested;
  for (int i = 0; i < 100000; ++i) nested += R"({"type":"Sequence","pretokenizers":[)";
  nested += R"({"type":"ByteLevel"})";
  for (int i = 0; i < 100000; ++i) nested += "]}";
  std::string text = j.dump();
  text.replace(text.find("\"NESTED\""), 8, nested);
  EXPECT_THROW(Tokenizer::from_json(text, "t.json"), InputError);
  // Truncated files.
  std::string whole = tiny_json().dump();
  for (size_t cut : {size_t{1}, whole.size() / 3, whole.size() - 1}) {
    EXPECT_THROW(Tokenizer::from_json(whole.substr(0, cut), "t.json"), InputError);
  }
  // Wrong types where objects, strings and numbers belong.
  for (const char* path :
       {"/model", "/model/vocab", "/model/merges", "/added_tokens", "/added_tokens/0/id",
        "/pre_tokenizer/pretokenizers", "/pre_tokenizer/pretokenizers/0/pattern",
        "/post_processor/single", "/model/vocab/he", "/model/ignore_merges"}) {
    for (json bad : {json(7), json("x"), json::array(), json::object(), json(-1), json(nullptr)}) {
      auto k = tiny_json();
      k[json::json_pointer(path)] = bad;
      try {
        Tokenizer::from_json(k.dump(), "t.json");  // either fine or an InputError
      } catch (const InputError&) {
      }
    }
  }
}

TEST(TokenizerTiny, AddedTokenStripOptions) {
  auto j = tiny_json();
  j["added_tokens"].push_back(json{{"id", 264}, {"content", "<L>"}, {"lstrip", true}});
  j["added_tokens"].push_back(json{{"id", 263}, {"content", "<R>"}, {"rstrip", true}});
  j["added_tokens"].push_back(json{{"id", 260}, {"content", "<W>"}, {"single_word", true}});
  auto t = Tokenizer::from_json(j.dump(), "t.json");
  // lstrip takes the spaces before the token, rstrip those after.
  EXPECT_EQ(t.encode("a  <L>b"), (Ids{'a', 264, 'b'}));
  EXPECT_EQ(t.encode("a<R>  b"), (Ids{'a', 263, 'b'}));
  // single_word: only where no word character touches it.
  EXPECT_EQ(t.encode("a <W> b"), (Ids{'a', ' ', 260, ' ', 'b'}));
  EXPECT_EQ(t.encode("a<W>"), (Ids{'a', '<', 'W', '>'}));
  // Longest match among overlapping added tokens, leftmost first.
  auto k = tiny_json();
  k["added_tokens"].push_back(json{{"id", 264}, {"content", "<|eot|>x"}});
  auto u = Tokenizer::from_json(k.dump(), "t.json");
  EXPECT_EQ(u.encode("<|eot|>x<|eot|>"), (Ids{264, 261}));
}

TEST(PreTokenizer, WhitespaceIsOnigurumas) {
  // \s in HF's Oniguruma is White_Space: U+180E (a format character since Unicode 6.3) is not.
  EXPECT_EQ(onig_compatible_pattern(R"(\s+(?!\S)|[^\s\p{L}])"),
            R"([\t-\r\x{85}\p{Z}]+(?![^\t-\r\x{85}\p{Z}])|[^\t-\r\x{85}\p{Z}\p{L}])");
  EXPECT_EQ(onig_compatible_pattern(R"(\Q\s\E[\]\s]\\s)"), R"(\Q\s\E[\]\t-\r\x{85}\p{Z}]\\s)");
  RegexSplitter split(kLlama3Pattern, "test");
  std::vector<std::string_view> pieces;
  split.split("a\u180e b", pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"a", "\u180e", " b"}));
  pieces.clear();
  split.split("I'M 12345  x\r\n", pieces);
  EXPECT_EQ(pieces,
            (std::vector<std::string_view>{"I", "'M", " ", "123", "45", " ", " x", "\r\n"}));
  pieces.clear();
  split.split("x\xFF\xFEy z", pieces);  // ill-formed bytes: a piece of their own
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"x", "\xFF\xFE", "y", " z"}));
}

TEST(Utf8, Validation) {
  EXPECT_TRUE(is_valid_utf8("a\u00e9\u65e5\U0001F600"));
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_EQ(utf8_incomplete_tail("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xED\xA0"), 0u);  // can never finish
  EXPECT_EQ(utf8_lossy("a\xF0\x9F\x98z"), "a\xEF\xBF\xBDz");
}

// ---- the real tokenizers (scripts/fetch-tokenizer.sh) ----

std::filesystem::path source_root() {
  return std::filesystem::path(testing::test_data_dir()).parent_path();
}

// INFERLAB_TOKENIZERS_DIR/<name>/tokenizer.json, else the fetched third_party/tokenizers/<name>.
std::filesystem::path tokenizer_dir(const std::string& name) {
  if (const char* env = std::getenv("INFERLAB_TOKENIZERS_DIR")) {
    return std::filesystem::path(env) / name;
  }
  return source_root() / "third_party" / "tokenizers" / name;
}
std::filesystem::path llama3_dir() {
  return tokenizer_dir("llama3");
}

// Loaded once per name; nullptr when the file is absent.
const Tokenizer* real_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    std::unique_ptr<Tokenizer> t;
    if (std::filesystem::exists(tokenizer_dir(name) / "tokenizer.json")) {
      t = std::make_unique<Tokenizer>(Tokenizer::from_file(tokenizer_dir(name)));
    }
    it = loaded.emplace(name, std::move(t)).first;
  }
  return it->second.get();
}
const Tokenizer* llama3() {
  return real_tokenizer("llama3");
}

#define REQUIRE_TOKENIZER(name)                                                         \
  if (!real_tokenizer(name)) {                                                          \
    GTEST_SKIP() << "no " << name << " tokenizer at " << tokenizer_dir(name)            \
                 << " (run scripts/fetch-tokenizer.sh or set INFERLAB_TOKENIZERS_DIR)"; \
  }
#define REQUIRE_LLAMA3() REQUIRE_TOKENIZER("llama3")

TEST(TokenizerLlama3, KnownIds) {
  REQUIRE_LLAMA3();
  const Tokenizer& t = *llama3();
  EXPECT_EQ(t.encode("Hello, world"), (Ids{9906, 11, 1917}));
  EXPECT_EQ(t.encode("Hello, world", true), (Ids{128000, 9906, 11, 1917}));
  EXPECT_EQ(t.token_id("<|begin_of_text|>"), 128000);
  EXPECT_EQ(t.token_id("<|eot_id|>"), 128009);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_EQ(t.vocab_size(), 128256);
  EXPECT_EQ(t.encode("1234567"), (Ids{4513, 10961, 22}));
  EXPECT_EQ(t.encode("   x"), (Ids{256, 865}));
  EXPECT_EQ(t.encode("I'M here"), (Ids{40, 28703, 1618}));
  EXPECT_EQ(t.encode("你好，世界"), (Ids{57668, 53901, 3922, 102616}));
  EXPECT_EQ(
      t.encode("👨‍👩‍👧‍👦"),
      (Ids{9468, 239, 101, 102470, 9468, 239, 102, 102470, 9468, 239, 100, 102470, 9468, 239, 99}));
}

TEST(TokenizerLlama3, ChatFormat) {
  REQUIRE_LLAMA3();
  const Tokenizer& t = *llama3();
  std::vector<ChatMessage> chat{{"user", "  Hi \n"}};
  EXPECT_EQ(llama3_chat_prompt(t, chat),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(encode_llama3_chat(t, chat),
            (Ids{128000, 128006, 882, 128007, 271, 13347, 128009, 128006, 78191, 128007, 271}));
  // tokenizer_config.json's eos <|end_of_text|> and <|eot_id|> (no generation_config.json).
  EXPECT_EQ(stop_token_ids(t, llama3_dir()), (Ids{128001, 128009}));
  EXPECT_THROW(llama3_chat_prompt(t, {}), InputError);
  EXPECT_THROW(llama3_chat_prompt(tiny(), chat), InputError);
}

TEST(TokenizerLlama3, RoundTrips) {
  REQUIRE_LLAMA3();
  const Tokenizer& t = *llama3();
  for (std::string s :
       {"", " ", "Hello, world", "  leading and trailing  \n", "tabs\tand\r\nCRLF\r\n\r\n",
        "<|begin_of_text|>embedded<|eot_id|> specials <|eot_id", "naïve café Straße",
        "日本語のテキスト、中文。", "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈",
        "x\u180ey\u00a0z\u3000", "\x00\x01\x7f",
        "invalid \xff\xfe bytes \xed\xa0\x80 and cut \xe6\x97"}) {
    EXPECT_EQ(t.decode(t.encode(s)), s) << s;
  }
  std::mt19937 rng(11);
  std::string random(1 << 16, '\0');
  for (auto& c : random) c = static_cast<char>(rng());
  EXPECT_EQ(t.decode(t.encode(random)), random);
}

TEST(TokenizerLlama3, LongInputs) {
  REQUIRE_LLAMA3();
  const Tokenizer& t = *llama3();
  for (std::string unit : {"a", " ", "\n", "1", "😀", " a"}) {
    std::string text;
    while (text.size() < (1u << 20)) text += unit;
    std::clock_t start = std::clock();
    auto ids = t.encode(text);
    double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
    EXPECT_LT(seconds, 5.0 * testing::kTimeBoundScale) << "'" << unit << "' x " << text.size();
    EXPECT_EQ(t.decode(ids), text);
  }
}

// The committed corpus against ids from Hugging Face tokenizers (validation/tokenizer_reference.py
// on the GPU machine): 100% identical, and every line round-trips (to its NFC form where the
// tokenizer normalizes).
void check_corpus(const std::string& name) {
  const Tokenizer& t = *real_tokenizer(name);
  auto data = source_root() / "validation" / "data";
  auto ids_path = data / ("tokenizer_ids_" + name + ".json");
  if (!std::filesystem::exists(ids_path)) {
    GTEST_SKIP() << "no reference ids at " << ids_path
                 << " (produce them on the GPU machine with validation/tokenizer_reference.py)";
  }
  std::vector<std::string> texts;
  {
    std::ifstream in(data / "tokenizer_corpus.jsonl");
    std::string line;
    while (std::getline(in, line)) texts.push_back(json::parse(line).at("text").get<std::string>());
  }
  json reference;
  {
    std::ifstream in(ids_path);
    reference = json::parse(in);
  }
  const auto& expected = reference.at("ids");
  ASSERT_EQ(expected.size(), texts.size())
      << "the corpus changed since " << ids_path << " was made: regenerate it";
  ASSERT_GE(texts.size(), 5000u);
  const bool nfc = name == "qwen3";
  size_t mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    Ids ids = t.encode(texts[i]);
    if (ids != expected[i].get<Ids>() && ++mismatches <= 10) {
      ADD_FAILURE() << "line " << i + 1 << ": " << json(texts[i]).dump() << "\n ours "
                    << json(ids).dump() << "\n   HF " << expected[i].dump();
    }
    if (t.decode(ids) != (nfc ? normalize_nfc(texts[i]) : texts[i])) {
      ADD_FAILURE() << "line " << i + 1 << " does not round-trip";
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << texts.size() << " strings";
}

TEST(TokenizerLlama3, CorpusMatchesHuggingFace) {
  REQUIRE_LLAMA3();
  check_corpus("llama3");
}

TEST(TokenizerQwen3, CorpusMatchesHuggingFace) {
  REQUIRE_TOKENIZER("qwen3");
  check_corpus("qwen3");
}

TEST(TokenizerQwen3, KnownIdsAndNfc) {
  REQUIRE_TOKENIZER("qwen3");
  const Tokenizer& t = *real_tokenizer("qwen3");
  EXPECT_EQ(t.encode("Hello, world"), (Ids{9707, 11, 1879}));
  EXPECT_EQ(t.token_id("<|im_end|>"), 151645);
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_THROW(t.encode("x", true), InputError);
  // Digits one by one; "e" + U+0301 is normalized to "é" before splitting.
  EXPECT_EQ(t.encode("123"), (Ids{16, 17, 18}));
  EXPECT_EQ(t.encode("cafe\u0301"), t.encode("caf\u00e9"));
  EXPECT_EQ(t.decode(t.encode("<|im_start|>user\nhi<|im_end|>")), "<|im_start|>user\nhi<|im_end|>");
}

TEST(Normalizer, Nfc) {
  EXPECT_EQ(normalize_nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(normalize_nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(normalize_nfc("a\u0323\u0301"), normalize_nfc("a\u0301\u0323"));  // canonical order
  EXPECT_EQ(normalize_nfc("\u1100\u1161\u11a8"), "\uac01");                   // conjoining jamo
  EXPECT_EQ(normalize_nfc("\u212b"), "\u00c5");                               // singleton
  EXPECT_EQ(normalize_nfc("\u0958"), "\u0915\u093c");                         // exclusion
  EXPECT_EQ(normalize_nfc("\u0301a"), "\u0301a");                             // no starter
  EXPECT_EQ(normalize_nfc("e\xff\u0301"), "e\xff\u0301");  // ill-formed bytes are a boundary
  std::string marks;
  for (int i = 0; i < 200000; ++i) marks += i % 2 ? "\u0301" : "\u0323";
  std::clock_t start = std::clock();
  EXPECT_EQ(normalize_nfc("a" + marks).size(), marks.size() + 1);
  EXPECT_LT(double(std::clock() - start) / CLOCKS_PER_SEC, 5.0 * testing::kTimeBoundScale);
}

}  // namespace
}  // namespace inferlab::engine
