#include "engine/tp/wire.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace inferlab::engine::tp {

WireWriter& WireWriter::raw(const void* data, size_t size) {
  const auto* p = static_cast<const std::byte*>(data);
  bytes_.insert(bytes_.end(), p, p + size);
  return *this;
}

WireWriter& WireWriter::str(const std::string& s) {
  u64(s.size());
  return raw(s.data(), s.size());
}

WireWriter& WireWriter::bytes(std::span<const std::byte> b) {
  u64(b.size());
  return raw(b.data(), b.size());
}

WireWriter& WireWriter::i32s(std::span<const int32_t> v) {
  u64(v.size());
  return raw(v.data(), v.size_bytes());
}

std::span<const std::byte> WireReader::take(uint64_t size) {
  if (size > bytes_.size() - at_) {
    throw std::runtime_error(
        fmt::format("tensor-parallel group: malformed {} ({} bytes, read past "
                    "the end at {})",
                    what_, bytes_.size(), at_));
  }
  auto part = bytes_.subspan(at_, static_cast<size_t>(size));
  at_ += static_cast<size_t>(size);
  return part;
}

std::string WireReader::str() {
  const auto part = take(u64());
  return {reinterpret_cast<const char*>(part.data()), part.size()};
}

std::span<const std::byte> WireReader::bytes() {
  return take(u64());
}

std::vector<int32_t> WireReader::i32s() {
  const uint64_t count = u64();
  if (count > (bytes_.size() - at_) / sizeof(int32_t)) take(bytes_.size() - at_ + 1);  // throws
  const auto part = take(count * sizeof(int32_t));
  std::vector<int32_t> values(static_cast<size_t>(count));
  std::memcpy(values.data(), part.data(), part.size());
  return values;
}

void WireReader::finish() const {
  if (at_ != bytes_.size()) {
    throw std::runtime_error(fmt::format("tensor-parallel group: malformed {} ({} bytes left over)",
                                         what_, bytes_.size() - at_));
  }
}

std::vector<std::byte> encode_batch(const ForwardBatch& batch, std::span<const SampleSpec> specs) {
  WireWriter out;
  out.u64(batch.sequences.size());
  for (const SequenceChunk& chunk : batch.sequences) {
    out.i32s(chunk.tokens).i64(chunk.cached_tokens).i32s(chunk.block_table);
    out.u8(chunk.all_logits ? 1 : 0);
  }
  out.u64(specs.size());
  for (const SampleSpec& spec : specs) {
    out.f64(spec.params.temperature).i64(spec.params.top_k).f64(spec.params.top_p);
    out.f64(spec.uniform);
  }
  return out.take();
}

ForwardBatch decode_batch(WireReader& in, std::vector<SampleSpec>& specs) {
  ForwardBatch batch;
  const uint64_t sequences = in.u64();
  for (uint64_t i = 0; i < sequences; ++i) {
    SequenceChunk chunk;
    chunk.tokens = in.i32s();
    chunk.cached_tokens = in.i64();
    chunk.block_table = in.i32s();
    chunk.all_logits = in.u8() != 0;
    batch.sequences.push_back(std::move(chunk));
  }
  const uint64_t count = in.u64();
  specs.clear();
  for (uint64_t i = 0; i < count; ++i) {
    SampleSpec spec;
    spec.params.temperature = in.f64();
    spec.params.top_k = in.i64();
    spec.params.top_p = in.f64();
    spec.uniform = in.f64();
    specs.push_back(spec);
  }
  return batch;
}

}  // namespace inferlab::engine::tp
