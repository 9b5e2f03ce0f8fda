// The inferlab engine's kernel list under each switch, with byte counts worked by hand for a
// tiny config: hidden 128, two query heads and one KV head of 64, MLP 256, vocabulary 512, two
// layers.
#include "model/engine_blocks.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/engine_gemv_rows.hpp"
#include "model/moe_routing.hpp"
#include "model/step_graph.hpp"

namespace inferlab {
namespace {

ModelConfig tiny() {
  const nlohmann::json config = {{"model_type", "llama"},    {"hidden_size", 128},
                                 {"intermediate_size", 256}, {"num_hidden_layers", 2},
                                 {"num_attention_heads", 2}, {"num_key_value_heads", 1},
                                 {"vocab_size", 512},        {"max_position_embeddings", 4096}};
  return parse_model_config(config, "tiny", "test");
}

KernelPlan engine_plan(bool gemv, bool fusion, bool flash = true) {
  KernelPlan plan;
  plan.engine = true;
  plan.engine_gemv = gemv;
  plan.engine_fusion = fusion;
  plan.flash_attention = flash;
  return plan;
}

Precision precision(DType weights, DType kv = DType::bf16, DType activations = DType::bf16) {
  Precision p;
  p.weights = weights;
  p.kv = kv;
  p.activations = activations;
  if (activations == DType::int8 || weights == DType::fp8) {
    p.activations = weights == DType::fp8 ? DType::fp8 : DType::int8;
    p.gemm_compute = p.activations;
  }
  return p;
}

std::vector<Op> step(const StepShape& shape, const Precision& p, const KernelPlan& plan) {
  const ModelConfig m = tiny();
  std::vector<Op> ops;
  build_step_graph(m, shape, p, plan, shard_dims(m, 1), ops);
  return ops;
}

const StepShape kDecode1{Phase::decode, 1, 1, 100};
const StepShape kPrefill{Phase::prefill, 1, 64, 64};

// "name class/path" of every op, in launch order.
std::vector<std::string> listing(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) {
    out.push_back(std::string(op.name) + " " + op.tag.kernel_class + "/" + op.tag.path);
  }
  return out;
}

const Op& find(const std::vector<Op>& ops, const char* name) {
  for (const Op& op : ops) {
    if (std::strcmp(op.name, name) == 0) return op;
  }
  ADD_FAILURE() << "no op " << name;
  static const Op none;
  return none;
}

int64_t calls(const std::vector<Op>& ops, const std::string& kernel_class) {
  int64_t n = 0;
  for (const Op& op : ops) {
    if (kernel_class == op.tag.kernel_class) n += op.count * op.tag.marks;
  }
  return n;
}

TEST(EngineBlocks, WeightBytesPerFormat) {
  // A 64 x 128 projection. int4: half a byte per weight; per group of 128 inputs a 2-byte fp16
  // scale and the 1-byte zero point the engine stores beside it (QuantizedMatrix).
  EXPECT_DOUBLE_EQ(engine_weight_bytes(64, 128, DType::int4, 128), 64 * 128 / 2 + 64 * 1 * (2 + 1));
  EXPECT_DOUBLE_EQ(engine_weight_bytes(64, 256, DType::int4, 128), 64 * 256 / 2 + 64 * 2 * (2 + 1));
  // int8 and fp8: a byte per weight and a 4-byte (fp32) scale per output row.
  EXPECT_DOUBLE_EQ(engine_weight_bytes(64, 128, DType::int8, 128), 64 * 128 + 64 * 4);
  EXPECT_DOUBLE_EQ(engine_weight_bytes(64, 128, DType::fp8, 128), 64 * 128 + 64 * 4);
  EXPECT_DOUBLE_EQ(engine_weight_bytes(64, 128, DType::bf16, 128), 64 * 128 * 2);
  // KV: head_dim values, and one fp32 scale per (token, KV head) in the 8-bit formats.
  EXPECT_DOUBLE_EQ(engine_kv_vector_bytes(64, DType::bf16), 128);
  EXPECT_DOUBLE_EQ(engine_kv_vector_bytes(64, DType::int8), 64 + 4);
  EXPECT_DOUBLE_EQ(engine_kv_vector_bytes(64, DType::fp8), 64 + 4);
}

TEST(EngineBlocks, DecodeOnGemvUnfused) {
  const auto ops = step(kDecode1, precision(DType::bf16), engine_plan(true, false));
  const std::vector<std::string> want = {"embedding embedding/gather",
                                         "input_norm norm/rms",
                                         "qkv_proj gemm_qkv/gemv",
                                         "rope_kv_write rope_kv_write/rope",
                                         "attention attention/flash_decode",
                                         "o_proj gemm_o/gemv",
                                         "post_attn_add_norm norm/rms",
                                         "gate_up_proj gemm_gate_up/gemv",
                                         "silu_mul silu_mul/halves",
                                         "down_proj gemm_down/gemv",
                                         "mlp_add_next_norm norm/rms",
                                         "lm_rows_gather embedding/gather",
                                         "lm_head lm_head/gemv",
                                         "sampling sampling/sample"};
  EXPECT_EQ(listing(ops), want);
  // The calls the engine's profile counts: 2 layers x 2 norms + the first one; two gathers.
  EXPECT_EQ(calls(ops, "norm"), 5);
  EXPECT_EQ(calls(ops, "embedding"), 2);
  EXPECT_EQ(calls(ops, "gemm_qkv"), 2);
  // QKV GEMV: bf16 weights (2 + 2 x 1 heads of 64 = 256 rows of 128), x in, qkv out.
  const Op& qkv = find(ops, "qkv_proj");
  EXPECT_DOUBLE_EQ(qkv.weight_bytes, 256.0 * 128 * 2);
  EXPECT_DOUBLE_EQ(qkv.activation_bytes, 128.0 * 2 + 256.0 * 2);
  // The LM head writes fp32 logits; sampling reads them.
  EXPECT_DOUBLE_EQ(find(ops, "lm_head").activation_bytes, 128.0 * 2 + 512.0 * 4);
  EXPECT_DOUBLE_EQ(find(ops, "sampling").activation_bytes, 512.0 * 4 + 4);
}

TEST(EngineBlocks, FusionRemovesTheLayersNormsAndSiluMulOnTheGemvPath) {
  const auto ops = step(kDecode1, precision(DType::bf16), engine_plan(true, true));
  const std::vector<std::string> want = {
      "embedding embedding/gather",       "qkv_proj gemm_qkv/gemv_fused",
      "rope_kv_write rope_kv_write/rope", "attention attention/flash_decode",
      "o_proj gemm_o/gemv_fused",         "gate_up_proj gemm_gate_up/gemv_fused",
      "down_proj gemm_down/gemv_fused",   "final_norm norm/rms",
      "lm_rows_gather embedding/gather",  "lm_head lm_head/gemv",
      "sampling sampling/sample"};
  EXPECT_EQ(listing(ops), want);
  EXPECT_EQ(calls(ops, "norm"), 1);
  EXPECT_EQ(calls(ops, "silu_mul"), 0);
  // gate/up: norm prologue (the residual row in, the norm weight), SwiGLU epilogue (256 of
  // the 512 outputs written).
  const Op& gate_up = find(ops, "gate_up_proj");
  EXPECT_DOUBLE_EQ(gate_up.weight_bytes, 512.0 * 128 * 2 + 128 * 2);
  EXPECT_DOUBLE_EQ(gate_up.activation_bytes, 128.0 * 2 + 256.0 * 2);
  // down: the residual read and written in its epilogue.
  const Op& down = find(ops, "down_proj");
  EXPECT_DOUBLE_EQ(down.activation_bytes, 256.0 * 2 + 128.0 * 2 + 128.0 * 2);
}

// With the RoPE epilogue (model/engine_gemv_rows.hpp's engine_rope_in_qkv), a fused decode step
// on the streaming GEMV has no rope_kv_write: the QKV GEMV rotates its query and key pairs and
// writes the new key and value to the cache. An 8-bit cache, three rows (the tensor-core GEMV),
// a prefill, or the switch off keep the kernel.
TEST(EngineBlocks, RopeAndTheKvWriteRideTheStreamingQkvGemv) {
  KernelPlan plan = engine_plan(true, true);
  plan.engine_rope_in_qkv = true;
  const auto ops = step(kDecode1, precision(DType::bf16), plan);
  EXPECT_EQ(calls(ops, "rope_kv_write"), 0);
  const Op& qkv = find(ops, "qkv_proj");
  EXPECT_STREQ(qkv.tag.path, "gemv_fused_rope");  // a key of its own (falling back to gemv_fused)
  // Weights and the norm weight; x in, qkv out, positions and slots (8 bytes), and the new key
  // and value: one KV head of 64 bf16 each.
  EXPECT_DOUBLE_EQ(qkv.weight_bytes, 256.0 * 128 * 2 + 128 * 2);
  EXPECT_DOUBLE_EQ(qkv.activation_bytes, 128.0 * 2 + 256.0 * 2 + 8 + 2 * 128);
  // The product, the norm (4 a input), RoPE (6 an element of the query and key heads: 128 + 64).
  EXPECT_DOUBLE_EQ(qkv.flops, 2.0 * 256 * 128 + 4.0 * 128 + 6.0 * 192);

  EXPECT_EQ(calls(step(kDecode1, precision(DType::bf16, DType::fp8), plan), "rope_kv_write"), 2);
  EXPECT_EQ(calls(step({Phase::decode, 3, 1, 100}, precision(DType::int4), plan), "rope_kv_write"),
            2);
  EXPECT_EQ(calls(step(kPrefill, precision(DType::bf16), plan), "rope_kv_write"), 2);
  EXPECT_EQ(calls(step(kDecode1, precision(DType::bf16), engine_plan(true, true)), "rope_kv_write"),
            2);
  // Two rows still stream.
  EXPECT_EQ(calls(step({Phase::decode, 2, 1, 100}, precision(DType::int4), plan), "rope_kv_write"),
            0);
}

// The flash decode that reads earlier passes' cache rows before its grid wait (the streamed
// kernel: bf16 caches) has a key of its own, falling back to flash_decode's
// (cost/engine/engine_cost.cpp); the same bytes; 8-bit caches and prefill are untouched.
TEST(EngineBlocks, TheDecodeWithEarlyCacheReadsHasItsOwnPath) {
  KernelPlan plan = engine_plan(true, true);
  plan.engine_early_cache_reads = true;
  const auto ops = step(kDecode1, precision(DType::bf16), plan);
  const Op& early = find(ops, "attention");
  EXPECT_STREQ(early.tag.path, "flash_decode_early");
  EXPECT_TRUE(early.programmatic_launch);  // its reads overlap the previous kernel in a graph
  const auto after = step(kDecode1, precision(DType::bf16), engine_plan(true, true));
  EXPECT_STREQ(find(after, "attention").tag.path, "flash_decode");
  EXPECT_DOUBLE_EQ(early.bytes(), find(after, "attention").bytes());
  EXPECT_STREQ(find(step(kDecode1, precision(DType::bf16, DType::fp8), plan), "attention").tag.path,
               "flash_decode");
  EXPECT_STREQ(find(step(kPrefill, precision(DType::bf16), plan), "attention").tag.path,
               "flash_prefill");
}

// Of the projections the engine launches its int4 streaming GEMVs (one or two rows)
// programmatically, nothing else (model/engine_gemv_rows.hpp): the calibration prices what that
// overlap saves in a graph. (The flash decode with early cache reads is the other such launch:
// TheDecodeWithEarlyCacheReadsHasItsOwnPath; the plans here have it off.)
TEST(EngineBlocks, OfTheProjectionsOnlyTheInt4StreamingGemvsLaunchProgrammatically) {
  auto programmatic = [](const std::vector<Op>& ops) {
    std::vector<std::string> names;
    for (const Op& op : ops) {
      if (op.programmatic_launch) names.push_back(op.name);
    }
    return names;
  };
  const std::vector<std::string> projections = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj",
                                                "lm_head"};
  EXPECT_EQ(programmatic(step(kDecode1, precision(DType::int4), engine_plan(true, true))),
            projections);
  EXPECT_EQ(programmatic(step(kDecode1, precision(DType::int4), engine_plan(true, false))),
            projections);
  EXPECT_TRUE(
      programmatic(step(kDecode1, precision(DType::bf16), engine_plan(true, true))).empty());
  EXPECT_TRUE(programmatic(step(kDecode1, precision(DType::fp8), engine_plan(true, true))).empty());
  // Three rows take the tensor-core GEMV: not so. A prefill's projections run on cuBLASLt, its
  // LM head on the last row only: the streaming GEMV again.
  const StepShape decode3{Phase::decode, 3, 1, 100};
  EXPECT_TRUE(programmatic(step(decode3, precision(DType::int4), engine_plan(true, true))).empty());
  EXPECT_EQ(programmatic(step(kPrefill, precision(DType::int4), engine_plan(true, true))),
            std::vector<std::string>{"lm_head"});
}

