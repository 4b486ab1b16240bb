#include "client/text_input.h"

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

TEST(ParseDecimal, ReadsDecimalNumbersOnly) {
  double value = 0;
  EXPECT_TRUE(ParseDecimal(" -2.5e3 ", &value));
  EXPECT_EQ(value, -2500);
  EXPECT_TRUE(ParseDecimal("+0.125", &value));
  EXPECT_EQ(value, 0.125);
  for (const char* text : {"", " ", "0x10", "0X1P4", "inf", "-infinity", "nan", "nan(1)", "1e999",
                           "1,5", "++1", "1.5ms", "."}) {
    EXPECT_FALSE(ParseDecimal(text, &value)) << text;
  }
}

TEST(ReadBoundedLine, EndlessInputStopsAtTheBound) {
  // What /dev/zero gives: bytes and never a newline.
  std::istringstream in(std::string(10'000, '\0'));
  std::string line;
  absl::StatusOr<bool> read = ReadBoundedLine(in, line, 1, 100);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LE(line.size(), 100u);
}

TEST(Printable, EscapesControlBytesAndCuts) {
  EXPECT_EQ(Printable("plain name"), "plain name");
  EXPECT_EQ(Printable("a\x1b[31mred\n"), "a\\x1b[31mred\\n");
  EXPECT_EQ(Printable(std::string("\xff\0z", 3)), "\\xff\\x00z");
  EXPECT_EQ(Printable(std::string(500, 'y'), 10), "yyyyyyyyyy... (490 more bytes)");
  EXPECT_EQ(Printable("3 \xc3\x97 4 \xe2\x86\x92 ok"), "3 \xc3\x97 4 \xe2\x86\x92 ok");  // UTF-8 kept
  EXPECT_EQ(Printable("\xc2\x9b" "31m"), "\\xc2\\x9b31m");  // C1 CSI escaped
}

}  // namespace
}  // namespace perfcast::client
