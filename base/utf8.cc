#include "base/utf8.h"

#include <cstdint>

namespace perfcast {

size_t PrintableUtf8Length(absl::string_view text) {
  if (text.empty()) return 0;
  const unsigned char c = static_cast<unsigned char>(text[0]);
  size_t n = 0;
  uint32_t code = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    code = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    code = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(text[k]);
    if ((cc & 0xc0) != 0x80) return 0;
    code = (code << 6) | (cc & 0x3f);
  }
  constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMin[n] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  if (code <= 0x9f) return 0;  // C1 controls
  return n;
}

}  // namespace perfcast
