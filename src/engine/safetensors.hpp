#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/mapped_file.hpp"

namespace inferlab::engine {

// Element types a safetensors file may hold here: the float formats of checkpoints and the
// integer formats of quantized ones (weights, scales, packed int4).
enum class TensorDType { bf16, f16, f32, i8, u8, i32 };

std::string_view tensor_dtype_name(TensorDType dtype);  // "BF16", "F16", ...
size_t tensor_dtype_bytes(TensorDType dtype);
// Throws InputError (naming `context`) for a name outside the list, listing the known ones.
TensorDType parse_tensor_dtype(std::string_view name, const std::string& context);

// Limits beyond which a file is refused rather than trusted.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;  // 100 MiB
inline constexpr size_t kMaxSafetensorsTensors = 1'000'000;
inline constexpr size_t kMaxTensorRank = 8;

struct TensorInfo {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets within the data section, [begin, end)
  uint64_t end = 0;
  int64_t elements() const;
  uint64_t byte_size() const { return end - begin; }
};

// The parsed, checked header of a safetensors file whose whole size is `file_bytes`. Every
// defect is an InputError naming `file` and, where it concerns one, the tensor:
// file shorter than 8 bytes, header length past the end of the file or above the bound, a
// header that is not a JSON object, an unknown dtype, negative or non-integer shape entries,
// shape × dtype size (overflow-checked) different from the byte range, ranges outside the data
// section or overlapping, more than kMaxSafetensorsTensors tensors.
struct SafetensorsHeader {
  uint64_t data_offset = 0;                     // where the data section starts in the file
  std::vector<TensorInfo> tensors;              // sorted by name
  std::map<std::string, std::string> metadata;  // "__metadata__", string values
};
SafetensorsHeader parse_safetensors_header(const uint8_t* file_data, size_t file_bytes,
                                           const std::string& file);

// A tensor inside a mapped file: read-only bytes, little-endian, row-major.
struct TensorView {
  const TensorInfo* info = nullptr;
  const uint8_t* data = nullptr;
  const std::string* file = nullptr;
};

// One safetensors file, mapped and checked before anything is trusted.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const TensorInfo* find(std::string_view name) const;  // nullptr when absent
  TensorView view(const TensorInfo& info) const;

 private:
  std::string path_;
  MappedFile file_;
  SafetensorsHeader header_;
};

}  // namespace inferlab::engine
