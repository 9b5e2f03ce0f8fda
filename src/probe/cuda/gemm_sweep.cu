#include <algorithm>
#include <array>

#include "probe/cuda/gemm_lt.cuh"
#include "probe/cuda/gemm_sweep.cuh"

namespace inferlab::probe {

nlohmann::json measure_tensor_peaks(bool quick) {
  auto handle = make_lt_handle();
  nlohmann::json out;
  const GemmType types[] = {GemmType::tf32, GemmType::fp16, GemmType::bf16, GemmType::fp8_e4m3,
                            GemmType::int8};
  const char* keys[] = {"tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor", "int8_tensor"};
  for (int t = 0; t < 5; ++t) {
    double check_error = 0.0;
    {
      LtGemm check(handle.get(), types[t], 512, 384, 1024);
      check.run();
      double err = check.check_against_host(64);
      check_error = err;
      double tolerance =
          types[t] == GemmType::int8 ? 0.0 : (types[t] == GemmType::tf32 ? 2e-3 : 1e-2);
      if (!(err <= tolerance)) {
        throw std::runtime_error(std::string("cuBLASLt ") + gemm_type_name(types[t]) +
                                 " GEMM disagrees with the host reference: " + std::to_string(err));
      }
    }
    nlohmann::json best;
    double best_rate = 0.0;
    std::vector<std::array<long long, 3>> shapes = {{8192, 8192, 8192}};
    if (!quick) shapes.push_back({16384, 8192, 16384});
    for (auto [m, n, k] : shapes) {
      LtGemm gemm(handle.get(), types[t], m, n, k);
      gemm.choose_algorithm(quick ? 1 : 4);
      auto stats = time_runs([&] { gemm.run(); }, {3, quick ? 5 : 20, nullptr});
      SampleStats rate = rate_stats(stats, gemm.flops());
      if (rate.median > best_rate) {
        best_rate = rate.median;
        best = {{"flops_per_s", rate.median},
                {"rate_min", rate.min},
                {"rate_max", rate.max},
                {"time", stats_to_json(stats)},
                {"m", m},
                {"n", n},
                {"k", k},
                {"check_max_rel_error", check_error},
                {"method", "cuBLASLt TN, fastest of the heuristic's first candidates"}};
      }
    }
    out[keys[t]] = best;
  }
  return out;
}

nlohmann::json sweep_gemms(const std::vector<ProjectionShape>& projections, size_t l2_bytes,
                           int sm_count, bool quick) {
  auto handle = make_lt_handle();
  L2Flusher flusher(l2_bytes);
  nlohmann::json rows = nlohmann::json::array();
  auto measure = [&](const char* sweep, const std::string& model, const std::string& name,
                     long long m_tokens, long long n_out, long long k) {
    LtGemm gemm(handle.get(), GemmType::bf16, n_out, m_tokens, k);
    int repeats = gemm.flops() > 5e12 ? 5 : (quick ? 5 : 10);
    auto stats = time_runs([&] { gemm.run(); }, {2, repeats, &flusher});
    double rate = gemm.flops() / stats.median;
    rows.push_back({{"sweep", sweep},
                    {"model", model},
                    {"proj", name},
                    {"m", m_tokens},
                    {"n", n_out},
                    {"k", k},
                    {"dtype", "bf16"},
                    {"median_s", stats.median},
                    {"time", stats_to_json(stats)},
                    {"flops", gemm.flops()},
                    {"bytes", gemm.min_bytes()},
                    {"flops_per_s", rate},
                    {"flops_per_s_per_sm", rate / sm_count}});
  };
  const std::vector<long long> tokens =
      quick ? std::vector<long long>{1, 16, 128, 1024, 8192}
            : std::vector<long long>{1,   2,   4,    8,    16,   32,   64,   128,
                                     256, 512, 1024, 2048, 4096, 8192, 16384};
  for (const auto& p : projections) {
    for (long long m : tokens) measure("tokens", p.model, p.name, m, p.n_out, p.k);
  }
  // Staircases: N and K in steps of 256 at 2048 tokens.
  const long long step = quick ? 1024 : 256;
  for (long long n = step; n <= 16384; n += step)
    measure("n", "synthetic", "n_sweep", 2048, n, 4096);
  for (long long k = step; k <= 16384; k += step)
    measure("k", "synthetic", "k_sweep", 2048, 4096, k);
  return rows;
}

}  // namespace inferlab::probe
