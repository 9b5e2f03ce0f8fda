// `inferlab.Engine`'s C++ side: the engine opened once through engine::open_backend (the one
// way to open it), then generations (engine::generate, as `inferlab generate` runs one) and
// teacher-forced logits (as `inferlab logits` computes them) on it. The GIL is released while the
// engine works; one call at a time runs on an engine.
#include "python/engine_binding.hpp"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/generate.hpp"
#include "engine/teacher_forced.hpp"
#include "engine/tokenizer/chat.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "report/engine_report.hpp"
#include "util/error.hpp"

namespace py = pybind11;

namespace inferlab::python {

namespace {

// The engine's options as flags (the package turns keyword arguments into them, as it does a
// command's): the CLI's engine switches (--weights, --kv, --activations, --gemv, --fusion,
// --attention, --group-size, --tp, parsed by cli::apply_engine_switches) and where to run.
struct EngineArgs {
  std::string device = "auto", tokenizer, cuda_graphs = "on";
  uint64_t seed = 0;
  int64_t kv_tokens = 0;  // 0: 4096 on the CPU, what the GPU's memory holds on a GPU
  int64_t max_batch_tokens = 4096;
  double gpu_memory_utilization = 0.90;
  cli::EngineSwitchArgs switches;
};

// Tokens the CPU's KV cache holds when kv_tokens is not given (the CPU needs a size; the CLI's
// engine commands size it to their request, which an engine opened once cannot know).
constexpr int64_t kDefaultCpuKvTokens = 4096;

void add_engine_args(CLI::App& app, EngineArgs& a) {
  app.add_option("--device", a.device, "auto (cuda where a GPU is present), cuda or cpu");
  app.add_option("--seed", a.seed, "Random weights of a shipped model or config.json");
  app.add_option("--kv-tokens", a.kv_tokens,
                 "KV cache size in tokens (default: 4096 on the CPU, the GPU's budget)");
  app.add_option("--max-batch-tokens", a.max_batch_tokens,
                 "Tokens per forward pass: a longer prompt prefills in chunks of this many");
  app.add_option("--gpu-memory-utilization", a.gpu_memory_utilization,
                 "Share of the GPU's memory the engine may take");
  app.add_option("--cuda-graphs", a.cuda_graphs, "on: decode steps replay a CUDA graph");
  app.add_option("--tokenizer", a.tokenizer, "tokenizer.json (default: the checkpoint's)");
  cli::add_engine_switches(&app, a.switches);
}

std::vector<std::tuple<std::string, bool, bool>> engine_flags() {
  CLI::App app;
  EngineArgs args;
  add_engine_args(app, args);
  std::vector<std::tuple<std::string, bool, bool>> flags;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty() || option->get_lnames().front() == "help") continue;
    std::string name = option->get_lnames().front();
    std::replace(name.begin(), name.end(), '-', '_');
    flags.emplace_back(name, option->get_expected_max() == 0, false);
  }
  return flags;
}

