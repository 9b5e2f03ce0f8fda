#include "engine/tp/process_backend.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "engine/tp/wire.hpp"
#include "util/error.hpp"

namespace inferlab::engine::tp {

MultiProcessTpBackend::MultiProcessTpBackend(const LlamaConfig& config,
                                             std::unique_ptr<LaunchedRanks> launched,
                                             std::unique_ptr<ProcessGroup> group, LocalRank local,
                                             std::vector<int64_t> rank_block_bytes)
    : config_(config),
      launched_(std::move(launched)),
      group_(std::move(group)),
      local_(std::move(local)),
      rank_block_bytes_(std::move(rank_block_bytes)) {
  layout_ = local_.backend->kv_layout();
  layout_.num_kv_heads = config_.model.num_kv_heads;
}

MultiProcessTpBackend::~MultiProcessTpBackend() {
  // The goodbyes (the workers release their shards meanwhile), this rank's shard (its
  // collectives, its NCCL communicator), the wait for the workers to close, the reaping.
  group_->say_goodbye();
  local_.backend.reset();
  local_.collectives.reset();
  group_.reset();
  launched_.reset();
}

template <typename Work>
auto MultiProcessTpBackend::on_group(Work&& work) -> decltype(work()) {
  if (broken_) std::rethrow_exception(broken_);
  const auto lost = [&](const PeerLost& e) {
    std::string what = e.what();
    if (launched_ && e.rank() > 0) {
      const std::string status = launched_->exit_status(e.rank(), 1000);
      if (!status.empty()) what += " (" + status + ")";
    }
    broken_ = std::make_exception_ptr(PeerLost(e.rank(), what));
    group_->report_failure("rank 0 lost " + what, false);
    std::rethrow_exception(broken_);
  };
  try {
    group_->throw_if_lost();
    return work();
  } catch (const PeerLost& e) {
    lost(e);
  } catch (const std::exception& e) {
    // A rank that went is what made NCCL (aborted for it) or a collective fail.
    try {
      group_->throw_if_lost();
    } catch (const PeerLost& first) {
      lost(first);
    }
    broken_ = std::current_exception();
    group_->report_failure(std::string("rank 0 failed: ") + e.what(), false);
    throw;
  }
  throw std::logic_error("unreachable");
}

void MultiProcessTpBackend::send_to_workers(uint32_t tag, std::span<const std::byte> payload) {
  for (int r = 1; r < group_->world(); ++r) group_->send(r, tag, payload);
}

ForwardResult MultiProcessTpBackend::forward(const ForwardBatch& batch) {
  // Checked once here, so that no rank fails alone in the middle of a collective.
  validate_batch(batch, config_, layout_);
  return on_group([&] {
    send_to_workers(kCmdForward, encode_batch(batch, {}));
    return local_.backend->forward(batch);
  });
}

std::vector<int32_t> MultiProcessTpBackend::forward_sample(const ForwardBatch& batch,
                                                           std::span<const SampleSpec> specs) {
  if (specs.size() != batch.sequences.size()) {
    throw std::invalid_argument("forward_sample: one SampleSpec per sequence is needed");
  }
  validate_batch(batch, config_, layout_);
  // Every rank samples the same gathered logits with the same draws (the GPU backend samples on
  // the device after the all-gather, so the workers run it too and keep nothing).
  return on_group([&] {
    send_to_workers(kCmdForwardSample, encode_batch(batch, specs));
    return local_.backend->forward_sample(batch, specs);
  });
}

std::vector<int32_t> MultiProcessTpBackend::forward_sample_rows(
    const ForwardBatch& batch, std::span<const SampleSpec> row_specs) {
  validate_batch(batch, config_, layout_);
  check_row_specs(batch, row_specs);
  // As forward_sample: the workers run the same pass (its collectives) and keep nothing.
  return on_group([&] {
    send_to_workers(kCmdForwardSampleRows, encode_batch(batch, row_specs));
    return local_.backend->forward_sample_rows(batch, row_specs);
  });
}

void MultiProcessTpBackend::set_profiling(bool on) {
  on_group([&] {
    send_to_workers(kCmdProfiling, WireWriter().u8(on ? 1 : 0).take());
    local_.backend->set_profiling(on);
  });
}

void MultiProcessTpBackend::fill_kv_cache_random(uint64_t seed) {
  on_group([&] {
    send_to_workers(kCmdFillKvRandom, WireWriter().u64(seed).take());
    local_.backend->fill_kv_cache_random(seed);  // rank 0's seed + 0
  });
}

int64_t MultiProcessTpBackend::kv_block_host_bytes() const {
  int64_t bytes = 0;
  for (int64_t rank_bytes : rank_block_bytes_) bytes += rank_bytes;
  return bytes;
}

std::unique_ptr<KvHostCopy> MultiProcessTpBackend::copy_kv_blocks_to_host(
    std::span<const int32_t> blocks) {
  check_swap_blocks(blocks, layout_);
  return on_group([&] {
    send_to_workers(kCmdKvToHost, WireWriter().i32s(blocks).take());
    const std::unique_ptr<KvHostCopy> mine = local_.backend->copy_kv_blocks_to_host(blocks);
    std::vector<std::byte> host(mine->bytes().begin(), mine->bytes().end());
    for (int r = 1; r < group_->world(); ++r) {
      const Message part = group_->receive(r, kCmdKvBytes);
      const auto expected =
          static_cast<size_t>(rank_block_bytes_[static_cast<size_t>(r)]) * blocks.size();
      if (part.payload.size() != expected) {
        throw std::runtime_error(fmt::format("{} sent {} bytes of KV blocks, {} were expected",
                                             group_->peer(r).describe(), part.payload.size(),
                                             expected));
      }
      host.insert(host.end(), part.payload.begin(), part.payload.end());
    }
    return std::unique_ptr<KvHostCopy>(std::make_unique<HeapKvHostCopy>(std::move(host)));
  });
}

void MultiProcessTpBackend::copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                                     std::span<const std::byte> host) {
  check_swap_blocks(blocks, layout_, static_cast<int64_t>(host.size()), kv_block_host_bytes());
  const auto parts = rank_parts_of_host_copy(host, rank_block_bytes_);
  on_group([&] {
    for (int r = 1; r < group_->world(); ++r) {
      group_->send(r, kCmdKvFromHost,
                   WireWriter().i32s(blocks).bytes(parts[static_cast<size_t>(r)]).take());
    }
    local_.backend->copy_kv_blocks_from_host(blocks, parts[0]);
  });
}

