#include "models/csv_reader.h"

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::models {
namespace {

struct Records {
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;  // where each row begins
  absl::Status error;
};

Records ReadAll(const std::string& text, CsvReader::Options options = {}) {
  std::istringstream in(text);
  CsvReader reader(in, options);
  Records records;
  std::vector<std::string> fields;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(fields);
    if (!more.ok()) {
      records.error = more.status();
      return records;
    }
    if (!*more) return records;
    records.rows.push_back(fields);
    records.lines.push_back(reader.line_number());
  }
}

TEST(CsvReader, ByteOrderMarkCrlfAndQuotedFields) {
  const Records r = ReadAll(
      "\xEF\xBB\xBFgpu,params,epochs\r\n"
      "H100,\"layers=2,hidden=64\",3\r\n"
      "\r\n"
      "\"A \"\"quoted\"\" name\",,1\n");
  ASSERT_TRUE(r.error.ok()) << r.error;
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0], (std::vector<std::string>{"gpu", "params", "epochs"}));
  EXPECT_EQ(r.rows[1], (std::vector<std::string>{"H100", "layers=2,hidden=64", "3"}));
  EXPECT_EQ(r.rows[2], (std::vector<std::string>{"A \"quoted\" name", "", "1"}));
  EXPECT_EQ(r.lines, (std::vector<int64_t>{1, 2, 4}));
}

// RFC 4180: a quoted field holds line breaks (a spreadsheet cell with two
// lines); the CLI's reader refused them before this reader replaced it.
TEST(CsvReader, QuotedFieldsSpanLines) {
  const Records r = ReadAll(
      "name,note\n"
      "a,\"first line\r\nsecond, line\"\n"
      "b,\"x\n\ny\"\n"
      "c,last");
  ASSERT_TRUE(r.error.ok()) << r.error;
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[1], (std::vector<std::string>{"a", "first line\r\nsecond, line"}));
  EXPECT_EQ(r.rows[2], (std::vector<std::string>{"b", "x\n\ny"}));
  EXPECT_EQ(r.rows[3], (std::vector<std::string>{"c", "last"}));
  EXPECT_EQ(r.lines, (std::vector<int64_t>{1, 2, 4, 7}));
}

TEST(CsvReader, CommentLinesOnlyWhenAsked) {
  const std::string text = "# a comment, with a comma\na,b\n\"# not\",c\n";
  const Records with = ReadAll(text, {.comment_lines = true});
  ASSERT_EQ(with.rows.size(), 2u);
  EXPECT_EQ(with.rows[0], (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(with.rows[1], (std::vector<std::string>{"# not", "c"}));
  EXPECT_EQ(ReadAll(text).rows.size(), 3u);
}

TEST(CsvReader, RecordsPastTheBoundEndTheReadWithAClearError) {
  const Records r = ReadAll("a,b\n" + std::string(1000, 'x') + "\nc,d\n", {.max_record_bytes = 64});
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.error.message().find("line 2 is longer than 64 bytes"), std::string::npos)
      << r.error;
  // A quote never closed runs on to the bound, not to the end of memory.
  const Records open = ReadAll("a,\"b\n" + std::string(1000, 'x') + "\n", {.max_record_bytes = 64});
  EXPECT_EQ(open.error.code(), absl::StatusCode::kResourceExhausted);
}

TEST(CsvReader, AQuoteOpenAtTheEndIsAnError) {
  const Records r = ReadAll("a,b\nc,\"d\ne,f\n");
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.error.message().find("line 2"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace perfcast::models
