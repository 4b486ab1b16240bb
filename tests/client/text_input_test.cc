#include "client/text_input.h"

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

std::vector<std::vector<std::string>> ReadAll(const std::string& text, absl::Status* error) {
  std::istringstream in(text);
  CsvReader reader(in, /*max_line_bytes=*/64);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> fields;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(fields);
    if (!more.ok()) {
      *error = more.status();
      return rows;
    }
    if (!*more) return rows;
    rows.push_back(fields);
  }
}

TEST(CsvReader, ByteOrderMarkCrlfAndQuotedFields) {
  absl::Status error;
  const auto rows = ReadAll(
      "\xEF\xBB\xBFgpu,params,epochs\r\n"
      "H100,\"layers=2,hidden=64\",3\r\n"
      "\r\n"
      "\"A \"\"quoted\"\" name\",,1\n",
      &error);
  ASSERT_TRUE(error.ok()) << error;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"gpu", "params", "epochs"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"H100", "layers=2,hidden=64", "3"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"A \"quoted\" name", "", "1"}));
}

TEST(CsvReader, LinesPastTheBoundEndTheReadWithAClearError) {
  absl::Status error;
  const auto rows = ReadAll("a,b\n" + std::string(1000, 'x') + "\nc,d\n", &error);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(error.message().find("line 2 is longer than 64 bytes"), std::string::npos) << error;
}

TEST(CsvReader, UnterminatedQuoteFailsThatRecordOnly) {
  std::istringstream in("a,\"b\nc,d\n");
  CsvReader reader(in);
  std::vector<std::string> fields;
  EXPECT_EQ(reader.Next(fields).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<bool> next = reader.Next(fields);
  ASSERT_TRUE(next.ok() && *next);
  EXPECT_EQ(reader.line_number(), 2);
  EXPECT_EQ(fields, (std::vector<std::string>{"c", "d"}));
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
