#pragma once
// `inferlab quantize`: a bf16 model written back as a GPTQ checkpoint (int4 groups or int8
// channels), its weights rounded to nearest or, given calibration Hessians, solved by GPTQ
// (gptq_solver.hpp); loadable by this engine and in GPTQ's v1 layout that Hugging Face's GPTQ
// integration reads.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine/llama_config.hpp"
#include "engine/quant/gptq_solver.hpp"
#include "engine/tensor_source.hpp"
#include "util/dtype.hpp"

namespace inferlab::engine {

struct QuantizeCheckpointOptions {
  std::filesystem::path out_dir;
  DType weights = DType::int4;  // int4 or int8
  int64_t group_size = 128;     // int4
  // Files copied beside the weights (tokenizer.json, tokenizer_config.json, ...).
  std::vector<std::filesystem::path> extra_files;
  // Every layer's input Hessians (cpu/gptq_calibration.hpp): the projections are solved by
  // GPTQ against them. Null: round to nearest.
  std::shared_ptr<const GptqHessians> hessians;
  double damp = 0.01;  // GPTQ's damping, a fraction of the Hessian's mean diagonal
};

struct QuantizeCheckpointResult {
  std::vector<std::filesystem::path> files;
  uint64_t weight_bytes = 0;  // the safetensors file's tensor data
  int64_t quantized_modules = 0;
  int64_t tensors = 0;
};

// Reads every tensor of `config` from `source` (a bf16 checkpoint or random weights), quantizes
// the seven projections of every layer (the LM head stays bf16, as GPTQ leaves it) and writes
// config.json (with quantization_config), model.safetensors and generation_config.json into
// out_dir. InputError for a format other than int4/int8, a group size that does not divide the
// widths, or an output folder that cannot be written; an earlier model*.safetensors* there is
// removed first.
QuantizeCheckpointResult quantize_checkpoint(const LlamaConfig& config, const TensorSource& source,
                                             const QuantizeCheckpointOptions& options);

}  // namespace inferlab::engine
