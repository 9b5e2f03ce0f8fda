// CudaServingStress: the serving stress harness (engine/serving_stress_support.hpp) on the CUDA
// backend: random workloads with every weight format (bf16, fp8, int8, int4, W8A8) and KV format
// (bf16, fp8, int8), CUDA graphs on and off, through serve's scheduler and the ServingExecutor,
// each request checked against itself alone on an eager backend of the same formats. Fixed seeds
// by default; validation/stress_gpu.sh draws fresh ones:
//   INFERLAB_STRESS_SEEDS=FIRST:COUNT  the seeds of CudaServingStress.RandomWorkloads
//   INFERLAB_STRESS_MODEL=NAME          a shipped model's shape (data/models) or a config.json,
//                                       random weights, instead of the small default
//   INFERLAB_STRESS_CONTEXT=N           caps that model's context (its KV and prompts) at N
//   INFERLAB_STRESS_BUDGET_S=S          starts no seed after S seconds
// Each case prints one line, "stress seed N: requests ... failures F", which the script adds up.
// Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "engine/serving_stress_support.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine::stress {
namespace {

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

// Every backend is built for the largest batch any case can form (the vllm policy's whole
// prompt up to the context; 256 sequences of 1 + 5 tokens) and one pool size, so that a backend
// serves every case of its formats and any draft's pool matches any target's.
constexpr int64_t kMaxBatchTokens = 8192;
constexpr int64_t kMaxSequences = 256;

// The pool of every backend: 2 GiB of bf16 KV (the six backends kept stay far inside an H100),
// at least eight whole contexts, at most 2^18 tokens.
int64_t pool_tokens(const LlamaConfig& config) {
  const ModelConfig& m = config.model;
  const int64_t bytes_per_token = m.num_layers * 2 * m.num_kv_heads * m.head_dim * 2;
  return std::clamp<int64_t>((int64_t{2} << 30) / bytes_per_token, 8 * m.max_position_embeddings,
                             int64_t{1} << 18);
}

// The default model: Llama-shaped, 8 layers of 1024 (16 query heads and 4 KV heads of 64), a
// vocabulary of 8192 (a multiple of 16: the quantized LM head's GEMMs) and a context of 4096, so
// that prompts up to the context and the alone runs of a hundred requests take seconds.
nlohmann::json small_json() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 1024},
          {"intermediate_size", 2816},
          {"num_hidden_layers", 8},
          {"num_attention_heads", 16},
          {"num_key_value_heads", 4},
          {"head_dim", 64},
          {"vocab_size", 8192},
          {"max_position_embeddings", 4096},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"tie_word_embeddings", false},
          {"torch_dtype", "bfloat16"}};
}

LlamaConfig with(const LlamaConfig& config, const char* field, int64_t value) {
  nlohmann::json json = config.hf_config;
  json[field] = value;
  return parse_llama_config(json, config.model.name, "stress model");
}

// The target of the run: INFERLAB_STRESS_MODEL's shape, else the small default; its context
// capped by INFERLAB_STRESS_CONTEXT (or at 8192 for a shipped shape).
LlamaConfig target_config() {
  const char* name = std::getenv("INFERLAB_STRESS_MODEL");
  if (name == nullptr || std::string(name).empty() || std::string(name) == "small") {
    return parse_llama_config(small_json(), "stress-small", "stress model");
  }
  LlamaConfig config = load_llama_config(name);
  const char* context = std::getenv("INFERLAB_STRESS_CONTEXT");
  const int64_t cap = context != nullptr ? std::stoll(context) : 8192;
  if (config.model.max_position_embeddings > cap) {
    config = with(config, "max_position_embeddings", cap);
  }
  return config;
}

class CudaBackendProvider : public BackendProvider {
 public:
  explicit CudaBackendProvider(LlamaConfig target)
      : target_(std::move(target)),
        first_layer_(with(target_, "num_hidden_layers", 1)),
        small_(with(first_layer_, "num_hidden_layers", 2)) {}

