// GPTQ checkpoints: the packing by hand, a write/read round trip, `quantize_checkpoint` loaded
// back by the CPU reference, and every kind of bad GPTQ input refused with a message.
#include "engine/quant/gptq.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/checkpoint.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/quantize_checkpoint.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/tensor_source.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;

int32_t word(const TensorData& t, size_t i) {
  int32_t w;
  std::memcpy(&w, t.bytes.data() + 4 * i, 4);
  return w;
}

// An int4 matrix [8 out, 8 in] whose q[o][k] = (o + k) % 16, one group, zero 8, scale 0.5:
// qweight[0][o] = Σ_k q[o][k] << 4k (inputs packed along a column), qzeros[0][0] = Σ_o 7 << 4o
// (v1 stores zero − 1), scales fp16 0.5 = 0x3800, g_idx all 0.
TEST(Gptq, PackingByHand) {
  QuantizedMatrix m;
  m.format = DType::int4;
  m.out = 8;
  m.in = 8;
  m.group_size = 8;
  m.data.assign(32, 0);
  for (int o = 0; o < 8; ++o) {
    for (int k = 0; k < 8; ++k) {
      m.data[(o * 8 + k) / 2] |= static_cast<uint8_t>(((o + k) % 16) << (4 * (k % 2)));
    }
  }
  m.scales.assign(8, 0.5f);
  m.zeros.assign(8, 8);
  const auto tensors = gptq_module_tensors("x.weight", m);
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0].spec.name, "x.qweight");
  EXPECT_EQ(tensors[0].spec.shape, (std::vector<int64_t>{1, 8}));
  for (int o = 0; o < 8; ++o) {
    uint32_t want = 0;
    for (int k = 0; k < 8; ++k) want |= static_cast<uint32_t>((o + k) % 16) << (4 * k);
    EXPECT_EQ(static_cast<uint32_t>(word(tensors[0], o)), want) << o;
  }
  EXPECT_EQ(static_cast<uint32_t>(word(tensors[1], 0)), 0x77777777u);
  uint16_t half;
  std::memcpy(&half, tensors[2].bytes.data(), 2);
  EXPECT_EQ(half, 0x3800);
  EXPECT_EQ(word(tensors[3], 7), 0);
}

LlamaConfig tiny_config() {
  return parse_llama_config(testing::tiny_llama_config_json(), "tiny", "tiny config");
}

// A bf16 checkpoint quantized to GPTQ int4 (groups of 32) and int8: the CPU reference loading it
// computes exactly what the CPU reference of the bf16 checkpoint quantized in memory computes.
TEST(Gptq, QuantizedCheckpointLoadsAsTheSameModel) {
  ScratchDir dir("gptq");
  const LlamaConfig config = tiny_config();
  InitWeightsOptions init;
  init.out_dir = dir / "bf16";
  init.seed = 3;
  init_weights(config, init);
  for (DType format : {DType::int4, DType::int8}) {
    QuantizeCheckpointOptions options;
    options.out_dir = dir / "q";
    options.weights = format;
    options.group_size = 32;
    const auto checkpoint = Checkpoint::open(init.out_dir);
    const auto result = quantize_checkpoint(config, checkpoint_tensor_source(checkpoint), options);
    EXPECT_EQ(result.quantized_modules, 2 * 7);

    LlamaModel loaded = load_llama_model(options.out_dir);
    ASSERT_TRUE(loaded.config.gptq.has_value());
    EXPECT_EQ(loaded.config.gptq->bits, format == DType::int4 ? 4 : 8);
    QuantConfig quant;
    quant.weights = format;
    quant.group_size = 32;
    quant.quantize_lm_head = false;
    LlamaWeights expected = load_llama_model(init.out_dir).weights;
    apply_quantization(expected, config, quant, nullptr);
    EXPECT_EQ(loaded.weights.layers[1].down_proj, expected.layers[1].down_proj);
    EXPECT_EQ(loaded.weights.layers[0].q_proj, expected.layers[0].q_proj);
    EXPECT_EQ(loaded.weights.embed_tokens, expected.embed_tokens);

    // The GPU loader takes the modules as stored.
    const auto gptq = Checkpoint::open(options.out_dir);
    auto loader = checkpoint_weight_loader(gptq, loaded.config, quant, nullptr);
    const auto specs = llama_weight_specs(loaded.config);
    const auto q = loader(specs[2]);  // layer 0 q_proj
    ASSERT_TRUE(q.quantized.has_value());
    EXPECT_EQ(dequantize_matrix(*q.quantized), expected.layers[0].q_proj);
    QuantConfig other = quant;
    other.weights = format == DType::int4 ? DType::int8 : DType::int4;
    expect_input_error([&] { checkpoint_weight_loader(gptq, loaded.config, other, nullptr); },
                       {"GPTQ", "--weights"});
  }
}

