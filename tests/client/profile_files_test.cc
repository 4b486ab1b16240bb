// The profile file readers on hostile input: every refused record is
// reported with its line and a reason, and nothing refused is delivered.
#include "client/profile_files.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

struct Read {
  absl::Status status;
  std::vector<models::Profile> profiles;
  std::vector<std::pair<int64_t, std::string>> bad;
};

Read ReadText(const std::string& text, ProfileFormat format) {
  Read read;
  ProfileSink sink;
  sink.node = [](const models::Node&) {};
  sink.profile = [&](int64_t, const models::Profile& p) { read.profiles.push_back(p); };
  sink.bad_record = [&](int64_t line, const std::string& reason) { read.bad.emplace_back(line, reason); };
  std::istringstream in(text);
  read.status = ReadProfiles(in, "test", format, sink);
  return read;
}

constexpr char kHeader[] = "node,family,params,batch_size,precision,phase,mean_ms,repeats\n";

TEST(ProfileFilesTest, CsvRefusesHostileNumbersLineByLine) {
  const std::vector<std::string> rows = {
      "n1,lstm,,64,fp32,train,nan,1",          // NaN time
      "n1,lstm,,64,fp32,train,inf,1",          // infinite time
      "n1,lstm,,64,fp32,train,-inf,1",
      "n1,lstm,,64,fp32,train,-1,1",           // negative time
      "n1,lstm,,64,fp32,train,1e300,1",        // absurd time
      "n1,lstm,,1000000000000000000,fp32,train,1,1",  // batch 1e18
      "n1,lstm,,-64,fp32,train,1,1",           // negative batch
      "n1,lstm,seq_len=4611686018427387904,64,fp32,train,1,1",  // seq len 2^62
      "n1,lstm,layers=99999999999999999999,64,fp32,train,1,1",  // beyond int64
      "n1,lstm,,64,fp7,train,1,1",             // unknown precision
      "n1,lstm,,64,fp32,phase99,1,1",          // unknown phase
      "n1,lstm,,64,fp32,train,1,1e300",        // absurd repeats
      "n1,lstm,,64,fp32,train,1,nan",
      "n1,lstm,,64,fp32,train,1,99999999999",  // repeats beyond int
      ",lstm,,64,fp32,train,1,1",              // empty node
      "n1,,,64,fp32,train,1,1",                // empty family
      absl::StrCat(std::string(1 << 19, 'n'), ",lstm,,64,fp32,train,1,1"),  // 1 MB node name
      absl::StrCat("n1,", std::string(1 << 19, 'f'), ",,64,fp32,train,1,1"),  // 1 MB family
  };
  std::string text = kHeader;
  for (const std::string& row : rows) absl::StrAppend(&text, row, "\n");
  absl::StrAppend(&text, "n1,lstm,layers=2,64,bf16,train,2.5,3\n");  // the one good row
  Read read = ReadText(text, ProfileFormat::kCsv);
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_EQ(read.bad.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(read.bad[i].first, static_cast<int64_t>(i) + 2) << rows[i].substr(0, 60);
    EXPECT_FALSE(read.bad[i].second.empty());
  }
  ASSERT_EQ(read.profiles.size(), 1u);
  EXPECT_EQ(read.profiles[0].iteration.mean_ms, 2.5);
  EXPECT_EQ(read.profiles[0].repeats, 3);
  EXPECT_EQ(read.profiles[0].workload.precision, models::Precision::kBf16Amp);
}

