#pragma once
// The server tests that tokenize with the real Llama 3 tokenizer skip where it was not fetched.
#include <gtest/gtest.h>

#include "test_support.hpp"

#define SKIP_WITHOUT_TOKENIZER()                                                  \
  if (!inferlab::testing::have_llama3_tokenizer()) {                              \
    GTEST_SKIP() << "Llama 3 tokenizer not fetched (scripts/fetch-tokenizer.sh)"; \
  }
