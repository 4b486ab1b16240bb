#include "client/table.h"

#include <sstream>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

TEST(TableTest, WithoutALimitColumnsTakeTheirWidestCell) {
  Table table({"GPU", "NOTE"});
  table.AddRow({"H200-SXM-141GB", "fits"});
  std::ostringstream out;
  table.Print(out, /*max_width=*/0);
  EXPECT_EQ(out.str(), "GPU             NOTE\nH200-SXM-141GB  fits\n");
}

TEST(TableTest, AWideTableWrapsItsWidestColumnToTheWidth) {
  Table table({"GPU", "VERDICT"});
  table.AddRow({"L4-24GB", "does not fit: needs 30.1 GiB, the GPU has 24 GiB"});
  std::ostringstream out;
  table.Print(out, /*max_width=*/40);
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_GT(lines.size(), 2u) << out.str();
  for (const std::string& line : lines) EXPECT_LE(line.size(), 40u) << out.str();
  EXPECT_EQ(lines[1], "L4-24GB  does not fit: needs 30.1 GiB,");
  EXPECT_EQ(lines[2], "         the GPU has 24 GiB");
}

// A layout's name has a middle dot: one column, two bytes.
TEST(TableTest, ColumnsAreCountedInCharactersNotBytes) {
  Table table({"LAYOUT", "GPUS"});
  table.AddRow({"dp4·tp2·zero3", "8"});
  table.AddRow({"dp1", "1"});
  std::ostringstream out;
  table.Print(out, /*max_width=*/0);
  EXPECT_EQ(out.str(),
            "LAYOUT         GPUS\n"
            "dp4·tp2·zero3  8\n"
            "dp1            1\n");
  EXPECT_EQ(WrapCell("dp4·tp2·zero3", 13), (std::vector<std::string>{"dp4·tp2·zero3"}));
}

TEST(TableTest, ControlCharactersAreEscaped) {
  Table table({"NAME"});
  table.AddRow({"evil\x1b[2J"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(), "NAME\nevil\\x1b[2J\n");
}

TEST(FitWidthsTest, NarrowsTheWidestColumnsFirstAndNeverBelowTheMinimum) {
  EXPECT_EQ(FitWidths({10, 30}, 0), (std::vector<size_t>{10, 30}));
  EXPECT_EQ(FitWidths({10, 30}, 42), (std::vector<size_t>{10, 30}));
  EXPECT_EQ(FitWidths({10, 30}, 30), (std::vector<size_t>{10, 18}));
  EXPECT_EQ(FitWidths({20, 30}, 30), (std::vector<size_t>{14, 14}));
  EXPECT_EQ(FitWidths({20, 30}, 5), (std::vector<size_t>{kMinWrapWidth, kMinWrapWidth}));
}

TEST(WrapCellTest, BreaksAtSpacesAndAfterDashesNeverInsideACharacter) {
  EXPECT_EQ(WrapCell("short", 10), (std::vector<std::string>{"short"}));
  EXPECT_EQ(WrapCell("one two three", 8), (std::vector<std::string>{"one two", "three"}));
  EXPECT_EQ(WrapCell("H200-SXM-141GB", 10), (std::vector<std::string>{"H200-SXM-", "141GB"}));
  EXPECT_EQ(WrapCell("abcdefghij", 4), (std::vector<std::string>{"abcd", "efgh", "ij"}));
  // "×" is two bytes and one column: a cut never falls inside it.
  EXPECT_EQ(WrapCell("8\xc3\x97H200", 2), (std::vector<std::string>{"8\xc3\x97", "H2", "00"}));
  EXPECT_EQ(WrapCell("ab\xc3\x97" "c", 2), (std::vector<std::string>{"ab", "\xc3\x97" "c"}));
}

}  // namespace
}  // namespace perfcast::client