TEST(ProfileFilesTest, JsonLinesRefusesHostileNumbers) {
  const std::vector<std::string> records = {
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1e999})",
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":-1})",
      R"({"node":"n1","family":"lstm","batch_size":1000000000000000000,"mean_ms":1})",
      R"({"node":"n1","family":"lstm","batch_size":18446744073709551615,"mean_ms":1})",
      R"({"node":"n1","family":"lstm","params":{"seq_len":4611686018427387904},"batch_size":64,"mean_ms":1})",
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1,"precision":"fp7"})",
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1,"phase":99})",
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1,"repeats":1e300})",
      R"({"node":"","family":"lstm","batch_size":64,"mean_ms":1})",
      R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":"NaN"})",
      absl::StrCat(R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1,"agent_version":")",
                   std::string(1 << 19, 'v'), R"("})"),
  };
  std::string text;
  for (const std::string& record : records) absl::StrAppend(&text, record, "\n");
  Read read = ReadText(text, ProfileFormat::kJsonLines);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.bad.size(), records.size());
  EXPECT_TRUE(read.profiles.empty());
}

// A 300 MB file without a newline once took the CLI to 1.5 GB and came back
// as a 300 MB error message.
TEST(ProfileFilesTest, OverlongLinesEndTheReadWithABoundedError) {
  for (ProfileFormat format : {ProfileFormat::kCsv, ProfileFormat::kJsonLines}) {
    const std::string first = format == ProfileFormat::kCsv ? std::string(kHeader) : "\n";
    Read read = ReadText(first + std::string(3 << 20, 'x') + "\n", format);
    EXPECT_EQ(read.status.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(read.status.message().find("line 2 is longer than"), std::string::npos)
        << read.status;
    EXPECT_LT(read.status.message().size(), 200u);
    EXPECT_TRUE(read.profiles.empty());
  }
  // /dev/zero: NUL bytes and no newline at all, not even a header.
  Read read = ReadText(std::string(3 << 20, '\0'), ProfileFormat::kCsv);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kResourceExhausted);
}

// Spreadsheets write "CSV UTF-8" with a byte-order mark and CRLF line ends.
TEST(ProfileFilesTest, CsvWithByteOrderMarkCrlfAndQuotesReads) {
  Read read = ReadText(
      "\xEF\xBB\xBFnode,family,params,batch_size,precision,phase,mean_ms,repeats\r\n"
      "n1,lstm,\"layers=2;hidden=64\",64,bf16,train,2.5,3\r\n",
      ProfileFormat::kCsv);
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_TRUE(read.bad.empty()) << read.bad[0].second;
  ASSERT_EQ(read.profiles.size(), 1u);
  EXPECT_EQ(read.profiles[0].workload.params.at("hidden"), 64);
}

TEST(ProfileFilesTest, CsvExportOfAcceptedRowsReadsBackIdentical) {
  Read read = ReadText(absl::StrCat(kHeader, "\"n,\r1\",lstm,layers=2,64,bf16,train,2.5,3\n",
                                    "n2,gemm,m=64,1,fp32,inference,0.125,1\n"),
                       ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 1u);  // gemm is an op family: kind model refuses it
  std::ostringstream out;
  auto writer = ProfileWriter::Create(ProfileFormat::kCsv, out);
  ASSERT_TRUE(writer.ok());
  (*writer)->Write(read.profiles[0]);
  Read again = ReadText(out.str(), ProfileFormat::kCsv);
  ASSERT_EQ(again.profiles.size(), 1u) << out.str();
  EXPECT_EQ(again.profiles[0], read.profiles[0]);
  EXPECT_EQ(again.profiles[0].node_name, "n,\r1");
}

TEST(ProfileFilesTest, JsonLinesExportOfNonUtf8TextDoesNotThrow) {
  models::Profile p;
  p.node_name = "n\xff\xfe";  // a CSV file need not be UTF-8
  p.workload.family = "lstm";
  p.iteration = {.count = 1, .mean_ms = 1, .median_ms = 1, .p95_ms = 1, .min_ms = 1, .max_ms = 1};
  std::ostringstream out;
  auto writer = ProfileWriter::Create(ProfileFormat::kJsonLines, out);
  ASSERT_TRUE(writer.ok());
  (*writer)->Write(p);
  EXPECT_NE(out.str().find("\"node\""), std::string::npos);
}

