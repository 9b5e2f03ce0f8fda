#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/safetensors.hpp"

namespace inferlab::engine {

struct TensorSpec {
  std::string name;
  TensorDType dtype = TensorDType::bf16;
  std::vector<int64_t> shape;
  uint64_t byte_size() const;
};

// Streams one safetensors file: the header (JSON, padded with spaces so the data section starts
// 8-byte aligned, as the format allows), then each tensor's bytes in the order given, ranges
// contiguous with no gaps (what the reference implementation requires). The caller writes
// exactly byte_size() bytes per tensor, in order, in as many pieces as it likes.
class SafetensorsWriter {
 public:
  // Throws InputError when the file cannot be created; names must be unique and non-empty.
  SafetensorsWriter(const std::filesystem::path& path, std::vector<TensorSpec> tensors,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  void write(std::span<const uint8_t> bytes);
  // Checks that every byte was written and closes the file (std::runtime_error otherwise).
  void finish();
  uint64_t total_bytes() const { return data_bytes_ + data_offset_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t data_offset_ = 0;
  uint64_t data_bytes_ = 0;
  uint64_t written_ = 0;
};

// Everything at once, for small files and tests.
struct TensorData {
  TensorSpec spec;
  std::vector<uint8_t> bytes;
};
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace inferlab::engine
