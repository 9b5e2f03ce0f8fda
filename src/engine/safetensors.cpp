#include "engine/safetensors.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace inferlab::engine {

namespace {

struct DTypeEntry {
  TensorDType dtype;
  std::string_view name;
  size_t bytes;
};
constexpr std::array<DTypeEntry, 6> kDTypes = {{{TensorDType::bf16, "BF16", 2},
                                                {TensorDType::f16, "F16", 2},
                                                {TensorDType::f32, "F32", 4},
                                                {TensorDType::i8, "I8", 1},
                                                {TensorDType::u8, "U8", 1},
                                                {TensorDType::i32, "I32", 4}}};

const DTypeEntry& entry_of(TensorDType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDTypes[0];
}

std::string tensor_context(const std::string& file, const std::string& name) {
  return "safetensors file '" + file + "', tensor '" + name + "'";
}

// A JSON integer in [0, 2^63).
bool as_offset(const nlohmann::json& value, uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
  } else if (value.is_number_integer()) {
    int64_t signed_value = value.get<int64_t>();
    if (signed_value < 0) return false;
    out = static_cast<uint64_t>(signed_value);
  } else {
    return false;
  }
  return out < (uint64_t{1} << 63);
}

TensorInfo parse_tensor(const std::string& name, const nlohmann::json& entry, uint64_t data_bytes,
                        const std::string& file) {
  const std::string context = tensor_context(file, name);
  if (!entry.is_object()) throw InputError(context + ": expected a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) throw InputError(context + ": no '" + key + "'");
  }
  TensorInfo info;
  info.name = name;
  if (!entry["dtype"].is_string()) throw InputError(context + ": 'dtype' is not a string");
  info.dtype = parse_tensor_dtype(entry["dtype"].get<std::string>(), context);

  const auto& shape = entry["shape"];
  if (!shape.is_array()) throw InputError(context + ": 'shape' is not an array");
  if (shape.size() > kMaxTensorRank) {
    throw InputError(context + ": rank " + std::to_string(shape.size()) + " above the limit " +
                     std::to_string(kMaxTensorRank));
  }
  uint64_t bytes = tensor_dtype_bytes(info.dtype);
  for (const auto& dim : shape) {
    uint64_t extent = 0;
    if (!as_offset(dim, extent)) {
      throw InputError(context + ": shape entry " + dim.dump() + " is not a non-negative integer");
    }
    if (__builtin_mul_overflow(bytes, extent, &bytes) || bytes >= (uint64_t{1} << 62)) {
      throw InputError(context + ": shape " + shape.dump() + " is too large (size overflows)");
    }
    info.shape.push_back(static_cast<int64_t>(extent));
  }

  const auto& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !as_offset(offsets[0], info.begin) ||
      !as_offset(offsets[1], info.end)) {
    throw InputError(context + ": 'data_offsets' must be two non-negative integers");
  }
  if (info.begin > info.end) {
    throw InputError(context + ": data_offsets " + offsets.dump() + " end before they begin");
  }
  if (info.end > data_bytes) {
    throw InputError(context + ": data_offsets " + offsets.dump() + " run past the data section (" +
                     std::to_string(data_bytes) + " bytes); the file is truncated or corrupt");
  }
  if (info.end - info.begin != bytes) {
    throw InputError(context + ": shape " + shape.dump() + " of " +
                     std::string(tensor_dtype_name(info.dtype)) + " needs " +
                     std::to_string(bytes) + " bytes but data_offsets " + offsets.dump() +
                     " hold " + std::to_string(info.end - info.begin));
  }
  return info;
}

uint64_t read_le64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

std::string_view tensor_dtype_name(TensorDType dtype) {
  return entry_of(dtype).name;
}

size_t tensor_dtype_bytes(TensorDType dtype) {
  return entry_of(dtype).bytes;
}

TensorDType parse_tensor_dtype(std::string_view name, const std::string& context) {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  std::vector<std::string> known;
  for (const auto& entry : kDTypes) known.emplace_back(entry.name);
  throw InputError(context + ": unknown dtype '" + std::string(name) +
                   "' (known: " + join_names(known) + ")");
}

int64_t TensorInfo::elements() const {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* file_data, size_t file_bytes,
                                           const std::string& file) {
  const std::string context = "safetensors file '" + file + "'";
  if (file_bytes < 8) {
    throw InputError(context + ": " + std::to_string(file_bytes) +
                     " bytes, shorter than the 8-byte header length; the file is truncated");
  }
  uint64_t header_bytes = read_le64(file_data);
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    throw InputError(context + ": header length " + std::to_string(header_bytes) +
                     " bytes is above the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                     "; not a safetensors file?");
  }
  if (header_bytes > file_bytes - 8) {
    throw InputError(context + ": header length " + std::to_string(header_bytes) +
                     " runs past the end of the file (" + std::to_string(file_bytes) +
                     " bytes); the file is truncated");
  }
  const char* text = reinterpret_cast<const char*>(file_data + 8);
  auto header = nlohmann::json::parse(text, text + header_bytes, nullptr, false);
  if (header.is_discarded()) throw InputError(context + ": the header is not valid JSON");
  if (!header.is_object()) throw InputError(context + ": the header is not a JSON object");
  if (header.size() > kMaxSafetensorsTensors + 1) {
    throw InputError(context + ": " + std::to_string(header.size()) +
                     " entries, above the limit of " + std::to_string(kMaxSafetensorsTensors));
  }

  SafetensorsHeader result;
  result.data_offset = 8 + header_bytes;
  const uint64_t data_bytes = file_bytes - result.data_offset;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw InputError(context + ": '__metadata__' is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          throw InputError(context + ": '__metadata__' value '" + key + "' is not a string");
        }
        result.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (name.empty()) throw InputError(context + ": a tensor has an empty name");
    result.tensors.push_back(parse_tensor(name, entry, data_bytes, file));
  }

  // No two non-empty ranges may share a byte.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& info : result.tensors) {
    if (info.end > info.begin) by_offset.push_back(&info);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      throw InputError(context + ": tensors '" + by_offset[i - 1]->name + "' and '" +
                       by_offset[i]->name + "' overlap (bytes " +
                       std::to_string(by_offset[i]->begin) + " to " +
                       std::to_string(std::min(by_offset[i]->end, by_offset[i - 1]->end)) + ")");
    }
  }
  std::sort(result.tensors.begin(), result.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return result;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path.string()), file_(path) {
  header_ = parse_safetensors_header(file_.data(), file_.size(), path_);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      header_.tensors.begin(), header_.tensors.end(), name,
      [](const TensorInfo& info, std::string_view key) { return info.name < key; });
  if (it == header_.tensors.end() || it->name != name) return nullptr;
  return &*it;
}

TensorView SafetensorsFile::view(const TensorInfo& info) const {
  return TensorView{&info, file_.data() + header_.data_offset + info.begin, &path_};
}

}  // namespace inferlab::engine
