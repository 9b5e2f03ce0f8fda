#include "engine/safetensors_writer.hpp"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "util/error.hpp"

namespace inferlab::engine {

uint64_t TensorSpec::byte_size() const {
  uint64_t bytes = tensor_dtype_bytes(dtype);
  for (int64_t extent : shape) bytes *= static_cast<uint64_t>(extent);
  return bytes;
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path,
                                     std::vector<TensorSpec> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path.string()) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  for (const auto& spec : tensors) {
    if (spec.name.empty() || spec.name == "__metadata__" || !names.insert(spec.name).second) {
      throw std::invalid_argument("safetensors writer: bad or repeated tensor name '" + spec.name +
                                  "'");
    }
    for (int64_t extent : spec.shape) {
      if (extent < 0) throw std::invalid_argument("safetensors writer: negative shape");
    }
    uint64_t bytes = spec.byte_size();
    header[spec.name] = {{"dtype", std::string(tensor_dtype_name(spec.dtype))},
                         {"shape", spec.shape},
                         {"data_offsets", {data_bytes_, data_bytes_ + bytes}}};
    data_bytes_ += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  data_offset_ = 8 + text.size();

  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw InputError("cannot create '" + path_ + "': " + std::strerror(errno));
  }
  uint8_t length[8];
  uint64_t header_bytes = text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header_bytes >> (8 * i));
  if (std::fwrite(length, 1, 8, file_) != 8 ||
      std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    throw std::runtime_error("writing '" + path_ + "' failed: " + std::strerror(errno));
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void SafetensorsWriter::write(std::span<const uint8_t> bytes) {
  if (file_ == nullptr || written_ + bytes.size() > data_bytes_) {
    throw std::logic_error("safetensors writer: more bytes than the tensors hold ('" + path_ +
                           "')");
  }
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw std::runtime_error("writing '" + path_ + "' failed: " + std::strerror(errno));
  }
  written_ += bytes.size();
}

void SafetensorsWriter::finish() {
  if (written_ != data_bytes_) {
    throw std::logic_error("safetensors writer: " + std::to_string(written_) + " of " +
                           std::to_string(data_bytes_) + " bytes written to '" + path_ + "'");
  }
  int status = std::fclose(file_);
  file_ = nullptr;
  if (status != 0) {
    throw std::runtime_error("writing '" + path_ + "' failed: " + std::strerror(errno));
  }
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const auto& tensor : tensors) {
    if (tensor.bytes.size() != tensor.spec.byte_size()) {
      throw std::invalid_argument("safetensors writer: tensor '" + tensor.spec.name +
                                  "' has the wrong number of bytes");
    }
    specs.push_back(tensor.spec);
  }
  SafetensorsWriter writer(path, specs, metadata);
  for (const auto& tensor : tensors) writer.write(tensor.bytes);
  writer.finish();
}

}  // namespace inferlab::engine
