#pragma once
#include <string>

namespace inferlab::cli {

// Library errors name the request fields they reject (FieldError: "`tp` must be in ...");
// the user set them with flags. One table maps each field to its flag; main() rewrites every
// FieldError's message with it.

// The flag that sets a request field (`tp` -> --tp), or the field's own name when no flag does.
std::string flag_of_field(const std::string& field);

}  // namespace inferlab::cli