// A profile of the current method with every run condition and every
// optional value set comes back identical from both text formats.
TEST(ProfileFilesTest, EveryColumnRoundTripsThroughCsvAndJsonLines) {
  models::Profile p;
  p.node_name = "h200";
  p.workload.family = "lstm";
  p.workload.params = {{"layers", 2}};
  p.workload.batch_size = 64;
  p.workload.precision = models::Precision::kBf16Amp;
  p.iteration = {.count = 40, .mean_ms = 2.5, .median_ms = 2.4, .p95_ms = 2.9,
                 .stddev_ms = 0.1, .min_ms = 2.3, .max_ms = 3.1};
  p.phases = {.data_load_ms = 0.4, .h2d_ms = 0.1, .forward_ms = 0.7, .backward_ms = 1.3,
              .optimizer_ms = 0.2};
  p.repeats = 5;
  p.repeat_cv = 0.011;
  p.epoch_s = 12.5;
  p.throughput_per_s = 25600;
  p.peak_memory_bytes = 1.5e9;
  p.achieved_tflops = 31.25;
  p.roofline_fraction = 0.125;
  p.measured_at_us = -7;
  p.agent_version = "perfcast-agent 0.2.0";
  p.method_version = models::kCurrentMethodVersion;
  p.loop = "cpp";
  p.conditions = {.dispatch_ops_per_s = 187654.321, .launch_latency_us = 2.1,
                  .cpu_single_thread_score = 1.7, .h2d_pinned_gbs = 53.1,
                  .h2d_pageable_gbs = 17.9, .board_power_w = 612.4, .sm_clock_mhz = 1980,
                  .gpu_temperature_c = 58, .python_op_us = 8.125, .torchscript_op_us = 5.375};
  p.content_hash = models::ComputeContentHash(p);
  for (ProfileFormat format : {ProfileFormat::kCsv, ProfileFormat::kJsonLines}) {
    std::ostringstream out;
    auto writer = ProfileWriter::Create(format, out);
    ASSERT_TRUE(writer.ok());
    (*writer)->Write(p);
    Read again = ReadText(out.str(), format);
    ASSERT_EQ(again.profiles.size(), 1u) << out.str();
    EXPECT_EQ(again.profiles[0], p) << out.str();
  }
}

// Files written before method versions existed have none of the new
// columns: they read as method 1 without run conditions and keep their
// hash; a bad method version is refused with its line.
TEST(ProfileFilesTest, MethodVersionDefaultsToOneAndIsChecked) {
  Read read = ReadText(absl::StrCat(kHeader, "n1,lstm,layers=2,64,bf16,train,2.5,3\n"),
                       ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 1u);
  EXPECT_EQ(read.profiles[0].method_version, 1);
  EXPECT_EQ(read.profiles[0].conditions, models::RunConditions{});
  read = ReadText(
      "node,family,batch_size,mean_ms,method_version,board_power_w\n"
      "n1,lstm,64,2.5,2,450\n"
      "n1,lstm,64,2.5,0,\n"
      "n1,lstm,64,2.5,9,\n"
      "n1,lstm,64,2.5,two,\n"
      "n1,lstm,64,2.5,99999999999,\n"
      "n1,lstm,64,2.5,2,-3\n",
      ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 1u);
  EXPECT_EQ(read.profiles[0].method_version, 2);
  EXPECT_EQ(read.profiles[0].conditions.board_power_w, 450);
  ASSERT_EQ(read.bad.size(), 5u);
  EXPECT_EQ(read.bad[0].first, 3);
  EXPECT_NE(read.bad[0].second.find("method_version"), std::string::npos) << read.bad[0].second;
  EXPECT_NE(read.bad[4].second.find("board_power_w"), std::string::npos) << read.bad[4].second;
}

