#pragma once
// The byte layout of the messages between the processes of a tensor-parallel group
// (engine/tp/rendezvous.hpp): integers and floats in this machine's byte order (every rank
// checks the order in its hello), strings and arrays length-prefixed. A reader that runs past the
// end or has bytes left over is a malformed message (std::runtime_error), never a crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine::tp {

class WireWriter {
 public:
  WireWriter& u8(uint8_t v) { return raw(&v, 1); }
  WireWriter& u32(uint32_t v) { return raw(&v, sizeof v); }
  WireWriter& i32(int32_t v) { return raw(&v, sizeof v); }
  WireWriter& i64(int64_t v) { return raw(&v, sizeof v); }
  WireWriter& u64(uint64_t v) { return raw(&v, sizeof v); }
  WireWriter& f64(double v) { return raw(&v, sizeof v); }
  WireWriter& str(const std::string& s);
  WireWriter& bytes(std::span<const std::byte> b);  // length, then the bytes
  WireWriter& i32s(std::span<const int32_t> v);
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  WireWriter& raw(const void* data, size_t size);
  std::vector<std::byte> bytes_;
};

class WireReader {
 public:
  // `what` names the message in errors ("forward command").
  WireReader(std::span<const std::byte> bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}
  // Not over a temporary's bytes (a received message's payload must outlive its reader).
  WireReader(std::vector<std::byte>&&, std::string) = delete;
  uint8_t u8() { return pod<uint8_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  int32_t i32() { return pod<int32_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  double f64() { return pod<double>(); }
  std::string str();
  std::span<const std::byte> bytes();
  std::vector<int32_t> i32s();
  // Throws unless every byte was read.
  void finish() const;

 private:
  template <typename T>
  T pod() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
  std::span<const std::byte> take(uint64_t size);
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  std::string what_;
};

// A forward pass's batch, and forward_sample's (or forward_sample_rows') specs, as rank 0 sends
// them to the other ranks.
std::vector<std::byte> encode_batch(const ForwardBatch& batch, std::span<const SampleSpec> specs);
ForwardBatch decode_batch(WireReader& in, std::vector<SampleSpec>& specs);

}  // namespace inferlab::engine::tp
