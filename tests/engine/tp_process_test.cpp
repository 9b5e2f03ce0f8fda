// Tensor parallelism across processes (engine/tp/rendezvous, tcp_collectives, process_backend),
// its ranks as threads of this test joined over loopback TCP: the rendezvous and what it refuses,
// a lost rank named instead of a hang, the TCP collectives' bits against HostCommunicator's, and
// rank 0's backend over the group against the threaded group's logits and KV swaps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/host_communicator.hpp"
#include "engine/tp/process_backend.hpp"
#include "engine/tp/rendezvous.hpp"
#include "engine/tp/tcp_collectives.hpp"
#include "engine/tp/tp_cpu_backend.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine::tp {
namespace {

using engine::testing::expect_input_error;

GroupOptions options_for(int world, const std::string& fingerprint = "test") {
  GroupOptions o;
  o.world = world;
  o.fingerprint = fingerprint;
  o.join_timeout = std::chrono::seconds(20);
  return o;
}

// `world` ranks joined over 127.0.0.1 (rank r at index r); `worker` adjusts ranks 1.. options.
std::vector<std::unique_ptr<ProcessGroup>> make_groups(
    int world, const std::function<void(GroupOptions&)>& worker = {},
    const std::function<void(GroupOptions&)>& root = {}) {
  Rendezvous rendezvous({"127.0.0.1", 0});
  std::vector<std::unique_ptr<ProcessGroup>> groups(static_cast<size_t>(world));
  {
    std::vector<std::jthread> joining;
    for (int r = 1; r < world; ++r) {
      joining.emplace_back([&, r] {
        GroupOptions o = options_for(world);
        o.rank = r;
        if (worker) worker(o);
        groups[static_cast<size_t>(r)] = join_rendezvous({"127.0.0.1", rendezvous.port()}, o);
      });
    }
    GroupOptions o = options_for(world);
    if (root) root(o);
    groups[0] = rendezvous.accept(o);
  }  // joined
  return groups;
}

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto b = std::as_bytes(std::span(text));
  return {b.begin(), b.end()};
}

TEST(TpRendezvous, EndpointsAreHostAndPort) {
  const Endpoint e = parse_endpoint("10.0.0.1:29500", "--tp-master");
  EXPECT_EQ(e.host, "10.0.0.1");
  EXPECT_EQ(e.port, 29500);
  EXPECT_EQ(parse_endpoint("[::1]:80", "--tp-master").host, "::1");
  EXPECT_EQ(parse_endpoint("[::1]:80", "--tp-master").text(), "[::1]:80");
  for (const char* bad :
       {"host", "host:", ":80", "host:0", "host:65536", "host:8x", "::1:80", ""}) {
    expect_input_error([&] { parse_endpoint(bad, "--tp-master"); }, {"--tp-master"});
  }
}

TEST(TpRendezvous, RanksJoinAndRankZeroBroadcasts) {
  auto groups = make_groups(3);
  EXPECT_EQ(groups[0]->peer(2).rank, 2);
  EXPECT_EQ(groups[2]->peer(0).rank, 0);
  EXPECT_NE(groups[1]->peer(0).describe().find("tensor-parallel rank 0 (pid "), std::string::npos);
  const auto blob = bytes_of("the unique id");
  std::vector<std::vector<std::byte>> got(3);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 3; ++r) {
      ranks.emplace_back([&, r] {
        got[static_cast<size_t>(r)] =
            groups[static_cast<size_t>(r)]->broadcast(kFirstUserTag, r == 0 ? blob : bytes_of(""));
      });
    }
  }
  for (const auto& g : got) EXPECT_EQ(g, blob);
  // A payload far larger than a socket's buffers, both ways.
  std::vector<std::byte> big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 7);
  std::jthread sender([&] { groups[2]->send(0, kFirstUserTag + 1, big); });
  EXPECT_EQ(groups[0]->receive(2, kFirstUserTag + 1).payload, big);
}

TEST(TpRendezvous, AMismatchedRankIsRefusedOnBothSides) {
  Rendezvous rendezvous({"127.0.0.1", 0});
  std::jthread worker([&] {
    GroupOptions o = options_for(2, "another build");
    o.rank = 1;
    expect_input_error(
        [&] {
          join_rendezvous({"127.0.0.1", rendezvous.port()}, o);
        },
        {"refused rank 1", "fingerprint 'another build'"});
  });
  expect_input_error([&] { rendezvous.accept(options_for(2)); },
                     {"tensor-parallel rank 1", "was refused", "fingerprint"});
  worker.join();

  Rendezvous second({"127.0.0.1", 0});
  std::jthread wrong_world([&] {
    GroupOptions o = options_for(3);
    o.rank = 1;
    expect_input_error(
        [&] {
          join_rendezvous({"127.0.0.1", second.port()}, o);
        },
        {"--tp-world 3, rank 0 2"});
  });
  expect_input_error([&] { second.accept(options_for(2)); }, {"--tp-world 3"});
}