// The loop column: absent or empty is the default (MeasuredLoop's), a name
// ParseLoop knows is stored by its one name, anything else is refused with
// its line; JSON Lines take the same key.
TEST(ProfileFilesTest, LoopIsNamedOrRefusedWithItsLine) {
  Read read = ReadText(
      "node,family,batch_size,mean_ms,loop\n"
      "n1,lstm,64,2.5,\n"
      "n1,lstm,64,2.5,cpp\n"
      "n1,lstm,64,2.5,Python\n"
      "n1,lstm,64,2.5,libtorch\n"
      "n1,lstm,64,2.5,java\n",
      ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 4u);
  EXPECT_EQ(read.profiles[0].loop, "");
  EXPECT_EQ(models::MeasuredLoop(read.profiles[0]), models::Loop::kPython);
  EXPECT_EQ(read.profiles[1].loop, "cpp");
  EXPECT_EQ(models::MeasuredLoop(read.profiles[1]), models::Loop::kCpp);
  EXPECT_EQ(read.profiles[2].loop, "python");
  EXPECT_EQ(read.profiles[3].loop, "cpp");
  ASSERT_EQ(read.bad.size(), 1u);
  EXPECT_EQ(read.bad[0].first, 6);
  EXPECT_NE(read.bad[0].second.find("unknown loop 'java' (expected python or cpp)"),
            std::string::npos)
      << read.bad[0].second;
  read = ReadText(R"({"node": "n1", "family": "lstm", "batch_size": 64, "mean_ms": 2.5, )"
                  R"("loop": "cpp"})"
                  "\n",
                  ProfileFormat::kJsonLines);
  ASSERT_EQ(read.profiles.size(), 1u) << (read.bad.empty() ? "" : read.bad[0].second);
  EXPECT_EQ(read.profiles[0].loop, "cpp");
}

// strtod reads "0x10" as 16 and "inf" as infinity; a time in a file is a
// decimal number or nothing.
TEST(ProfileFilesTest, NumbersAreDecimalOnly) {
  const std::vector<std::string> means = {"0x10", "0X1p4", "infinity", "1,5", "1.5ms", "--1"};
  std::string text = kHeader;
  for (const std::string& mean : means) {
    absl::StrAppend(&text, "n1,lstm,,64,fp32,train,\"", mean, "\",1\n");
  }
  absl::StrAppend(&text, "n1,lstm,,64,fp32,train, +1.5e1 ,1\n");  // the one good row
  Read read = ReadText(text, ProfileFormat::kCsv);
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_EQ(read.bad.size(), means.size());
  for (const auto& [line, reason] : read.bad) {
    EXPECT_NE(reason.find("mean_ms must be a decimal number"), std::string::npos) << reason;
  }
  ASSERT_EQ(read.profiles.size(), 1u);
  EXPECT_EQ(read.profiles[0].iteration.mean_ms, 15);
}

// A time from the far future (INT64_MAX microseconds) was stored.
TEST(ProfileFilesTest, MeasurementTimesPastTomorrowAreRefused) {
  Read read = ReadText(
      "node,family,batch_size,mean_ms,measured_at_us\n"
      "n1,lstm,64,2.5,9223372036854775807\n"
      "n1,lstm,64,2.5,-9223372036854775808\n"
      "n1,lstm,64,2.5,1760000000000000\n",
      ProfileFormat::kCsv);
  ASSERT_EQ(read.bad.size(), 2u);
  EXPECT_NE(read.bad[0].second.find("measured_at_us"), std::string::npos) << read.bad[0].second;
  ASSERT_EQ(read.profiles.size(), 1u);
}

