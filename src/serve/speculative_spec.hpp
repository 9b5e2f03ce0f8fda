#pragma once
// The one grammar of --speculative, for every command that takes it (serve with either executor,
// capacity, generate, bench, server): comma-separated items,
//   ngram | draft=ngram | draft=MODEL     who proposes: prompt lookup, or a draft model (a
//                                         checkpoint folder or a shipped name); first or not
//   k=K                                   tokens proposed per step, 1-16 (default 4)
//   n=N                                   prompt lookup's longest n-gram, 1-16 (default 3)
//   accept=P                              the simulator's acceptance per draft token, [0, 1]
//                                         (the engine measures its own)
//   propose=L                             the simulator's mean draft tokens proposed a step,
//                                         (0, k] (default k; the engine measures its own)
#include <optional>
#include <string>

namespace inferlab {

struct SpeculativeSpec {
  std::string draft;  // "ngram" or a draft model; empty: speculation off
  int k = 0;          // 0: off
  int ngram_max = 3;
  std::optional<double> acceptance;
  std::optional<double> proposed_mean;
  bool enabled() const { return k > 0; }
  bool ngram() const { return draft == "ngram"; }
};

// Empty text: off. InputError naming the item for anything outside the grammar.
SpeculativeSpec parse_speculative_spec(const std::string& text);

}  // namespace inferlab
