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
      absl::StrCat(std::string(1 << 20, 'n'), ",lstm,,64,fp32,train,1,1"),  // 1 MB node name
      absl::StrCat("n1,", std::string(1 << 20, 'f'), ",,64,fp32,train,1,1"),  // 1 MB family
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
                   std::string(1 << 20, 'v'), R"("})"),
  };
  std::string text;
  for (const std::string& record : records) absl::StrAppend(&text, record, "\n");
  Read read = ReadText(text, ProfileFormat::kJsonLines);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.bad.size(), records.size());
  EXPECT_TRUE(read.profiles.empty());
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
  p.conditions = {.dispatch_ops_per_s = 187654.321, .launch_latency_us = 2.1,
                  .cpu_single_thread_score = 1.7, .h2d_pinned_gbs = 53.1,
                  .h2d_pageable_gbs = 17.9, .board_power_w = 612.4, .sm_clock_mhz = 1980,
                  .gpu_temperature_c = 58};
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

}  // namespace
}  // namespace perfcast::client