// The streaming GEMV stages its input rows in 112 KiB of shared memory (the rule
// engine_gemv_stream_staged_bytes shares with the engine): int4's 2.25 bytes an element fit two
// rows of 25472 (199 groups of 128) but not of 25600, so a down projection that wide at batch 2
// takes the tensor-core GEMV; bf16's 2 bytes fit two rows of 28672 (Llama 3 70B's) exactly.
TEST(EngineBlocks, TheStreamingGemvTakesWhatItsStagedInputFits) {
  auto down_path = [](int64_t intermediate, int64_t batch, DType weights) {
    const nlohmann::json config = {{"model_type", "llama"},
                                   {"hidden_size", 128},
                                   {"intermediate_size", intermediate},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"num_key_value_heads", 1},
                                   {"vocab_size", 512},
                                   {"max_position_embeddings", 4096}};
    const ModelConfig m = parse_model_config(config, "wide", "test");
    std::vector<Op> ops;
    build_step_graph(m, StepShape{Phase::decode, batch, 1, 100}, precision(weights),
                     engine_plan(true, true), shard_dims(m, 1), ops);
    return std::string(find(ops, "down_proj").tag.path);
  };
  EXPECT_EQ(engine_gemv_stream_staged_bytes(DType::int4, false, 2, 25472), 114624);
  EXPECT_EQ(engine_gemv_stream_staged_bytes(DType::int8, true, 1, 4104), 4112);
  EXPECT_EQ(down_path(25472, 2, DType::int4), "gemv_fused");
  EXPECT_EQ(down_path(25600, 2, DType::int4), "gemv_mma_fused");
  EXPECT_EQ(down_path(25600, 1, DType::int4), "gemv_fused");
  EXPECT_EQ(down_path(28672, 2, DType::bf16), "gemv_fused");
}

