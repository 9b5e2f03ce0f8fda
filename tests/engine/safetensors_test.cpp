#include "engine/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/checkpoint.hpp"
#include "engine/safetensors_writer.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;

std::vector<uint8_t> bytes_of(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// A file made by hand: the 8-byte length (`declared` when given), the header text, the data.
void write_raw(const std::filesystem::path& path, const std::string& header, size_t data_bytes,
               int64_t declared = -1) {
  std::ofstream out(path, std::ios::binary);
  uint64_t length = declared >= 0 ? static_cast<uint64_t>(declared) : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(length >> (8 * i)));
  out << header;
  for (size_t i = 0; i < data_bytes; ++i) out.put(static_cast<char>(i));
}

TEST(Safetensors, RoundTrip) {
  ScratchDir dir("st_roundtrip");
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f};
  std::vector<uint8_t> b = {1, 2, 3};
  std::vector<uint8_t> c(2 * 4 * 2);
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<uint8_t>(i * 7);
  write_safetensors(dir / "x.safetensors",
                    {{{"a", TensorDType::f32, {2, 3}}, bytes_of(a)},
                     {{"b", TensorDType::u8, {3}}, b},
                     {{"c", TensorDType::bf16, {2, 4}}, c},
                     {{"empty", TensorDType::i32, {0, 5}}, {}}},
                    {{"format", "pt"}});
  // The data section starts 8-byte aligned.
  std::ifstream in(dir / "x.safetensors", std::ios::binary);
  uint64_t header_bytes = 0;
  in.read(reinterpret_cast<char*>(&header_bytes), 8);
  EXPECT_EQ((8 + header_bytes) % 8, 0u);

  SafetensorsFile file(dir / "x.safetensors");
  ASSERT_EQ(file.tensors().size(), 4u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const TensorInfo* info = file.find("a");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, TensorDType::f32);
  EXPECT_EQ(info->shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> read(6);
  std::memcpy(read.data(), file.view(*info).data, 24);
  EXPECT_EQ(read, a);
  const TensorInfo* c_info = file.find("c");
  ASSERT_NE(c_info, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(file.view(*c_info).data, file.view(*c_info).data + 16), c);
  EXPECT_EQ(file.find("b")->byte_size(), 3u);
  EXPECT_EQ(file.find("empty")->elements(), 0);
  EXPECT_EQ(file.find("missing"), nullptr);
}

TEST(Safetensors, TruncatedFile) {
  ScratchDir dir("st_defects");
  std::ofstream(dir / "t.safetensors") << "abc";
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"t.safetensors", "shorter than the 8-byte header length"});
  std::ofstream(dir / "empty.safetensors");
  expect_input_error([&] { SafetensorsFile(dir / "empty.safetensors"); }, {"truncated"});
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors", "{}", 0, 1000);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"t.safetensors", "header length 1000 runs past the end of the file"});
}

TEST(Safetensors, HugeHeaderLength) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors", "{}", 0, int64_t{1} << 40);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); }, {"above the limit"});
}

TEST(Safetensors, HeaderNotJsonObject) {
  ScratchDir dir("st_defects");
  write_raw(dir / "bad.safetensors", "{\"a\": [1, 2", 0);
  expect_input_error([&] { SafetensorsFile(dir / "bad.safetensors"); }, {"not valid JSON"});
  write_raw(dir / "array.safetensors", "[1, 2]", 0);
  expect_input_error([&] { SafetensorsFile(dir / "array.safetensors"); }, {"not a JSON object"});
  write_raw(dir / "entry.safetensors", R"({"w": 3})", 0);
  expect_input_error([&] { SafetensorsFile(dir / "entry.safetensors"); },
                     {"tensor 'w'", "expected a JSON object"});
  write_raw(dir / "meta.safetensors", R"({"__metadata__": {"format": 1}})", 0);
  expect_input_error([&] { SafetensorsFile(dir / "meta.safetensors"); }, {"__metadata__"});
  write_raw(dir / "keys.safetensors", R"({"w": {"dtype": "F32", "shape": [1]}})", 0);
  expect_input_error([&] { SafetensorsFile(dir / "keys.safetensors"); },
                     {"tensor 'w'", "data_offsets"});
}

TEST(Safetensors, MetadataOnlyIsFine) {
  ScratchDir dir("st_defects");
  write_raw(dir / "m.safetensors", R"({"__metadata__": {"format": "pt"}})", 0);
  SafetensorsFile file(dir / "m.safetensors");
  EXPECT_TRUE(file.tensors().empty());
}

TEST(Safetensors, UnknownDtype) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors",
            R"({"w": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}})", 2);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"tensor 'w'", "unknown dtype 'Q4_K'", "BF16"});
}

TEST(Safetensors, ShapeBytesMismatch) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors",
            R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"tensor 'w'", "needs 24 bytes", "hold 20"});
}

