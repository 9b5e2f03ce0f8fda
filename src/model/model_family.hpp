#pragma once
#include <vector>

#include "model/model_config.hpp"
#include "model/step_blocks.hpp"

namespace inferlab {

// One block of a family's step, by name (for tests and listings) and builder.
struct Block {
  const char* name;
  BlockBuilder build;
};

// A model family: which configs it covers and the blocks one step of it is made of, in
// execution order (embedding, then the per-layer attention and MLP blocks, then the head).
// Adding a family means adding one entry to the table in model_family.cpp, with any new block
// it needs; the step graph, the blocks of other families and the callers stay as they are.
struct ModelFamily {
  const char* name;
  const char* covers;  // in words: the architectures and model_type values it serves
  bool (*matches)(const ModelConfig& model);
  NormKind norm;
  std::vector<Block> blocks;
};

// Every family, in the order they are tried; the last one matches every config.
const std::vector<ModelFamily>& model_families();
// The first family that matches `model`.
const ModelFamily& model_family(const ModelConfig& model);

}  // namespace inferlab
