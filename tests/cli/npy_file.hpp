#pragma once
// Reading back the float32 .npy files `inferlab logits` writes, for the CLI tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace inferlab::testing {

// The float32 rows of a .npy the logits command wrote; shape from its header.
inline std::vector<float> read_npy(const std::filesystem::path& path, int64_t& rows,
                                   int64_t& cols) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const size_t header_length =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  const std::string header = bytes.substr(10, header_length);
  EXPECT_NE(header.find("'<f4'"), std::string::npos);
  EXPECT_EQ((10 + header_length) % 64, 0u);
  sscanf(header.c_str() + header.find("'shape': (") + 10, "%ld, %ld", &rows, &cols);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  EXPECT_EQ(bytes.size(), 10 + header_length + values.size() * 4);
  std::memcpy(values.data(), bytes.data() + 10 + header_length, values.size() * 4);
  return values;
}

}  // namespace inferlab::testing
