#include "engine/tp/process_open.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/checkpoint.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/llama_weights.hpp"
#include "engine/tensor_source.hpp"
#include "engine/tp/launch.hpp"
#include "engine/tp/shard.hpp"
#include "engine/tp/tcp_collectives.hpp"
#include "engine/tp/tp_cpu_backend.hpp"
#include "engine/tp/wire.hpp"
#include "util/error.hpp"
#include "util/rng.hpp"

namespace inferlab::engine::tp {

namespace {

// A worker's first reply: it has the model rank 0 named, and its config is rank 0's.
constexpr uint32_t kCmdAccepted = kFirstUserTag + 50;

std::string config_hash(const LlamaConfig& config) {
  return fmt::format("{:016x}", fnv1a64(config.hf_config.dump()));
}

GroupOptions group_options(int rank, int world, double timeout_s) {
  GroupOptions g;
  g.rank = rank;
  g.world = world;
  g.fingerprint = worker_fingerprint();
  g.join_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  return g;
}

nlohmann::json open_request(const std::string& model, const EngineOptions& o,
                            const LlamaConfig& config, const QuantConfig& q) {
  const EngineTuning& t = o.tuning;
  return {
      {"model", model},
      {"model_name", config.model.name},
      {"config_hash", config_hash(config)},
      {"device", o.device},
      {"seed", o.seed},
      {"kv_tokens", o.kv_tokens},
      {"kv_pool_tokens", o.kv_pool_tokens},
      {"max_batch_tokens", o.max_batch_tokens},
      {"max_sequences", o.max_sequences},
      {"block_size", o.block_size},
      {"cuda_graphs", o.cuda_graphs},
      {"gemv", o.gemv},
      {"fusion", o.fusion},
      {"naive_attention", o.naive_attention},
      {"warm_gemm_rows", o.warm_gemm_rows},
      {"gpu_memory_utilization", o.gpu_memory_utilization},
      {"tp", o.tp},
      {"reserved_bytes", o.reserved_bytes},
      {"reserved_bytes_per_kv_block", o.reserved_bytes_per_kv_block},
      {"quant",
       {{"weights", static_cast<int>(q.weights)},
        {"kv", static_cast<int>(q.kv)},
        {"activations", static_cast<int>(q.activations)},
        {"group_size", q.group_size},
        {"quantize_lm_head", q.quantize_lm_head},
        {"smoothquant_alpha", q.smoothquant_alpha},
        {"calibration_tokens", q.calibration_tokens}}},
      {"tuning",
       {{"gemv", t.projection.gemv},
        {"gemv_rows_all", t.projection.gemv_rows_all},
        {"gemv_rows", t.projection.gemv_rows},
        {"gemv_stream", t.projection.gemv_stream},
        {"gemv_splits", t.projection.gemv_splits},
        {"gemv_prologue", static_cast<int>(t.projection.gemv_prologue)},
        {"lt_tune", t.projection.lt_tune},
        {"hopper_prefill", t.attention.hopper_prefill},
        {"programmatic_launch", t.attention.programmatic_launch},
        {"decode_kernel", static_cast<int>(t.attention.decode_kernel)},
        {"decode_splits", t.attention.decode_splits},
        {"cache_before_wait", t.attention.cache_before_wait},
        {"one_shot_max_bytes", t.one_shot_max_bytes},
        {"two_shot_max_bytes", t.two_shot_max_bytes},
        {"host_sampling", t.host_sampling},
        {"gemv_pdl", static_cast<int>(t.projection.gemv_pdl)},
        {"moe_gemm", static_cast<int>(t.moe_gemm)},
        {"rope_in_qkv", t.rope_in_qkv}}},
  };
}

DType dtype_of(const nlohmann::json& j) {
  const int value = j.get<int>();
  if (value < 0 || value > static_cast<int>(DType::fp4)) {
    throw std::runtime_error("tensor-parallel group: rank 0 sent an unknown number format");
  }
  return static_cast<DType>(value);
}

// The engine's options as rank 0 sent them, in `options` and `quant` (resolved: the worker takes
// the formats as they are).
void read_open_request(const nlohmann::json& j, EngineOptions& o, QuantConfig& q) {
  o.device = j.at("device").get<std::string>();
  o.seed = j.at("seed").get<uint64_t>();
  o.kv_tokens = j.at("kv_tokens").get<int64_t>();
  o.kv_pool_tokens = j.at("kv_pool_tokens").get<int64_t>();
  o.max_batch_tokens = j.at("max_batch_tokens").get<int64_t>();
  o.max_sequences = j.at("max_sequences").get<int64_t>();
  o.block_size = j.at("block_size").get<int64_t>();
  o.cuda_graphs = j.at("cuda_graphs").get<bool>();
  o.gemv = j.at("gemv").get<bool>();
  o.fusion = j.at("fusion").get<bool>();
  o.naive_attention = j.at("naive_attention").get<bool>();
  o.warm_gemm_rows = j.at("warm_gemm_rows").get<int64_t>();
  o.gpu_memory_utilization = j.at("gpu_memory_utilization").get<double>();
  o.tp = j.at("tp").get<int64_t>();
  o.reserved_bytes = j.at("reserved_bytes").get<int64_t>();
  o.reserved_bytes_per_kv_block = j.at("reserved_bytes_per_kv_block").get<int64_t>();
  o.weights_from_checkpoint = false;
  const auto& jq = j.at("quant");
  q.weights = dtype_of(jq.at("weights"));
  q.kv = dtype_of(jq.at("kv"));
  q.activations = dtype_of(jq.at("activations"));
  q.group_size = jq.at("group_size").get<int64_t>();
  q.quantize_lm_head = jq.at("quantize_lm_head").get<bool>();
  q.smoothquant_alpha = jq.at("smoothquant_alpha").get<double>();
  q.calibration_tokens = jq.at("calibration_tokens").get<int64_t>();
  o.quant = q;
  const auto& jt = j.at("tuning");
  EngineTuning& t = o.tuning;
  t.projection.gemv = jt.at("gemv").get<bool>();
  t.projection.gemv_rows_all = jt.at("gemv_rows_all").get<int64_t>();
  t.projection.gemv_rows = jt.at("gemv_rows").get<std::array<int64_t, 5>>();
  t.projection.gemv_stream = jt.at("gemv_stream").get<int>();
  t.projection.gemv_splits = jt.at("gemv_splits").get<int64_t>();
  t.projection.gemv_prologue = static_cast<GemvPrologueChoice>(jt.at("gemv_prologue").get<int>());
  t.projection.lt_tune = jt.at("lt_tune").get<bool>();
  t.attention.hopper_prefill = jt.at("hopper_prefill").get<bool>();
  t.attention.programmatic_launch = jt.at("programmatic_launch").get<bool>();
  t.attention.decode_kernel = static_cast<DecodeKernelChoice>(jt.at("decode_kernel").get<int>());
  t.attention.decode_splits = jt.at("decode_splits").get<int64_t>();
  t.attention.cache_before_wait = jt.at("cache_before_wait").get<bool>();
  t.one_shot_max_bytes = jt.at("one_shot_max_bytes").get<int64_t>();
  t.two_shot_max_bytes = jt.at("two_shot_max_bytes").get<int64_t>();
  t.host_sampling = jt.at("host_sampling").get<bool>();
  t.projection.gemv_pdl = static_cast<GemvPdlChoice>(jt.at("gemv_pdl").get<int>());
  t.moe_gemm = static_cast<MoeGemmChoice>(jt.at("moe_gemm").get<int>());
  t.rope_in_qkv = jt.at("rope_in_qkv").get<bool>();
}

// A lost rank as rank 0 reports it: with how a rank it started ended.
PeerLost with_exit_status(const PeerLost& e, LaunchedRanks* launched) {
  std::string what = e.what();
  if (launched != nullptr && e.rank() > 0) {
    const std::string status = launched->exit_status(e.rank(), 1000);
    if (!status.empty()) what += " (" + status + ")";
  }
  return {e.rank(), what};
}

}  // namespace

std::string worker_fingerprint() {
  return fmt::format("inferlab tensor-parallel workers, protocol 1, {}-bit", 8 * sizeof(void*));
}

LocalRank open_local_rank(const std::string& model, const EngineOptions& options,
                          const LlamaConfig& config, const QuantConfig& quant,
                          ProcessGroup& group) {
  LocalRank local;
  if (options.device == "cpu") {
    if (options.kv_tokens < 1 || options.block_size < 1) {
      throw std::invalid_argument("open_local_rank: kv_tokens and block_size must be positive");
    }
    // As make_tp_cpu_backend: the whole model quantized first, so every rank's weights are the
    // single device's slices.
    LlamaModel whole = load_engine_model(model, options.seed);
    quantize_for_cpu(whole, options.block_size, quant);
    const int64_t blocks = (options.kv_tokens + options.block_size - 1) / options.block_size;
    auto rank = make_cpu_rank(whole, group.rank(), options.tp, options.block_size, blocks, quant);
    local.collectives = std::make_unique<TcpCollectives>(group);
    rank->join_group(local.collectives.get(), group.rank());
    local.backend = std::move(rank);
    return local;
  }
  const CudaBackendOptions cuda = cuda_backend_options(options, quant);
  if (is_checkpoint_folder(model)) {
    const auto checkpoint = Checkpoint::open(model);
    check_llama_checkpoint(checkpoint, config);
    local.backend =
        make_tp_cuda_process_rank(config, checkpoint_tensor_source(checkpoint), cuda, group);
  } else {
    local.backend =
        make_tp_cuda_process_rank(config, random_tensor_source(config, options.seed), cuda, group);
  }
  return local;
}

std::unique_ptr<Backend> open_process_group(const std::string& model, const EngineOptions& options,
                                            const LlamaConfig& config, const QuantConfig& quant) {
  const TpProcessOptions& p = options.tp_processes;
  // Ranks started by hand serve one group and exit; a second engine would wait for nobody.
  static std::atomic<int> groups_by_hand{0};
  if (!p.launch && groups_by_hand.fetch_add(1) > 0) {
    throw InputError(
        "a tensor-parallel group of ranks started by hand serves one engine per run, and this "
        "run opens a second (--draft, bench's ablation); use --tp-launch processes on one host");
  }
  const int world = static_cast<int>(options.tp);
  Rendezvous rendezvous(p.launch ? Endpoint{"127.0.0.1", 0}
                                 : parse_endpoint(p.master, "--tp-master"));
  std::unique_ptr<LaunchedRanks> launched;
  if (p.launch) {
    launched = std::make_unique<LaunchedRanks>("", world, rendezvous.port(), p.timeout_s);
  }
  std::unique_ptr<ProcessGroup> group;
  try {
    group = rendezvous.accept(group_options(0, world, p.timeout_s), [&] {
      if (launched) launched->check_running();
    });
  } catch (const std::exception&) {
    if (launched) launched->kill_all();  // those still trying to join
    throw;
  }
  try {
    const std::string request = open_request(model, options, config, quant).dump();
    group->broadcast(kCmdOpen, std::as_bytes(std::span(request)));
    for (int r = 1; r < world; ++r) group->receive(r, kCmdAccepted);
    LocalRank local = open_local_rank(model, options, config, quant, *group);
    std::vector<int64_t> block_bytes(static_cast<size_t>(world));
    block_bytes[0] = local.backend->kv_block_host_bytes();
    for (int r = 1; r < world; ++r) {
      const Message ready = group->receive(r, kCmdReady);
      WireReader in(ready.payload, "ready message");
      block_bytes[static_cast<size_t>(r)] = in.i64();
      in.finish();
    }
    return std::make_unique<MultiProcessTpBackend>(config, std::move(launched), std::move(group),
                                                   std::move(local), std::move(block_bytes));
  } catch (const PeerLost& e) {
    const PeerLost reported = with_exit_status(e, launched.get());
    group->report_failure(std::string("rank 0 lost ") + reported.what(), false);
    throw reported;
  } catch (const InputError& e) {
    group->report_failure(e.what(), true);
    throw;
  } catch (const std::exception& e) {
    group->report_failure(e.what(), false);
    throw;
  }
}

void run_tp_worker(const WorkerOptions& w, bool* reported) {
  std::unique_ptr<ProcessGroup> group =
      join_rendezvous(w.master, group_options(w.rank, w.world, w.timeout_s));
  if (!w.launched) {
    std::fprintf(stderr, "inferlab tp-worker: rank %d of %d joined rank 0 at %s\n", w.rank, w.world,
                 w.master.text().c_str());
  }
  // Rank 0 gone while this rank waits inside a collective that cannot be interrupted (NCCL's
  // init): exit anyway, rather than outlive it.
  group->on_peer_end([](const PeerInfo&, const std::string& why, bool clean) {
    if (clean) return;
    std::thread([why] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::fprintf(stderr, "inferlab: error: %s\n", why.c_str());
      std::_Exit(1);
    }).detach();
  });
  try {
    const Message open = group->receive(0, kCmdOpen);
    const auto request = nlohmann::json::parse(
        std::string(reinterpret_cast<const char*>(open.payload.data()), open.payload.size()));
    EngineOptions options;
    QuantConfig quant;
    read_open_request(request, options, quant);
    const std::string model = w.model.empty() ? request.at("model").get<std::string>() : w.model;
    const LlamaConfig config = load_llama_config(model);
    const std::string hash = request.at("config_hash").get<std::string>();
    if (config_hash(config) != hash) {
      throw InputError(fmt::format(
          "the model '{}' ({}, config.json hash {}) is not rank 0's '{}' ({}, hash {}); give every "
          "rank the same model",
          model, config.model.name, config_hash(config), request.at("model").get<std::string>(),
          request.at("model_name").get<std::string>(), hash));
    }
    if (options.device == "cpu") {
      check_tensor_parallel(config.model, options.tp);
      check_cpu_memory(config, options.kv_tokens, options.tp);
    }
    group->send(0, kCmdAccepted, {});
    LocalRank local = open_local_rank(model, options, config, quant, *group);
    group->send(0, kCmdReady, WireWriter().i64(local.backend->kv_block_host_bytes()).take());
    serve_rank_commands(*group, *local.backend);
  } catch (const PeerLost&) {
    if (reported != nullptr) *reported = true;  // rank 0 went (or failed, and says why)
    throw;
  } catch (const InputError& e) {
    group->report_failure(e.what(), true);
    if (reported != nullptr) *reported = true;
    throw;
  } catch (const std::exception& e) {
    group->report_failure(e.what(), false);
    if (reported != nullptr) *reported = true;
    throw;
  }
}

}  // namespace inferlab::engine::tp
