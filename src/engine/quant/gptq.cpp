#include "engine/quant/gptq.hpp"

#include <fmt/format.h>

#include <cstring>

#include "engine/bf16.hpp"
#include "engine/checkpoint.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

std::string module_of(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() <= suffix.size() ||
      weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    throw std::invalid_argument("not a weight name: " + weight_name);
  }
  return weight_name.substr(0, weight_name.size() - suffix.size());
}

int64_t groups_of(int64_t in, const GptqConfig& gptq) {
  return gptq.group_size < 0 ? 1 : in / gptq.group_size;
}

struct ModuleShapes {
  std::vector<int64_t> qweight, qzeros, scales, g_idx;
};

ModuleShapes shapes_of(int64_t out, int64_t in, const GptqConfig& gptq) {
  const int64_t pack = 32 / gptq.bits, groups = groups_of(in, gptq);
  return {{in / pack, out}, {groups, out / pack}, {groups, out}, {in}};
}

const TensorView& require_tensor(const Checkpoint& checkpoint, const std::string& name) {
  const TensorView* view = checkpoint.find(name);
  if (view == nullptr) {
    throw InputError("GPTQ checkpoint '" + checkpoint.folder().string() + "' has no '" + name +
                     "'");
  }
  return *view;
}

int32_t word_at(const TensorView& view, int64_t index) {
  int32_t word;
  std::memcpy(&word, view.data + 4 * index, 4);
  return word;
}

}  // namespace

std::vector<std::string> gptq_tensor_names(const std::string& weight_name) {
  const std::string m = module_of(weight_name);
  return {m + ".qweight", m + ".qzeros", m + ".scales", m + ".g_idx"};
}

std::vector<std::string> check_gptq_module(const Checkpoint& checkpoint,
                                           const std::string& weight_name, int64_t out, int64_t in,
                                           const GptqConfig& gptq) {
  std::vector<std::string> problems;
  const int64_t pack = 32 / gptq.bits;
  if (in % pack != 0 || out % pack != 0 || (gptq.group_size > 0 && in % gptq.group_size != 0)) {
    problems.push_back(fmt::format("{}: [{}, {}] cannot be GPTQ-packed in {} bits, groups of {}",
                                   weight_name, out, in, gptq.bits, gptq.group_size));
    return problems;
  }
  const auto names = gptq_tensor_names(weight_name);
  const ModuleShapes shapes = shapes_of(out, in, gptq);
  const std::vector<std::vector<int64_t>> want = {shapes.qweight, shapes.qzeros, shapes.scales,
                                                  shapes.g_idx};
  const TensorDType types[] = {TensorDType::i32, TensorDType::i32, TensorDType::f16,
                               TensorDType::i32};
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorView* view = checkpoint.find(names[i]);
    if (view == nullptr) {
      problems.push_back(names[i] + " is missing");
    } else if (view->info->shape != want[i] || view->info->dtype != types[i]) {
      problems.push_back(fmt::format(
          "{} is {} {}, expected {} [{}]", names[i], tensor_dtype_name(view->info->dtype),
          fmt::join(view->info->shape, "x"), tensor_dtype_name(types[i]), fmt::join(want[i], "x")));
    }
  }
  return problems;
}

QuantizedMatrix read_gptq_module(const Checkpoint& checkpoint, const std::string& weight_name,
                                 int64_t out, int64_t in, const GptqConfig& gptq) {
  const auto problems = check_gptq_module(checkpoint, weight_name, out, in, gptq);
  if (!problems.empty()) throw InputError("GPTQ checkpoint: " + problems.front());
  const auto names = gptq_tensor_names(weight_name);
  const TensorView &qweight = require_tensor(checkpoint, names[0]),
                   &qzeros = require_tensor(checkpoint, names[1]),
                   &scales = require_tensor(checkpoint, names[2]),
                   &g_idx = require_tensor(checkpoint, names[3]);
  const int bits = gptq.bits, pack = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int64_t groups = groups_of(in, gptq), group_size = in / groups;
  for (int64_t k = 0; k < in; ++k) {
    if (word_at(g_idx, k) != k / group_size) {
      throw InputError(fmt::format(
          "GPTQ checkpoint: {} maps input {} to group {}, not {} (act-order is not supported)",
          names[3], k, word_at(g_idx, k), k / group_size));
    }
  }
  auto q_at = [&](int64_t k, int64_t o) {
    return (static_cast<uint32_t>(word_at(qweight, (k / pack) * out + o)) >> (bits * (k % pack))) &
           mask;
  };
  auto zero_at = [&](int64_t g, int64_t o) {
    const uint32_t stored = (static_cast<uint32_t>(word_at(qzeros, g * (out / pack) + o / pack)) >>
                             (bits * (o % pack))) &
                            mask;
    return static_cast<int>(stored) + (gptq.zeros_minus_one ? 1 : 0);
  };
  auto scale_at = [&](int64_t g, int64_t o) {
    uint16_t half;
    std::memcpy(&half, scales.data + 2 * (g * out + o), 2);
    return fp16_to_float(half);
  };
  QuantizedMatrix m;
  m.out = out;
  m.in = in;
  if (bits == 4) {
    m.format = DType::int4;
    m.group_size = group_size;
    m.data.assign(static_cast<size_t>(out * in / 2), 0);
    m.scales.resize(static_cast<size_t>(out * groups));
    m.zeros.resize(static_cast<size_t>(out * groups));
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t g = 0; g < groups; ++g) {
        m.scales[o * groups + g] = scale_at(g, o);
        // v1 stores zero − 1 in `bits` bits: a real zero of 0 reads back as 16, kept as is.
        m.zeros[o * groups + g] = static_cast<uint8_t>(zero_at(g, o));
      }
      for (int64_t k = 0; k < in; ++k) {
        m.data[(o * in + k) / 2] |= static_cast<uint8_t>(q_at(k, o) << (4 * (k % 2)));
      }
    }
    return m;
  }
  if (groups != 1) {
    throw InputError(
        fmt::format("GPTQ checkpoint: {} is 8-bit with groups of {}; the engine's "
                    "int8 is per output channel (group_size -1)",
                    weight_name, gptq.group_size));
  }
  m.format = DType::int8;
  m.data.resize(static_cast<size_t>(out * in));
  m.scales.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    if (zero_at(0, o) != 128) {
      throw InputError(
          fmt::format("GPTQ checkpoint: {} is 8-bit with zero {} in column {}; the "
                      "engine's int8 is symmetric (zero 128)",
                      weight_name, zero_at(0, o), o));
    }
    m.scales[o] = scale_at(0, o);
    for (int64_t k = 0; k < in; ++k) {
      m.data[o * in + k] = static_cast<uint8_t>(static_cast<int8_t>(q_at(k, o) - 128));
    }
  }
  return m;
}

