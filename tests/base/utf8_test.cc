#include "base/utf8.h"

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"

namespace perfcast {
namespace {

TEST(PrintableUtf8LengthTest, WellFormedCharacters) {
  EXPECT_EQ(PrintableUtf8Length("\xc3\xa9t\xc3\xa9"), 2u);       // é
  EXPECT_EQ(PrintableUtf8Length("\xc2\xa0"), 2u);                // U+00A0, past C1
  EXPECT_EQ(PrintableUtf8Length("\xe2\x82\xac"), 3u);            // €
  EXPECT_EQ(PrintableUtf8Length("\xf0\x9f\x99\x82 ok"), 4u);     // U+1F642
  EXPECT_EQ(PrintableUtf8Length("\xf4\x8f\xbf\xbf"), 4u);        // U+10FFFF
}

TEST(PrintableUtf8LengthTest, RefusesWhatIsNotAPrintableSequence) {
  for (absl::string_view bad : {absl::string_view(""), absl::string_view("a"),
                                absl::string_view("\x1b[2J"),
                                absl::string_view("\xc2\x9b"),          // C1 CSI
                                absl::string_view("\x80"),              // stray continuation
                                absl::string_view("\xc3"),              // truncated
                                absl::string_view("\xe2\x82"),          // truncated
                                absl::string_view("\xc0\xaf"),          // overlong '/'
                                absl::string_view("\xe0\x80\xaf"),      // overlong '/'
                                absl::string_view("\xed\xa0\x80"),      // surrogate U+D800
                                absl::string_view("\xf4\x90\x80\x80"),  // past U+10FFFF
                                absl::string_view("\xc3\x28")}) {       // bad continuation
    EXPECT_EQ(PrintableUtf8Length(bad), 0u) << absl::CEscape(bad);
  }
}

}  // namespace
}  // namespace perfcast