// An empty .csv was refused while an empty .jsonl or a CSV header alone
// imported nothing and succeeded; every format now refuses a file without
// a record.
TEST(ProfileFilesTest, FilesWithoutRecordsAreRefusedInEveryFormat) {
  for (const auto& [text, format] : std::vector<std::pair<std::string, ProfileFormat>>{
           {"", ProfileFormat::kCsv},
           {kHeader, ProfileFormat::kCsv},
           {std::string(kHeader) + "\n \n", ProfileFormat::kCsv},
           {"", ProfileFormat::kJsonLines},
           {"\n  \n", ProfileFormat::kJsonLines}}) {
    Read read = ReadText(text, format);
    EXPECT_EQ(read.status.code(), absl::StatusCode::kInvalidArgument) << "'" << text << "'";
    EXPECT_NE(read.status.message().find("no records"), std::string::npos) << read.status;
  }
}

// An export names each profile's GPU; reading it back announces the node
// once, on its catalog GPU, so that an importer can register it where the
// server lacks it.
TEST(ProfileFilesTest, ExportsNameTheGpuAndAnnounceTheirNodes) {
  Read read = ReadText(absl::StrCat(kHeader, "h200-a,lstm,layers=2,64,bf16,train,2.5,3\n"),
                       ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 1u);
  for (ProfileFormat format : {ProfileFormat::kCsv, ProfileFormat::kJsonLines}) {
    std::ostringstream out;
    auto writer = ProfileWriter::Create(format, out);
    ASSERT_TRUE(writer.ok());
    (*writer)->Write(read.profiles[0], "H200-SXM-141GB");
    (*writer)->Write(read.profiles[0], "H200-SXM-141GB");
    EXPECT_NE(out.str().find("H200-SXM-141GB"), std::string::npos) << out.str();
    std::vector<models::Node> announced;
    int profiles = 0;
    ProfileSink sink;
    sink.node = [](const models::Node&) { ADD_FAILURE() << "a node row is no catalog row"; };
    sink.node_if_absent = [&](const models::Node& node) { announced.push_back(node); };
    sink.profile = [&](int64_t, const models::Profile& p) {
      ++profiles;
      EXPECT_EQ(p.node_name, "h200-a");
    };
    sink.bad_record = [](int64_t line, const std::string& reason) { ADD_FAILURE() << reason; };
    std::istringstream in(out.str());
    ASSERT_TRUE(ReadProfiles(in, "export", format, sink).ok());
    EXPECT_EQ(profiles, 2);
    ASSERT_EQ(announced.size(), 1u);
    EXPECT_EQ(announced[0].name, "h200-a");
    EXPECT_EQ(announced[0].gpu.model, "H200-SXM-141GB");
  }
}

// export --format csv to a terminal printed stored control characters raw
// (an agent version with an escape sequence recoloured the screen); a file
// keeps them, so that it imports back unchanged.
TEST(ProfileFilesTest, TerminalOutputEscapesControlCharacters) {
  Read read = ReadText(
      "node,family,batch_size,mean_ms,agent_version\n"
      "n1,lstm,64,2.5,\"agent\x1b[31m\x07\xc2\x9b[2J\"\n",
      ProfileFormat::kCsv);
  ASSERT_EQ(read.profiles.size(), 1u);
  for (ProfileFormat format : {ProfileFormat::kCsv, ProfileFormat::kJsonLines}) {
    std::ostringstream terminal, file;
    auto to_terminal = ProfileWriter::Create(format, terminal, /*to_terminal=*/true);
    auto to_file = ProfileWriter::Create(format, file);
    ASSERT_TRUE(to_terminal.ok() && to_file.ok());
    (*to_terminal)->Write(read.profiles[0]);
    (*to_file)->Write(read.profiles[0]);
    for (char control : {'\x1b', '\x07'}) {
      EXPECT_EQ(terminal.str().find(control), std::string::npos) << terminal.str();
    }
    EXPECT_EQ(terminal.str().find("\xc2\x9b"), std::string::npos) << terminal.str();
    Read again = ReadText(file.str(), format);
    ASSERT_EQ(again.profiles.size(), 1u);
    EXPECT_EQ(again.profiles[0].agent_version, read.profiles[0].agent_version);
  }
}

}  // namespace
}  // namespace perfcast::client