TEST(Safetensors, BadShapeEntries) {
  ScratchDir dir("st_defects");
  write_raw(dir / "neg.safetensors",
            R"({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}})", 16);
  expect_input_error([&] { SafetensorsFile(dir / "neg.safetensors"); },
                     {"tensor 'w'", "not a non-negative integer"});
  write_raw(dir / "float.safetensors",
            R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4);
  expect_input_error([&] { SafetensorsFile(dir / "float.safetensors"); },
                     {"not a non-negative integer"});
  write_raw(
      dir / "overflow.safetensors",
      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 4]}})",
      4);
  expect_input_error([&] { SafetensorsFile(dir / "overflow.safetensors"); },
                     {"tensor 'w'", "overflows"});
}

// The tensor count and rank bounds (kMaxSafetensorsTensors, kMaxTensorRank): refused before any
// per-tensor work.
TEST(Safetensors, TensorCountAndRankOverTheLimits) {
  const auto parse = [](const std::string& header) {
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(uint64_t{header.size()} >> (8 * i));
    file += header;
    return parse_safetensors_header(reinterpret_cast<const uint8_t*>(file.data()), file.size(),
                                    "t.safetensors");
  };
  std::string many = "{";
  for (size_t i = 0; i < kMaxSafetensorsTensors + 2; ++i) many += '"' + std::to_string(i) + "\":0,";
  many.back() = '}';
  expect_input_error([&] { parse(many); }, {"entries, above the limit of 1000000"});
  expect_input_error(
      [&] {
        parse(R"({"w": {"dtype": "U8", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 1]}})");
      },
      {"tensor 'w'", "rank 9 above the limit 8"});
}

TEST(Safetensors, OverlappingRanges) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors",
            R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
            16);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"tensors 'a' and 'b' overlap"});
}

TEST(Safetensors, RangeOutsideFile) {
  ScratchDir dir("st_defects");
  write_raw(dir / "t.safetensors",
            R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 12);
  expect_input_error([&] { SafetensorsFile(dir / "t.safetensors"); },
                     {"tensor 'w'", "run past the data section"});
  write_raw(dir / "r.safetensors",
            R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 12);
  expect_input_error([&] { SafetensorsFile(dir / "r.safetensors"); }, {"end before they begin"});
}

TEST(Safetensors, MissingFile) {
  ScratchDir dir("st_defects");
  expect_input_error([&] { SafetensorsFile(dir / "nope.safetensors"); },
                     {"cannot open", "nope.safetensors"});
}

TEST(Checkpoint, NoWeightsInFolder) {
  ScratchDir dir("ckpt");
  expect_input_error([&] { Checkpoint::open(dir.path()); },
                     {"neither model.safetensors nor model.safetensors.index.json"});
}

TEST(Checkpoint, ShardedIndex) {
  ScratchDir dir("ckpt");
  write_safetensors(dir / "part-1.safetensors",
                    {{{"a", TensorDType::f32, {2}}, bytes_of({1.0f, 2.0f})}});
  write_safetensors(dir / "part-2.safetensors", {{{"b", TensorDType::f32, {1}}, bytes_of({3.0f})},
                                                 {{"c", TensorDType::f32, {1}}, bytes_of({4.0f})}});
  auto write_index = [&](const nlohmann::json& weight_map) {
    std::ofstream(dir / "model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", 16}}}, {"weight_map", weight_map}}.dump();
  };
  write_index(
      {{"a", "part-1.safetensors"}, {"b", "part-2.safetensors"}, {"c", "part-2.safetensors"}});
  auto checkpoint = Checkpoint::open(dir.path());
  EXPECT_EQ(checkpoint.shard_count(), 2u);
  ASSERT_EQ(checkpoint.tensors().size(), 3u);
  float c = 0;
  std::memcpy(&c, checkpoint.find("c")->data, 4);
  EXPECT_EQ(c, 4.0f);

  write_index(
      {{"a", "part-1.safetensors"}, {"b", "part-1.safetensors"}, {"c", "part-2.safetensors"}});
  expect_input_error([&] { Checkpoint::open(dir.path()); },
                     {"tensor 'b' is not in its shard", "part-1.safetensors"});
  write_index({{"a", "part-1.safetensors"}, {"b", "part-2.safetensors"}});
  expect_input_error([&] { Checkpoint::open(dir.path()); }, {"'c' is not listed"});
  write_index({{"a", "../part-1.safetensors"}});
  expect_input_error([&] { Checkpoint::open(dir.path()); }, {"tensor 'a'", "file name"});
  write_index({{"a", "part-3.safetensors"}});
  expect_input_error([&] { Checkpoint::open(dir.path()); }, {"cannot open", "part-3.safetensors"});
  std::ofstream(dir / "model.safetensors.index.json") << "{\"weight_map\": 3}";
  expect_input_error([&] { Checkpoint::open(dir.path()); }, {"weight_map"});
}

}  // namespace
}  // namespace inferlab::engine
