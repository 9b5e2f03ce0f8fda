#pragma once
#include <pybind11/pybind11.h>

namespace inferlab::python {

// Adds the class `_Engine` (the engine opened once through engine::open_backend, generating and
// computing logits) and `engine_flags()` (its options, as command_flags gives a command's).
void bind_engine(pybind11::module_& m);

}  // namespace inferlab::python