  Backend& get(const BackendSpec& spec) override {
    const Key key{static_cast<int>(spec.role), spec.quant.describe(), spec.block_size,
                  spec.cuda_graphs};
    auto found = cache_.find(key);
    if (found == cache_.end()) {
      CudaBackendOptions options;
      options.block_size = spec.block_size;
      options.max_kv_tokens = pool_tokens(target_);
      options.max_batch_tokens = std::max(kMaxBatchTokens, target_.model.max_position_embeddings);
      options.max_sequences = kMaxSequences;
      options.cuda_graphs = spec.cuda_graphs;
      options.quant = spec.quant;
      options.gpu_memory_utilization = 0.9;
      // The first-layer draft has the target's seed: its layer, embedding and head are the
      // target's. The small one is a two-layer model of the vocabulary with weights of its own.
      const LlamaConfig& config = spec.role == ModelRole::draft_first_layer ? first_layer_
                                  : spec.role == ModelRole::draft_small     ? small_
                                                                            : target_;
      const uint64_t seed = spec.role == ModelRole::draft_small ? 29 : 7;
      found =
          cache_
              .emplace(
                  key,
                  Held{make_cuda_backend(config, random_tensor_source(config, seed), options), 0})
              .first;
    }
    found->second.last_use = ++uses_;
    if (found->second.backend->kv_layout().num_blocks < spec.kv_blocks) {
      throw std::logic_error("the stress pool is smaller than a case asks for");
    }
    return *found->second.backend;
  }