TEST(TpRendezvous, NobodyThereIsAClearErrorAfterTheTimeout) {
  int port = 0;
  {
    Rendezvous probe({"127.0.0.1", 0});  // a port nothing listens on once this goes
    port = probe.port();
  }
  GroupOptions o = options_for(2);
  o.rank = 1;
  o.join_timeout = std::chrono::milliseconds(300);
  expect_input_error(
      [&] {
        join_rendezvous({"127.0.0.1", port}, o);
      },
      {"tensor-parallel rank 1", "no rank 0 answered at 127.0.0.1:", "0.3 s"});
  Rendezvous lonely({"127.0.0.1", 0});
  GroupOptions root = options_for(3);
  root.join_timeout = std::chrono::milliseconds(300);
  expect_input_error([&] { lonely.accept(root); },
                     {"tensor-parallel ranks 1, 2 of 3 did not join", "inferlab tp-worker"});
}

TEST(TpRendezvous, ALostRankIsNamedInsteadOfAHang) {
  // Rank 1 sends no heartbeat for 30 s; rank 0 gives up on it after 0.3 s of silence.
  auto groups = make_groups(
      2, [](GroupOptions& o) { o.heartbeat_interval = std::chrono::seconds(30); },
      [](GroupOptions& o) { o.silence_limit = std::chrono::milliseconds(300); });
  try {
    groups[0]->receive(1);
    ADD_FAILURE() << "no PeerLost";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_NE(std::string(e.what()).find("tensor-parallel rank 1 (pid"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sent nothing for 0.3 s"), std::string::npos) << e.what();
  }
  EXPECT_THROW(groups[0]->send(1, kFirstUserTag, {}), PeerLost);  // and every later call

  // A rank that ends in order says goodbye; a rank that waits for it from the other side learns
  // that it left.
  auto pair = make_groups(2);
  pair[1].reset();
  try {
    pair[0]->receive(1, kFirstUserTag);
    ADD_FAILURE() << "no PeerLost";
  } catch (const PeerLost& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel rank 1"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("left the group"), std::string::npos) << e.what();
  }
  // A failure a rank reports reaches the others with its text.
  auto third = make_groups(2);
  third[1]->report_failure("out of memory", false);
  EXPECT_THROW(third[0]->receive(1), PeerLost);
}

TEST(TcpCollectives, GiveTheInProcessCommunicatorsBits) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 4099;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::vector<std::vector<float>> parts(kRanks, std::vector<float>(kCount));
  for (auto& part : parts)
    for (float& v : part) v = value(rng);
  auto run = [&](auto&& collectives_of) {
    std::vector<std::vector<float>> sums = parts, gathered(kRanks);
    std::vector<std::jthread> ranks;
    for (int r = 0; r < kRanks; ++r) {
      ranks.emplace_back([&, r] {
        HostCollectives& c = collectives_of(r);
        c.all_reduce_sum(r, sums[static_cast<size_t>(r)]);
        // Uneven parts (as the vocab shards are): r + 1 values each.
        const std::span<const float> local(parts[static_cast<size_t>(r)].data(),
                                           static_cast<size_t>(r + 1));
        gathered[static_cast<size_t>(r)].resize(6);
        c.all_gather(r, local, gathered[static_cast<size_t>(r)]);
      });
    }
    ranks.clear();
    return std::make_pair(sums, gathered);
  };
  HostCommunicator threads(kRanks);
  const auto want = run([&](int) -> HostCollectives& { return threads; });
  auto groups = make_groups(kRanks);
  std::vector<std::unique_ptr<TcpCollectives>> tcp;
  for (auto& g : groups) tcp.push_back(std::make_unique<TcpCollectives>(*g));
  const auto got = run([&](int r) -> HostCollectives& { return *tcp[static_cast<size_t>(r)]; });
  for (int r = 0; r < kRanks; ++r) {
    const auto& a = got.first[static_cast<size_t>(r)];
    const auto& b = want.first[static_cast<size_t>(r)];
    EXPECT_EQ(std::memcmp(a.data(), b.data(), kCount * sizeof(float)), 0) << "rank " << r;
    EXPECT_EQ(got.second[static_cast<size_t>(r)], want.second[static_cast<size_t>(r)]);
  }
  EXPECT_EQ(got.first[1], got.first[0]);  // every rank the same bits
}

// Rank 0's backend over a group whose other ranks are threads running the workers' loop: the
// threaded group's logits bit for bit (and their argmax, from forward_sample_rows), and its KV
// swaps and random fill.
TEST(MultiProcessTpBackend, GivesTheThreadedGroupsLogitsAndSwaps) {
  constexpr int kRanks = 2;
  auto model = engine::testing::tiny_model(engine::testing::tiny_llama_config_json(), 21);
  auto threaded = make_tp_cpu_backend(model, kRanks, 64, 4);
  quantize_for_cpu(model, 4, {});
  auto groups = make_groups(kRanks);
  std::vector<LocalRank> locals(kRanks);
  std::vector<int64_t> block_bytes;
  for (int r = 0; r < kRanks; ++r) {
    auto& local = locals[static_cast<size_t>(r)];
    local.collectives = std::make_unique<TcpCollectives>(*groups[static_cast<size_t>(r)]);
    auto rank = make_cpu_rank(model, r, kRanks, 4, 16, {});
    rank->join_group(local.collectives.get(), r);
    block_bytes.push_back(rank->kv_block_host_bytes());
    local.backend = std::move(rank);
  }
  std::jthread worker([&] {
    serve_rank_commands(*groups[1], *locals[1].backend);
    locals[1] = LocalRank{};
    groups[1].reset();  // its goodbye back, as a worker process's exit would
  });
  MultiProcessTpBackend group(model.config, nullptr, std::move(groups[0]), std::move(locals[0]),
                              block_bytes);
  EXPECT_EQ(group.kv_layout().num_kv_heads, model.config.model.num_kv_heads);
  EXPECT_EQ(group.kv_block_host_bytes(), threaded->kv_block_host_bytes());

  const BlockTable table{3, 0, 7, 5};
  std::vector<int32_t> tokens;
  for (int i = 0; i < 16; ++i) tokens.push_back((i * 37 + 11) % 256);
  int64_t done = 0;
  for (int64_t length : {9, 3, 1, 1}) {
    SequenceChunk chunk{{tokens.begin() + done, tokens.begin() + done + length}, done, table, true};
    const auto want = threaded->forward({{chunk}});
    const auto got = group.forward({{chunk}});
    ASSERT_EQ(got.logits.size(), want.logits.size());
    EXPECT_EQ(std::memcmp(got.logits.data(), want.logits.data(), got.logits.size() * 4), 0)
        << "chunk at " << done;
    done += length;
  }
  // Every row's argmax over the group (the workers run the same pass): the argmax of the
  // threaded group's rows, whose logits are the group's bit for bit.
  const SequenceChunk verify{{tokens[done], tokens[done + 1]}, done, table, true};
  const auto rows = threaded->forward({{verify}});
  const std::vector<int32_t> ids = group.forward_argmax_rows({{verify}});
  ASSERT_EQ(ids.size(), 2u);
  for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(ids[static_cast<size_t>(r)], argmax(rows.row(r)));
  // A swap out and back into other blocks, then a decode over them: the same bytes and logits.
  const std::vector<int32_t> out{3, 0}, back{9, 11};
  const auto want_copy = threaded->copy_kv_blocks_to_host(out);
  const auto got_copy = group.copy_kv_blocks_to_host(out);
  ASSERT_EQ(got_copy->bytes().size(), want_copy->bytes().size());
  EXPECT_TRUE(
      std::equal(got_copy->bytes().begin(), got_copy->bytes().end(), want_copy->bytes().begin()));
  threaded->copy_kv_blocks_from_host(back, want_copy->bytes());
  group.copy_kv_blocks_from_host(back, got_copy->bytes());
  SequenceChunk decode{{tokens[done]}, done, {9, 11, 7, 5}, false};
  const auto want = threaded->forward({{decode}});
  const auto got = group.forward({{decode}});
  EXPECT_EQ(std::memcmp(got.logits.data(), want.logits.data(), got.logits.size() * 4), 0);
  // Random caches drawn from the same seeds per rank.
  threaded->fill_kv_cache_random(9);
  group.fill_kv_cache_random(9);
  const std::vector<int32_t> all{0, 1, 15};
  const auto a = threaded->copy_kv_blocks_to_host(all), b = group.copy_kv_blocks_to_host(all);
  EXPECT_TRUE(std::equal(a->bytes().begin(), a->bytes().end(), b->bytes().begin()));
  // A batch the model cannot run is refused before any rank starts it; the group goes on.
  SequenceChunk bad{{999}, 0, {0}, false};
  EXPECT_THROW(group.forward({{bad}}), InputError);
  EXPECT_NO_THROW(group.forward({{decode}}));
}

}  // namespace
}  // namespace inferlab::engine::tp