class Engine {
 public:
  Engine(std::string model, const std::vector<std::string>& flags) : model_(std::move(model)) {
    CLI::App app;
    add_engine_args(app, args_);
    std::vector<std::string> reversed(flags.rbegin(), flags.rend());  // CLI11's order
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      throw InputError(e.what());
    }
    if (args_.kv_tokens < 0) throw InputError("kv_tokens must be positive");
    if (args_.max_batch_tokens < 1 || args_.max_batch_tokens > (int64_t{1} << 20)) {
      throw InputError("max_batch_tokens must be in [1, 2^20]");
    }
    if (!(args_.gpu_memory_utilization > 0.0 && args_.gpu_memory_utilization <= 1.0)) {
      throw InputError("gpu_memory_utilization must be in (0, 1]");
    }
    options_.device = engine::resolve_device(args_.device);
    options_.seed = args_.seed;
    options_.kv_tokens = args_.kv_tokens;
    if (options_.device == "cpu" && options_.kv_tokens == 0) {
      options_.kv_tokens = kDefaultCpuKvTokens;
    }
    options_.max_batch_tokens = args_.max_batch_tokens;
    options_.max_sequences = 1;
    options_.gpu_memory_utilization = args_.gpu_memory_utilization;
    options_.cuda_graphs = cli::parse_on_off("--cuda-graphs", args_.cuda_graphs);
    cli::apply_engine_switches(args_.switches, options_);
    if (options_.tp_processes.launch) {  // it would start copies of Python, not of inferlab
      throw InputError(
          "--tp-launch processes starts copies of the inferlab executable; in Python use "
          "--tp-launch threads, or --tp-world N with ranks started by `inferlab tp-worker`");
    }
    backend_ = engine::open_backend(model_, options_);
  }

  const std::string& device() const { return options_.device; }
  int64_t vocab_size() const { return backend_->config().model.vocab_size; }
  int64_t context() const { return backend_->config().model.max_position_embeddings; }
  int64_t kv_tokens() const { return backend_->kv_layout().slots(); }

  // `inferlab generate --format json`'s object (text null where no tokenizer is found for a
  // prompt of token ids) and the new tokens.
  std::pair<std::string, std::vector<int32_t>> generate(const std::optional<std::string>& text,
                                                        std::vector<int32_t> prompt,
                                                        const engine::GenerateOptions& given) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const engine::Tokenizer* tok = tokenizer(/*required=*/text.has_value());
    if (text) prompt = tok->encode(*text, /*add_bos=*/tok->bos_id().has_value());
    engine::GenerateOptions options = given;
    options.prefill_chunk_tokens = options_.max_batch_tokens;
    if (tok != nullptr) {
      const std::vector<int32_t> stops =
          engine::stop_token_ids(*tok, engine::is_checkpoint_folder(model_) ? model_ : "");
      options.stop_token_ids.assign(stops.begin(), stops.end());
    }
    const engine::GenerateResult result = engine::generate(*backend_, prompt, options);
    const std::string decoded =
        tok == nullptr ? "" : engine::utf8_lossy(tok->decode(result.tokens, /*skip_special=*/true));
    nlohmann::json json =
        generate_json(decoded, static_cast<int64_t>(prompt.size()), result, options_.device);
    if (tok == nullptr) json["text"] = nullptr;
    return {json.dump(), result.tokens};
  }

  // What `inferlab logits` writes: a prefill of the first `prefill` tokens (0: all) with every
  // position's logits, then one decode step per remaining token; [tokens, vocab] row-major.
  std::vector<float> logits(const std::vector<int32_t>& ids, int64_t prefill) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto count = static_cast<int64_t>(ids.size());
    if (count == 0) throw InputError("logits needs at least one token");
    if (prefill < 0) throw InputError("prefill must be positive");
    if (prefill == 0) prefill = count;
    if (prefill > count) {
      throw InputError(fmt::format("prefill {} is more than the {} tokens given", prefill, count));
    }
    if (prefill > options_.max_batch_tokens) {
      throw InputError(fmt::format(
          "a prefill of {} tokens is more than the engine's max_batch_tokens of {}; give "
          "prefill= or open the Engine with a larger max_batch_tokens",
          prefill, options_.max_batch_tokens));
    }
    if (context() > 0 && count > context()) {
      throw InputError(
          fmt::format("{} tokens are longer than the model's context of {}", count, context()));
    }
    const engine::KvCacheLayout& layout = backend_->kv_layout();
    engine::BlockAllocator allocator(layout.num_blocks);
    engine::BlockTable block_table;
    if (!allocator.grow(block_table, count, layout.block_size)) {
      throw InputError(
          fmt::format("{} tokens need more than the engine's KV cache of {} tokens; "
                      "open the Engine with a larger kv_tokens",
                      count, layout.slots()));
    }
    return engine::teacher_forced_logits(*backend_, ids, prefill, std::move(block_table));
  }

 private:
  // The model's tokenizer, read on first use; null where none is found and none is `required`
  // (a prompt of token ids: no stop tokens and no text then).
  const engine::Tokenizer* tokenizer(bool required) {
    if (!tokenizer_ && (required || !tokenizer_missing_)) {
      std::filesystem::path path;
      try {
        path = engine::tokenizer_path(model_, args_.tokenizer);
      } catch (const InputError&) {
        tokenizer_missing_ = true;
        if (required) throw;
        return nullptr;
      }
      tokenizer_ = engine::Tokenizer::from_file(path);
    }
    return tokenizer_ ? &*tokenizer_ : nullptr;
  }

  std::string model_;
  EngineArgs args_;
  engine::EngineOptions options_;
  std::unique_ptr<engine::Backend> backend_;
  std::optional<engine::Tokenizer> tokenizer_;
  bool tokenizer_missing_ = false;
  std::mutex mutex_;
};

