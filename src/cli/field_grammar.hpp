#pragma once
#include <functional>
#include <string>

namespace inferlab::cli {

// Library errors name the request fields they reject (FieldError: "`tp` must be in ...");
// the user set them with flags. One table maps each field to its flag.

// The flag that sets a request field (`tp` -> --tp), or the field's own name when no flag does.
std::string flag_of_field(const std::string& field);

// A command's body with library FieldErrors turned into InputErrors that name the flags.
std::function<void()> naming_flags(std::function<void()> body);

}  // namespace inferlab::cli