TEST(EngineBlocks, FusionLeavesPrefillAndCublasPathsAlone) {
  EXPECT_EQ(listing(step(kPrefill, precision(DType::bf16), engine_plan(true, true))),
            listing(step(kPrefill, precision(DType::bf16), engine_plan(true, false))));
  // 64 sequences at decode are past the GEMV rows (32): cuBLASLt, nothing fused.
  const StepShape decode64{Phase::decode, 64, 1, 100};
  const auto ops = step(decode64, precision(DType::bf16), engine_plan(true, true));
  EXPECT_EQ(std::string(find(ops, "qkv_proj").tag.path), "gemm");
  EXPECT_EQ(calls(ops, "norm"), 5);
}

TEST(EngineBlocks, GemvOffRunsDecodeOnCublas) {
  const auto ops = step(kDecode1, precision(DType::bf16), engine_plan(false, false));
  for (const char* name : {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head"}) {
    EXPECT_EQ(std::string(find(ops, name).tag.path), "gemm") << name;
  }
}

TEST(EngineBlocks, Int4DecodeGemvReadsPackedWeights) {
  const auto ops = step(kDecode1, precision(DType::int4), engine_plan(true, false));
  const Op& o = find(ops, "o_proj");  // 128 x 128
  EXPECT_STREQ(o.tag.format, "int4");
  EXPECT_DOUBLE_EQ(o.weight_bytes, 128.0 * 128 / 2 + 128 * 1 * 3);
  EXPECT_EQ(o.kernels, 1);
}

TEST(EngineBlocks, Int4PrefillDequantizesThenRunsABf16Gemm) {
  const auto ops = step(kPrefill, precision(DType::int4), engine_plan(true, false));
  const Op& dequant = find(ops, "weight_dequantize");
  EXPECT_STREQ(dequant.tag.kernel_class, "gemm_qkv");
  EXPECT_EQ(dequant.tag.marks, 0);  // inside the QKV call
  // QKV 256 x 128: the packed weights read, the bf16 copy written (one chunk: 32 MiB holds it).
  EXPECT_DOUBLE_EQ(dequant.weight_bytes, 256.0 * 128 / 2 + 256 * 3);
  EXPECT_DOUBLE_EQ(dequant.activation_bytes, 256.0 * 128 * 2);
  EXPECT_EQ(dequant.kernels, 1);
  const Op& qkv = find(ops, "qkv_proj");
  EXPECT_EQ(qkv.compute_dtype, DType::bf16);
  EXPECT_DOUBLE_EQ(qkv.weight_bytes, 256.0 * 128 * 2);
  EXPECT_DOUBLE_EQ(qkv.activation_bytes, 64.0 * 128 * 2 + 64.0 * 256 * 2);
  EXPECT_EQ(qkv.tag.marks, 1);
  EXPECT_EQ(calls(ops, "gemm_qkv"), 2);
  // Chunks: 64 MiB of bf16 scratch is 8192 rows of 4096 inputs; 64 rows at least, in 64s.
  EXPECT_EQ(engine_dequant_chunk_rows(4096), 8192);
  EXPECT_EQ(engine_dequant_chunk_rows(14336), 2304);
  EXPECT_EQ(engine_dequant_chunk_rows(1 << 20), 64);
}

TEST(EngineBlocks, Fp8PrefillQuantizesTheInputForAnFp8Gemm) {
  const auto ops = step(kPrefill, precision(DType::fp8), engine_plan(true, false));
  const Op& quant = find(ops, "input_quantize");
  // 64 rows of 128: bf16 in, fp8 out, an fp32 scale per row.
  EXPECT_DOUBLE_EQ(quant.activation_bytes, 64.0 * 128 * 3 + 64 * 4);
  const Op& qkv = find(ops, "qkv_proj");
  EXPECT_EQ(qkv.compute_dtype, DType::fp8);
  EXPECT_DOUBLE_EQ(qkv.weight_bytes, 256.0 * 128 + 256 * 4);
  EXPECT_DOUBLE_EQ(qkv.activation_bytes, 64.0 * 128 + 64 * 4 + 64.0 * 256 * 2);
}

TEST(EngineBlocks, W8a8PrefillIsQuantizeInt8GemmAndDequantize) {
  const auto ops =
      step(kPrefill, precision(DType::int8, DType::bf16, DType::int8), engine_plan(true, false));
  std::vector<std::string> qkv_call;
  for (const Op& op : ops) {
    if (std::string(op.tag.kernel_class) == "gemm_qkv") {
      qkv_call.push_back(std::string(op.name) + " " + std::to_string(op.tag.marks));
    }
  }
  EXPECT_EQ(qkv_call,
            (std::vector<std::string>{"input_quantize 0", "qkv_proj 0", "int32_dequantize 1"}));
  EXPECT_STREQ(find(ops, "qkv_proj").tag.format, "w8a8");
  EXPECT_EQ(find(ops, "qkv_proj").compute_dtype, DType::int8);
  // int32 products out, read back by the dequantization with the channel scales.
  EXPECT_DOUBLE_EQ(find(ops, "int32_dequantize").activation_bytes,
                   64.0 * 256 * 4 + 64 * 4 + 64.0 * 256 * 2);
}

TEST(EngineBlocks, QuantizedKvCarriesAScalePerTokenAndHead) {
  const auto ops = step(kDecode1, precision(DType::bf16, DType::int8), engine_plan(true, false));
  // One token: K and V of the one KV head, 64 int8 values and a 4-byte scale each.
  EXPECT_DOUBLE_EQ(find(ops, "rope_kv_write").kv_bytes, 2.0 * (64 + 4));
  EXPECT_STREQ(find(ops, "rope_kv_write").tag.format, "int8");
  // Attention reads the 100 cached tokens' K and V.
  EXPECT_DOUBLE_EQ(find(ops, "attention").kv_bytes, 2.0 * 100 * (64 + 4));
}

TEST(EngineBlocks, NaiveAttentionWritesAndReadsFp32ScoresTwice) {
  const auto ops = step(kPrefill, precision(DType::bf16), engine_plan(true, false, false));
  // 2 query heads x 64 rows x 64 keys of fp32 scores.
  const double scores = 2.0 * 64 * 64, q = 64.0 * 2 * 64 * 2;
  const Op& qk = find(ops, "attn_scores");
  const Op& sm = find(ops, "attn_softmax");
  const Op& pv = find(ops, "attn_context");
  EXPECT_DOUBLE_EQ(qk.activation_bytes, q + 4 * scores);  // Q in, scores out
  EXPECT_DOUBLE_EQ(sm.activation_bytes, 2 * 4 * scores);  // read and written
  EXPECT_DOUBLE_EQ(pv.activation_bytes, 4 * scores + q);  // scores in, O out
  EXPECT_DOUBLE_EQ(qk.kv_bytes + pv.kv_bytes, 2.0 * 64 * 128);
  EXPECT_EQ(calls(ops, "attention"), 2);  // one call per layer, three kernels
  for (const Op* op : {&qk, &sm, &pv}) EXPECT_STREQ(op->tag.path, "naive_prefill");
  // P·V's CTAs: 2 heads x 64 tokens / 16 per CTA; each sees 64 - 63/2 = 32.5 positions on
  // average and reads a 128-byte value row and 16 fp32 probabilities per position.
  EXPECT_EQ(pv.grid_ctas, 8);
  EXPECT_DOUBLE_EQ(pv.bytes_per_cta, 32.5 * (128 + 16 * 4));
  EXPECT_EQ(qk.grid_ctas, 0);  // plenty of CTAs: no per-CTA term
}

TEST(EngineBlocks, NaiveDecodeGivesOneCtaPerTokenAndHead) {
  const auto ops =
      step({Phase::decode, 3, 1, 100}, precision(DType::bf16), engine_plan(true, false, false));
  const Op& pv = find(ops, "attn_context");
  EXPECT_STREQ(pv.tag.path, "naive");
  EXPECT_EQ(pv.grid_ctas, 3 * 2);                         // 3 sequences x 2 query heads
  EXPECT_DOUBLE_EQ(pv.bytes_per_cta, 100.0 * (128 + 4));  // each walks all 100 positions
}

TEST(EngineBlocks, OtherFamiliesKeepTheFusedList) {
  const ModelConfig gpt3 = load_model("gpt3-175b");
  std::vector<Op> ops;
  build_step_graph(gpt3, kDecode1, Precision{}, engine_plan(true, false), shard_dims(gpt3, 1), ops);
  for (const Op& op : ops) EXPECT_STREQ(op.tag.kernel_class, "") << op.name;
  EXPECT_FALSE(engine_runs_model(gpt3, 1));
  EXPECT_TRUE(engine_runs_model(tiny(), 1));
  EXPECT_TRUE(engine_runs_model(tiny(), 2));
  // A mixture of experts runs on one GPU or split: every expert's channels over the ranks (half
  // of Mixtral's 14336 on each of 2), the router whole, one all-reduce after the experts.
  const ModelConfig mixtral = load_model("mixtral-8x7b");
  EXPECT_TRUE(engine_runs_model(mixtral, 1));
  EXPECT_TRUE(engine_runs_model(mixtral, 2));
  build_step_graph(mixtral, kDecode1, Precision{}, engine_plan(true, true), shard_dims(mixtral, 2),
                   ops);
  int all_reduces = 0;
  int gate_ups = 0;
  for (const Op& op : ops) {
    const std::string_view name = op.name;  // (a const char*: compare the characters)
    if (name == "experts_gate_up") {
      EXPECT_EQ(op.gemm.n, 14336);  // 2 x 7168 rows
      ++gate_ups;
    }
    if (name == "moe_route") {
      EXPECT_EQ(op.gemm.n, 8);  // every expert's logit
    }
    all_reduces += name == "mlp_all_reduce";
  }
  EXPECT_EQ(gate_ups, 1);
  EXPECT_EQ(all_reduces, 1);  // one op, counted once a layer
}

// Mixtral 8x7B (8 experts of 14336, top 2, hidden 4096, 32 layers): one token takes the expert
// slot kernels, which read the 2 experts it reaches (2 · 3 · 14336 · 4096 bf16 weights a layer);
// 32 tokens (64 slots) a cuBLASLt GEMM per expert reached, 8 · (1 − (6/8)^32) of them, after the
// slots' gather; the layers run unfused. Qwen3-30B-A3B (128 experts of 768, top 8) at 8 tokens
// takes the one-launch grouped GEMM, each expert uniform routing reaches (128 · (1 −
// (120/128)^8)) read once, with the router split over blocks and the sort: 3 routing kernels,
// then the gather.
TEST(EngineBlocks, MixtureOfExpertsStepsPriceTheExpertsTheStepReaches) {
  ModelConfig mixtral = load_model("mixtral-8x7b");
  mixtral.moe_sequence_reached.clear();  // uniform routing (measured: MoeRouting.*)
  EXPECT_EQ(engine_moe_form(1, 8, 2, 4096, 14336), MoeExpertForm::slots);
  // 4 slots > 8 / 4; few experts: a cuBLASLt GEMM each
  EXPECT_EQ(engine_moe_form(2, 8, 2, 4096, 14336), MoeExpertForm::gemm);
  EXPECT_EQ(engine_moe_form(4096, 8, 2, 4096, 14336), MoeExpertForm::gemm);
  // Qwen3-MoE: 32 of 128 experts
  EXPECT_EQ(engine_moe_form(4, 128, 8, 2048, 768), MoeExpertForm::slots);
  EXPECT_EQ(engine_moe_form(5, 128, 8, 2048, 768), MoeExpertForm::grouped_gemm);
  EXPECT_EQ(engine_moe_form(4095, 128, 8, 2048, 768), MoeExpertForm::grouped_gemm);
  EXPECT_EQ(engine_moe_form(4096, 128, 8, 2048, 768), MoeExpertForm::gemm);        // 256 an expert
  EXPECT_EQ(engine_moe_form(65, 128, 8, 2048, 384), MoeExpertForm::grouped_gemm);  // --tp 2
  EXPECT_EQ(engine_moe_form(65, 128, 8, 2048, 96), MoeExpertForm::grouped_gemm);   // --tp 8
  // Channels the one-launch GEMM cannot copy in 16-byte rows (the CUDA backend refuses them too):
  // the grouped kernels up to 4 slots an expert, then a GEMM an expert.
  EXPECT_EQ(engine_moe_form(64, 128, 8, 2048, 740), MoeExpertForm::grouped);
  EXPECT_EQ(engine_moe_form(65, 128, 8, 2048, 740), MoeExpertForm::gemm);
  EXPECT_EQ(engine_moe_form_without_grouped_gemm(64, 128, 8), MoeExpertForm::grouped);
  EXPECT_EQ(engine_moe_form_without_grouped_gemm(65, 128, 8), MoeExpertForm::gemm);
  EXPECT_FALSE(engine_moe_grouped_gemm_fits(2044, 768));
  EXPECT_TRUE(engine_moe_grouped_gemm_fits(2048, 352));
  const ModelConfig qwen3 = load_model("qwen3-30b-a3b");
  EXPECT_TRUE(engine_moe_capturable(64, qwen3, 768));  // no host read: graph-capturable
  EXPECT_TRUE(engine_moe_capturable(65, qwen3, 768));  // the one-launch GEMMs: none either
  EXPECT_FALSE(engine_moe_capturable(65, qwen3, 740));
  EXPECT_FALSE(engine_moe_capturable(4096, qwen3, 768));  // a GEMM an expert
  EXPECT_FALSE(engine_moe_capturable(2, mixtral, 14336));
  EXPECT_FALSE(engine_moe_route_split(1, 8));  // Mixtral: a block per token is 8 warps already
  EXPECT_TRUE(engine_moe_route_split(128, 128));
  EXPECT_FALSE(engine_moe_route_split(129, 128));
  const double expert = 3.0 * 14336 * 4096 * 2;  // bytes of one expert's gate, up and down
  auto op_named = [](const std::vector<Op>& ops, const std::string& name) {
    for (const Op& op : ops) {
      if (op.name == name) return op;
    }
    ADD_FAILURE() << "no op " << name;
    return Op{};
  };
  std::vector<Op> ops;
  build_step_graph(mixtral, kDecode1, Precision{}, engine_plan(true, true), shard_dims(mixtral, 1),
                   ops);
  std::vector<std::string> classes;
  for (const Op& op : ops) {
    if (op.scope == Scope::per_layer) classes.push_back(op.tag.kernel_class);
  }
  EXPECT_EQ(classes, (std::vector<std::string>{"gemm_qkv", "rope_kv_write", "attention", "gemm_o",
                                               "norm", "moe_route", "gemm_gate_up", "gemm_down",
                                               "moe_combine", "norm"}));
  const Op gate_up = op_named(ops, "experts_gate_up"), down = op_named(ops, "experts_down");
  EXPECT_STREQ(gate_up.tag.path, "moe_gemv");
  EXPECT_NEAR(gate_up.weight_bytes + down.weight_bytes, 2 * expert, 1.0);
  EXPECT_EQ(gate_up.count, 32);

  const StepShape decode32{Phase::decode, 32, 1, 1024};
  build_step_graph(mixtral, decode32, Precision{}, engine_plan(true, true), shard_dims(mixtral, 1),
                   ops);
  const double reached = 8.0 * (1.0 - std::pow(6.0 / 8.0, 32));
  const Op gemm = op_named(ops, "experts_gate_up");
  EXPECT_STREQ(gemm.tag.path, "moe_gemm");
  EXPECT_EQ(gemm.kernels, 8);
  EXPECT_EQ(gemm.gemm.m, 8);  // 64 slots over ~8 experts
  EXPECT_NEAR(gemm.weight_bytes + op_named(ops, "experts_down").weight_bytes, reached * expert,
              1e3);
  EXPECT_STREQ(op_named(ops, "moe_gather").tag.kernel_class, "moe_route");
  EXPECT_DOUBLE_EQ(op_named(ops, "silu_mul").activation_bytes, 3.0 * 64 * 14336 * 2);  // slots

  ModelConfig qwen = load_model("qwen3-30b-a3b");
  qwen.moe_sequence_reached.clear();  // uniform routing (measured: MoeRouting.*)
  const StepShape decode8{Phase::decode, 8, 1, 1024};
  build_step_graph(qwen, decode8, Precision{}, engine_plan(true, true), shard_dims(qwen, 1), ops);
  const Op grouped = op_named(ops, "experts_gate_up");
  EXPECT_STREQ(grouped.tag.path, "moe_gemm_grouped");
  EXPECT_EQ(grouped.kernels, 1);  // one launch over every expert, SiLU×mul inside
  EXPECT_NEAR(grouped.weight_bytes + op_named(ops, "experts_down").weight_bytes,
              128.0 * (1.0 - std::pow(120.0 / 128.0, 8)) * 3.0 * 768 * 2048 * 2, 1e3);
  EXPECT_DOUBLE_EQ(grouped.activation_bytes, 64.0 * (2048 + 768) * 2);  // in, act out
  EXPECT_EQ(op_named(ops, "moe_route").kernels, 3);  // router logits, top-k, sort
  EXPECT_STREQ(op_named(ops, "moe_route").tag.path, "route_split_gather");
  for (const Op& op : ops) EXPECT_NE(op.name, "silu_mul");
}

// Past 128 tokens the router is a cuBLASLt GEMM into fp32 logits, one call with the selection
// and the sort (one profile mark); the experts a prefill reaches follow the model's measured
// routing: one sequence of 512 tokens reaches what the curve says, two such sequences
// E (1 - (1 - R/E)^2); the serving simulator's flat pass of 64 one-token rows reaches what 64
// sequences reach (uniform routing's expectation), not what one sequence of 64 tokens does.
TEST(EngineBlocks, MixtureOfExpertsPrefillsRouteByGemmAndBySequence) {
  ModelConfig qwen = load_model("qwen3-30b-a3b");
  qwen.moe_sequence_reached = {{128, 32.0}, {2048, 48.0}};
  auto op_named = [](const std::vector<Op>& ops, const std::string& name) {
    for (const Op& op : ops) {
      if (op.name == name) return op;
    }
    ADD_FAILURE() << "no op " << name;
    return Op{};
  };
  const double expert = 3.0 * 768 * 2048 * 2;  // bytes of one expert's gate, up and down
  auto expert_bytes = [&](const std::vector<Op>& ops) {
    return op_named(ops, "experts_gate_up").weight_bytes +
           op_named(ops, "experts_down").weight_bytes;
  };
  std::vector<Op> ops;
  build_step_graph(qwen, {Phase::prefill, 1, 512, 512}, Precision{}, engine_plan(true, true),
                   shard_dims(qwen, 1), ops);
  const Op route = op_named(ops, "moe_route"), select = op_named(ops, "moe_select");
  EXPECT_STREQ(route.tag.path, "gemm_select_gather");  // one key for the class
  EXPECT_EQ(route.tag.marks, 0);
  EXPECT_EQ(route.gemm.m, 512);
  EXPECT_EQ(route.gemm.n, 128);
  EXPECT_STREQ(select.tag.kernel_class, "moe_route");
  EXPECT_EQ(select.kernels, 2);                         // selection and sort
  EXPECT_NEAR(expert_bytes(ops), 40.0 * expert, 1e-3);  // halfway in log: 40 experts

  build_step_graph(qwen, {Phase::prefill, 2, 512, 512}, Precision{}, engine_plan(true, true),
                   shard_dims(qwen, 1), ops);
  EXPECT_NEAR(expert_bytes(ops), 67.5 * expert, 1e-3);  // 128 (1 - (88/128)^2)

  StepShape flat{Phase::prefill, 1, 64, 64};
  build_step_graph(qwen, flat, Precision{}, engine_plan(true, true), shard_dims(qwen, 1), ops);
  const double one_sequence = expert_bytes(ops);
  const std::vector<int64_t> one_token_each(64, 1);
  flat.routed_experts = expected_active_experts(qwen, one_token_each);
  build_step_graph(qwen, flat, Precision{}, engine_plan(true, true), shard_dims(qwen, 1), ops);
  EXPECT_NEAR(expert_bytes(ops), 128.0 * (1.0 - std::pow(120.0 / 128.0, 64)) * expert, 1e-3);
  EXPECT_LT(one_sequence, expert_bytes(ops));
}

// Split over GPUs the engine's step has an all-reduce after each O and down projection (the
// one-shot kernel's up to 512 KB, NCCL's past it), none after the embedding (replicated), and
// the LM head's rows of one shard all-gathered then put back in vocabulary order.
TEST(EngineBlocks, TensorParallelStepsAllReduceTheRowParallelProjections) {
  const ModelConfig llama = load_model("llama-3-8b");
  std::vector<Op> ops;
  const ShardDims two = shard_dims(llama, 2);
  build_step_graph(llama, kDecode1, Precision{}, engine_plan(true, true), two, ops);
  std::vector<std::string> collectives;
  for (const Op& op : ops) {
    if (op.kind != OpKind::all_reduce && op.kind != OpKind::all_gather) continue;
    collectives.push_back(op.name);
    if (op.kind == OpKind::all_reduce) {
      EXPECT_EQ(op.count, llama.num_layers);
      EXPECT_DOUBLE_EQ(op.comm_bytes, 4096.0 * 2);  // one token × hidden 4096 × bf16
      EXPECT_STREQ(op.tag.kernel_class, "all_reduce");
      EXPECT_STREQ(op.tag.path, "one_shot");
    } else {
      EXPECT_DOUBLE_EQ(op.comm_bytes, 64128.0 * 4);  // 128256 / 2 fp32 logits
      EXPECT_STREQ(op.tag.path, "nccl");
    }
  }
  EXPECT_EQ(collectives,
            (std::vector<std::string>{"attn_all_reduce", "mlp_all_reduce", "logits_all_gather"}));
  const Op* lm_head = nullptr;
  for (const Op& op : ops) {
    if (std::string(op.name) == "lm_head") lm_head = &op;
  }
  ASSERT_NE(lm_head, nullptr);
  EXPECT_EQ(lm_head->gemm.n, 64128);
  // 256 tokens of 4096 bf16 are 2 MB: past the one-shot kernel's 512 KB.
  const StepShape decode256{Phase::decode, 256, 1, 1024};
  build_step_graph(llama, decode256, Precision{}, engine_plan(true, true), two, ops);
  for (const Op& op : ops) {
    if (op.kind == OpKind::all_reduce) {
      EXPECT_STREQ(op.tag.path, "nccl") << op.name;
    }
  }
}

}  // namespace
}  // namespace inferlab