std::vector<TensorData> gptq_module_tensors(const std::string& weight_name,
                                            const QuantizedMatrix& matrix) {
  if (matrix.format != DType::int4 && matrix.format != DType::int8) {
    throw std::invalid_argument("gptq_module_tensors: int4 or int8 matrices only");
  }
  const int bits = matrix.format == DType::int4 ? 4 : 8, pack = 32 / bits;
  const int64_t out = matrix.out, in = matrix.in, groups = matrix.groups();
  if (in % pack != 0 || out % pack != 0) {
    throw std::invalid_argument("gptq_module_tensors: sizes not multiples of the packing");
  }
  const int64_t group_size = in / groups;
  auto q_of = [&](int64_t k, int64_t o) -> uint32_t {
    if (bits == 4) return (matrix.data[(o * in + k) / 2] >> (4 * (k % 2))) & 0xfu;
    return static_cast<uint32_t>(static_cast<int8_t>(matrix.data[o * in + k]) + 128);
  };
  auto zero_of = [&](int64_t g, int64_t o) -> int {
    return bits == 4 ? matrix.zeros[o * groups + g] : 128;
  };
  const auto names = gptq_tensor_names(weight_name);
  std::vector<int32_t> qweight(static_cast<size_t>(in / pack * out), 0);
  for (int64_t k = 0; k < in; ++k) {
    for (int64_t o = 0; o < out; ++o) {
      qweight[(k / pack) * out + o] |= static_cast<int32_t>(q_of(k, o) << (bits * (k % pack)));
    }
  }
  std::vector<int32_t> qzeros(static_cast<size_t>(groups * (out / pack)), 0);
  std::vector<uint16_t> scales(static_cast<size_t>(groups * out));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t o = 0; o < out; ++o) {
      const auto stored = static_cast<uint32_t>(zero_of(g, o) - 1) & ((1u << bits) - 1);  // v1
      qzeros[g * (out / pack) + o / pack] |= static_cast<int32_t>(stored << (bits * (o % pack)));
      const int64_t at = bits == 4 ? o * groups + g : o;
      scales[g * out + o] = float_to_fp16(matrix.scales[at]);
    }
  }
  std::vector<int32_t> g_idx(static_cast<size_t>(in));
  for (int64_t k = 0; k < in; ++k) g_idx[k] = static_cast<int32_t>(k / group_size);
  auto bytes_of = [](const auto& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    return std::vector<uint8_t>(p, p + v.size() * sizeof(v[0]));
  };
  return {{{names[0], TensorDType::i32, {in / pack, out}}, bytes_of(qweight)},
          {{names[1], TensorDType::i32, {groups, out / pack}}, bytes_of(qzeros)},
          {{names[2], TensorDType::f16, {groups, out}}, bytes_of(scales)},
          {{names[3], TensorDType::i32, {in}}, bytes_of(g_idx)}};
}

nlohmann::json gptq_quantization_config(const QuantizedMatrix& any_module) {
  const bool int4 = any_module.format == DType::int4;
  return {{"quant_method", "gptq"},
          {"bits", int4 ? 4 : 8},
          {"group_size", int4 ? any_module.group_size : -1},
          {"sym", true},
          {"desc_act", false},
          {"checkpoint_format", "gptq"},
          {"true_sequential", true},
          {"damp_percent", 0.01},
          {"quantizer", "inferlab round-to-nearest"}};
}

}  // namespace inferlab::engine
