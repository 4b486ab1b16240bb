#include "client/output.h"

#include <sstream>

#include "gtest/gtest.h"
#include "models/csv_reader.h"

namespace perfcast::client {
namespace {

using Json = nlohmann::json;

TEST(ToYamlTest, WritesBlockStyleAndQuotesWhatYamlWouldMisread) {
  const Json value = {{"name", "h200-1"},
                      {"count", 8},
                      {"ok", true},
                      {"labels", Json::object()},
                      {"notes", {"fits", "needs: 3 GiB"}},
                      {"version", "1.5"},
                      {"flag", "yes"},
                      {"empty", ""},
                      {"escape", "a\x1b[2Jb"},
                      {"gpu", {{"model", "H200-SXM-141GB"}, {"tdp", 700.5}}},
                      {"rows", {{{"a", 1}}, {{"a", 2}}}}};
  EXPECT_EQ(ToYaml(value),
            "count: 8\n"
            "empty: \"\"\n"
            "escape: \"a\\u001b[2Jb\"\n"
            "flag: \"yes\"\n"
            "gpu:\n"
            "  model: H200-SXM-141GB\n"
            "  tdp: 700.5\n"
            "labels: {}\n"
            "name: h200-1\n"
            "notes:\n"
            "  - fits\n"
            "  - \"needs: 3 GiB\"\n"
            "ok: true\n"
            "rows:\n"
            "  -\n"
            "    a: 1\n"
            "  -\n"
            "    a: 2\n"
            "version: \"1.5\"\n");
}

TEST(FlattenForCsvTest, NestedObjectsBecomeDottedColumns) {
  const Json value = {{"code", 0},
                      {"prediction", {{"iteration_ms", 1.5}, {"notes", {"a", "b"}}}},
                      {"parts", {{{"x", 1}}}},
                      {"error", nullptr}};
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"code", "0"},
      {"error", ""},
      {"parts", "[{\"x\":1}]"},
      {"prediction.iteration_ms", "1.5"},
      {"prediction.notes", "a;b"}};
  EXPECT_EQ(FlattenForCsv(value), expected);
}

TEST(StructuredWriterTest, JsonIsOneDocumentOrOneLinePerRecord) {
  std::ostringstream out;
  StructuredWriter writer(OutputFormat::kJson, out, /*escape_controls=*/false);
  writer.Record({{"name", "a"}});
  writer.Record({{"name", "b"}});
  EXPECT_EQ(out.str(), "{\"name\":\"a\"}\n{\"name\":\"b\"}\n");
}

TEST(StructuredWriterTest, YamlRecordsAreDocuments) {
  std::ostringstream out;
  StructuredWriter writer(OutputFormat::kYaml, out, /*escape_controls=*/false);
  writer.Record({{"name", "a"}});
  writer.Record({{"name", "b"}});
  EXPECT_EQ(out.str(), "---\nname: a\n---\nname: b\n");
}

TEST(StructuredWriterTest, CsvReadsBackThroughTheProjectsReader) {
  std::ostringstream out;
  StructuredWriter writer(OutputFormat::kCsv, out, /*escape_controls=*/false);
  writer.Record({{"name", "a,\"b\""}, {"gpu", {{"model", "L4"}}}});
  writer.Record({{"name", "line\nbreak"}, {"extra", 1}});
  std::istringstream in(out.str());
  models::CsvReader reader(in);
  std::vector<std::string> row;
  ASSERT_TRUE(*reader.Next(row));
  EXPECT_EQ(row, (std::vector<std::string>{"gpu.model", "name"}));
  ASSERT_TRUE(*reader.Next(row));
  EXPECT_EQ(row, (std::vector<std::string>{"L4", "a,\"b\""}));
  ASSERT_TRUE(*reader.Next(row));
  EXPECT_EQ(row, (std::vector<std::string>{"", "line\nbreak"}));
  EXPECT_FALSE(*reader.Next(row));
}

TEST(StructuredWriterTest, CsvToATerminalEscapesControlCharacters) {
  std::ostringstream out;
  StructuredWriter writer(OutputFormat::kCsv, out, /*escape_controls=*/true);
  writer.Document({{"name", "evil\x1b[2J"}});
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("evil\\x1b[2J"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace perfcast::client
