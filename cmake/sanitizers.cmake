# ASan+UBSan for the whole build (INFERLAB_SANITIZE), and the coverage instrumentation libFuzzer
# needs (INFERLAB_FUZZ: `fuzzer-no-link` on every object, `fuzzer` only on the fuzz targets'
# link, fuzz/CMakeLists.txt). Any UBSan report aborts (no recovery), so a test or fuzz run fails
# on it instead of printing and going on.
if(INFERLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "INFERLAB_FUZZ needs clang (libFuzzer), e.g. CXX=clang++-14; "
                        "the `sanitize` preset sets it")
  endif()
  set(INFERLAB_SANITIZE ON)
endif()
if(INFERLAB_SANITIZE)
  if(INFERLAB_HAVE_CUDA)
    message(FATAL_ERROR "INFERLAB_SANITIZE builds the CPU paths only: configure with INFERLAB_CUDA=OFF")
  endif()
  set(INFERLAB_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                               -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${INFERLAB_SANITIZER_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
  if(INFERLAB_FUZZ)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endif()
  message(STATUS "inferlab: ASan+UBSan build (fuzz targets: ${INFERLAB_FUZZ})")
endif()