void serve_rank_commands(ProcessGroup& group, Backend& local) {
  std::vector<SampleSpec> specs;
  while (true) {
    const Message m = group.receive(0);
    WireReader in(m.payload, fmt::format("command {}", m.tag));
    switch (m.tag) {
      case kTagGoodbye:
        return;
      case kCmdForward:
      case kCmdForwardSample:
      case kCmdForwardSampleRows: {
        const ForwardBatch batch = decode_batch(in, specs);
        in.finish();
        if (m.tag == kCmdForward) {
          local.forward(batch);
        } else if (m.tag == kCmdForwardSample) {
          local.forward_sample(batch, specs);
        } else {
          local.forward_sample_rows(batch, specs);
        }
        break;
      }
      case kCmdFillKvRandom:
        local.fill_kv_cache_random(in.u64() + static_cast<uint64_t>(group.rank()));
        break;
      case kCmdKvToHost: {
        const std::vector<int32_t> blocks = in.i32s();
        const std::unique_ptr<KvHostCopy> copy = local.copy_kv_blocks_to_host(blocks);
        group.send(0, kCmdKvBytes, copy->bytes());
        break;
      }
      case kCmdKvFromHost: {
        const std::vector<int32_t> blocks = in.i32s();
        local.copy_kv_blocks_from_host(blocks, in.bytes());
        break;
      }
      case kCmdProfiling:
        local.set_profiling(in.u8() != 0);
        break;
      default:
        throw std::runtime_error(
            fmt::format("tensor-parallel rank {}: rank 0 sent an unknown command {} (another "
                        "protocol?)",
                        group.rank(), m.tag));
    }
  }
}

}  // namespace inferlab::engine::tp
