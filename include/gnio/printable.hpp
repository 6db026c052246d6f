// SPDX-License-Identifier: Apache-2.0
// Text from outside (device strings, file names, option values) made safe to
// echo in a message: a terminal must not act on it and a reader must see
// what was typed.
//
//   gnio::printable("gen:count=5,\x1b[31mRED=1")  ->  "gen:count=5,\x1b[31mRED=1" (as 4 characters: \ x 1 b)
//
// Control characters (0x00..0x1f, 0x7f, and U+0080..U+009F) are written as
// \xHH (\n, \r and \t as those two characters), a backslash as \\, and bytes
// that are not valid UTF-8 as \xHH. Valid UTF-8 (é, ü, 東) is kept as it is.
#pragma once

#include <string>
#include <string_view>

namespace gnio {

[[nodiscard]] std::string printable(std::string_view text);

}  // namespace gnio
