#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace inferlab::engine {

// A whole file mapped read-only (mmap). Move-only; unmaps on destruction. An empty file maps to
// no memory (data() == nullptr, size() == 0).
class MappedFile {
 public:
  MappedFile() = default;
  // Throws InputError naming the file when it cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace inferlab::engine