// Token ids from Python (ints), each in [0, 2^31).
std::vector<int32_t> token_ids(const std::vector<int64_t>& ids) {
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id > INT32_MAX) throw InputError(fmt::format("token id {} is out of range", id));
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

// The CLI's checks of generate's sampling flags, spelled as the keyword arguments.
engine::GenerateOptions generate_options(int64_t max_tokens, double temperature, uint64_t seed,
                                         double top_p, int64_t top_k) {
  if (max_tokens < 1 || max_tokens > 1'000'000) {
    throw InputError("max_tokens must be in [1, 1000000], got " + std::to_string(max_tokens));
  }
  if (!(temperature >= 0.0 && temperature <= 100.0)) {
    throw InputError("temperature must be in [0, 100]");
  }
  if (!(top_p > 0.0 && top_p <= 1.0)) throw InputError("top_p must be in (0, 1]");
  if (top_k < 0) throw InputError("top_k must be ≥ 0");
  engine::GenerateOptions options;
  options.max_new_tokens = max_tokens;
  options.sampling = {temperature, top_k, top_p};
  options.seed = seed;
  return options;
}

template <typename T>
py::array_t<T> to_numpy(std::vector<T> values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), free);
}

}  // namespace

void bind_engine(py::module_& m) {
  m.def("engine_flags", &engine_flags,
        "The Engine's options as (snake_case name, is a switch, takes several values).");
  py::class_<Engine>(m, "_Engine")
      .def(py::init([](const std::string& model, const std::vector<std::string>& flags) {
             py::gil_scoped_release release;
             return std::make_unique<Engine>(model, flags);
           }),
           py::arg("model"), py::arg("flags"))
      .def_property_readonly("device", &Engine::device)
      .def_property_readonly("vocab_size", &Engine::vocab_size)
      .def_property_readonly("context", &Engine::context)
      .def_property_readonly("kv_tokens", &Engine::kv_tokens)
      .def(
          "generate",
          [](Engine& self, const py::object& prompt, int64_t max_tokens, double temperature,
             uint64_t seed, double top_p, int64_t top_k) {
            std::optional<std::string> text;
            std::vector<int32_t> ids;
            if (py::isinstance<py::str>(prompt)) {
              text = prompt.cast<std::string>();
            } else {
              ids = token_ids(prompt.cast<std::vector<int64_t>>());
            }
            const engine::GenerateOptions options =
                generate_options(max_tokens, temperature, seed, top_p, top_k);
            std::pair<std::string, std::vector<int32_t>> result;
            {
              py::gil_scoped_release release;
              result = self.generate(text, std::move(ids), options);
            }
            const auto count = static_cast<py::ssize_t>(result.second.size());
            return py::make_tuple(result.first, to_numpy(std::move(result.second), {count}));
          },
          py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("seed"),
          py::arg("top_p"), py::arg("top_k"))
      .def(
          "logits",
          [](Engine& self, const std::vector<int64_t>& tokens, int64_t prefill) {
            const std::vector<int32_t> ids = token_ids(tokens);
            std::vector<float> logits;
            {
              py::gil_scoped_release release;
              logits = self.logits(ids, prefill);
            }
            const auto rows = static_cast<py::ssize_t>(ids.size());
            return to_numpy(std::move(logits), {rows, static_cast<py::ssize_t>(self.vocab_size())});
          },
          py::arg("tokens"), py::arg("prefill"));
}

}  // namespace inferlab::python