nlohmann::json gptq_json(nlohmann::json quantization) {
  auto config = testing::tiny_llama_config_json();
  config["quantization_config"] = std::move(quantization);
  return config;
}

TEST(Gptq, RefusesWhatItCannotRead) {
  auto parse = [](const nlohmann::json& q) { parse_llama_config(gptq_json(q), "t", "cfg"); };
  expect_input_error([&] { parse({{"quant_method", "awq"}, {"bits", 4}}); }, {"awq", "GPTQ"});
  expect_input_error([&] { parse({{"quant_method", "gptq"}, {"bits", 3}}); }, {"3 bits"});
  expect_input_error([&] { parse({{"quant_method", "gptq"}, {"desc_act", true}}); }, {"act-order"});
  expect_input_error(
      [&] {
        parse({{"quant_method", "gptq"}, {"group_size", 48}});
      },
      {"group_size 48"});
  expect_input_error(
      [&] {
        parse({{"quant_method", "gptq"}, {"checkpoint_format", "marlin"}});
      },
      {"marlin"});
  expect_input_error([&] { parse({{"quant_method", "gptq"}, {"bits", "4"}}); }, {"not an integer"});

  // A checkpoint whose qweight has the wrong shape, and one with act-order g_idx.
  ScratchDir dir("gptq_bad");
  const LlamaConfig config = tiny_config();
  QuantizeCheckpointOptions options;
  options.out_dir = dir / "q";
  options.group_size = 32;
  quantize_checkpoint(config, random_tensor_source(config, 1), options);
  const auto good = Checkpoint::open(options.out_dir);
  LlamaConfig gptq_config = load_llama_config(options.out_dir.string());
  EXPECT_NO_THROW(check_llama_checkpoint(good, gptq_config));
  GptqConfig wrong_bits = *gptq_config.gptq;
  wrong_bits.bits = 8;  // the same tensors read as 8-bit: every shape is off
  gptq_config.gptq = wrong_bits;
  expect_input_error([&] { check_llama_checkpoint(good, gptq_config); }, {"qweight", "expected"});

  QuantizedMatrix m =
      quantize_matrix(std::vector<float>(64 * 64, 0.5f).data(), 64, 64, DType::int4, 32);
  auto tensors = gptq_module_tensors("w.weight", m);
  const int32_t second_group = 1;
  std::memcpy(tensors[3].bytes.data(), &second_group, 4);  // input 0 in group 1: act-order
  std::filesystem::create_directories(dir / "act");
  write_safetensors(dir / "act" / "model.safetensors", tensors);
  const auto act = Checkpoint::open(dir / "act");
  GptqConfig plain;
  plain.group_size = 32;
  expect_input_error([&] { read_gptq_module(act, "w.weight", 64, 64, plain); },
                     {"g_idx", "group 1", "act-order"});

  QuantizeCheckpointOptions fp8 = options;
  fp8.weights = DType::fp8;
  expect_input_error([&] { quantize_checkpoint(config, random_tensor_source(config, 1), fp8); },
                     {"int4 or int8"});
}

}  // namespace
}  // namespace inferlab::engine
