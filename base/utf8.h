// Decoding UTF-8 where names and file contents reach a terminal: the one
// decoder behind the stores' printable-text rule and the CLI's quoting.
#ifndef PERFCAST_BASE_UTF8_H_
#define PERFCAST_BASE_UTF8_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace perfcast {

// The length (2 to 4 bytes) of the well-formed UTF-8 sequence that `text`
// starts with, when it encodes a character beyond ASCII that is not a C1
// control (U+0080..U+009F, which terminals obey as they do escape
// sequences); 0 otherwise: an ASCII byte, a stray continuation byte, a
// truncated, overlong or surrogate sequence, or a code point past U+10FFFF.
size_t PrintableUtf8Length(absl::string_view text);

}  // namespace perfcast

#endif  // PERFCAST_BASE_UTF8_H_