  // Between cases: the six backends used last stay (a case needs at most three).
  void reset() override {
    while (cache_.size() > 6) {
      auto oldest = std::min_element(
          cache_.begin(), cache_.end(),
          [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
      cache_.erase(oldest);
    }
  }

  double tolerance(const QuantConfig& quant) const override {
    return gpu_batch_noise_tolerance(quant);
  }

  const LlamaConfig& target() const { return target_; }

 private:
  using Key = std::tuple<int, std::string, int64_t, bool>;
  struct Held {
    std::unique_ptr<Backend> backend;
    int64_t last_use = 0;
  };
  LlamaConfig target_, first_layer_, small_;
  std::map<Key, Held> cache_;
  int64_t uses_ = 0;
};

StressSpace gpu_space(const LlamaConfig& target) {
  StressSpace s;
  s.context = target.model.max_position_embeddings;
  s.vocab = target.model.vocab_size;
  QuantConfig q;
  for (DType w : {DType::bf16, DType::int8, DType::int4, DType::fp8}) {
    q.weights = w;
    s.weight_formats.push_back(q);
  }
  q.weights = DType::int8;
  q.activations = DType::int8;  // W8A8
  s.weight_formats.push_back(q);
  s.kv_formats = {DType::bf16, DType::int8, DType::fp8};
  s.block_sizes = {16, 32};
  s.cuda_graphs = true;
  s.max_requests = 96;
  s.token_budget = 24000;  // the alone runs decode one token at a time, eagerly
  s.max_kv_blocks = pool_tokens(target) / s.block_sizes.back();  // the largest blocks' pool
  return s;
}

// FIRST:COUNT from INFERLAB_STRESS_SEEDS, else the fixed `first`, `count`.
std::pair<uint64_t, uint64_t> seeds(uint64_t first, uint64_t count) {
  const char* text = std::getenv("INFERLAB_STRESS_SEEDS");
  if (text == nullptr) return {first, count};
  const std::string s = text;
  const size_t colon = s.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("INFERLAB_STRESS_SEEDS=FIRST:COUNT");
  return {std::stoull(s.substr(0, colon)), std::stoull(s.substr(colon + 1))};
}

// Runs and checks a case and prints its line: "stress LABEL: requests ... failures F".
StressReport run_case_logged(const StressCase& c, CudaBackendProvider& backends,
                             const std::string& label) {
  backends.reset();
  const StressReport report = check_case(c, backends);
  for (const std::string& failure : report.failures) {
    ADD_FAILURE() << c.describe() << "\n  " << failure;
  }
  std::cout << "stress " << label << ": " << report.summary() << "\n  " << c.describe()
            << std::endl;
  return report;
}

TEST(CudaServingStress, RandomWorkloads) {
  REQUIRE_GPU();
  CudaBackendProvider backends(target_config());
  const StressSpace space = gpu_space(backends.target());
  const auto [first, count] = seeds(1, 6);
  // INFERLAB_STRESS_BUDGET_S: no seed starts after this many seconds (the script's runs end
  // between cases, not in one).
  const char* budget_text = std::getenv("INFERLAB_STRESS_BUDGET_S");
  const double budget_s = budget_text != nullptr ? std::stod(budget_text) : 0.0;
  const auto start = std::chrono::steady_clock::now();
  StressReport total;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (budget_s > 0 && elapsed_s > budget_s) break;
    total.add(run_case_logged(draw_case(seed, space), backends, "seed " + std::to_string(seed)));
  }
  std::cout << "stress total: " << total.summary() << std::endl;
  EXPECT_GT(total.completed, 0);
}

// llama-3.2-1b's shape (random weights) at a context of 16384: a few requests with prompts up
// to the context, chunked prefill beside decodes, prefix caching, a pool that forces preemption.
TEST(CudaServingStress, ShippedShapeAtALongContext) {
  REQUIRE_GPU();
  if (std::getenv("INFERLAB_STRESS_MODEL") != nullptr) GTEST_SKIP() << "a model was chosen";
  const LlamaConfig model =
      with(load_llama_config("llama-3.2-1b"), "max_position_embeddings", 16384);
  CudaBackendProvider backends(model);
  StressCase c;
  c.seed = 0;  // no drawn seed
  c.context = 16384;
  c.online = true;
  c.config.policy = SchedulePolicy::chunked;
  c.config.max_num_seqs = 8;
  c.config.max_num_batched_tokens = 2048;
  c.config.block_size = 16;
  c.config.prefix_caching = true;
  c.config.max_model_len = 16384;
  c.config.kv_blocks = 1600;  // 25,600 tokens: the two longest cannot run side by side
  std::vector<int32_t> shared(3000);
  for (size_t i = 0; i < shared.size(); ++i) shared[i] = static_cast<int32_t>(i * 7919 % 128000);
  const std::vector<std::pair<int64_t, int64_t>> lengths = {
      {16000, 300}, {12000, 40}, {3000 + 500, 200}, {3000 + 4000, 64},
      {900, 700},   {1, 50},     {16384, 1}};  // the last: past max-model-len by one
  for (size_t i = 0; i < lengths.size(); ++i) {
    StressRequest q;
    q.request.arrival_s = 0.002 * static_cast<double>(i);
    q.request.prompt_tokens = lengths[i].first;
    q.request.output_tokens = lengths[i].second;
    for (int64_t p = 0; p < lengths[i].first; ++p) {
      q.prompt.push_back(
          p < 3000 && (i == 2 || i == 3)
              ? shared[static_cast<size_t>(p)]
              : static_cast<int32_t>((p * 104729 + static_cast<int64_t>(i) * 31) % 128000));
    }
    q.seed = 100 + i;
    if (i == 4) q.sampling = {0.8, 40, 0.95};
    c.requests.push_back(std::move(q));
  }
  const StressReport report = run_case_logged(c, backends, "case llama-3.2-1b@16384");
  EXPECT_EQ(report.rejected, 1);
  EXPECT_EQ(report.completed, 6);
  EXPECT_GT(report.prefix_hit_tokens, 0);
}

}  // namespace
}  // namespace inferlab::engine::stress

#endif  // INFERLAB_ENGINE_HAVE_CUDA
