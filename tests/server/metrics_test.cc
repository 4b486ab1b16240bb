#include "server/metrics.h"

#include <atomic>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/server/http_get.h"

namespace perfcast::server {
namespace {

using perfcast::testing::HttpGet;
using perfcast::testing::PrometheusSample;
using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;
using perfcast::testing::StalledConnection;

constexpr char kPredict[] = "/perfcast.v1.Predictor/Predict";
constexpr char kRegister[] = "/perfcast.v1.NodeRegistry/Register";

double Sample(const std::string& text, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  absl::StatusOr<double> value = PrometheusSample(text, name, labels);
  EXPECT_TRUE(value.ok()) << value.status() << "\n" << text;
  return value.ok() ? *value : -1;
}

TEST(MetricsTest, CountsRpcsPerMethodAndCode) {
  Metrics metrics;
  for (int i = 0; i < 3; ++i) {
    metrics.RpcStarted(kPredict);
    metrics.RpcFinished(kPredict, "OK", absl::Microseconds(200));
  }
  metrics.RpcStarted(kPredict);
  metrics.RpcFinished(kPredict, "NOT_FOUND", absl::Milliseconds(2));
  metrics.RpcStarted(kRegister);
  metrics.RpcFinished(kRegister, "ALREADY_EXISTS", absl::Milliseconds(1));
  metrics.RpcStarted(kRegister);  // still running

  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_rpc_requests_total", {{"method", kPredict}, {"code", "OK"}}), 3);
  EXPECT_EQ(
      Sample(text, "perfcast_rpc_requests_total", {{"method", kPredict}, {"code", "NOT_FOUND"}}),
      1);
  EXPECT_EQ(Sample(text, "perfcast_rpc_requests_total",
                   {{"method", kRegister}, {"code", "ALREADY_EXISTS"}}),
            1);
  EXPECT_FALSE(
      PrometheusSample(text, "perfcast_rpc_requests_total", {{"method", kRegister}, {"code", "OK"}})
          .ok());
  EXPECT_EQ(Sample(text, "perfcast_rpc_in_flight", {{"method", kPredict}}), 0);
  EXPECT_EQ(Sample(text, "perfcast_rpc_in_flight", {{"method", kRegister}}), 1);
  EXPECT_NE(text.find("# TYPE perfcast_rpc_requests_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE perfcast_rpc_duration_seconds histogram"), std::string::npos);
}

TEST(MetricsTest, DurationsFallIntoBucketsFrom50MicrosecondsTo60Seconds) {
  Metrics metrics;
  const absl::Duration elapsed[] = {absl::Microseconds(40), absl::Microseconds(200),
                                    absl::Milliseconds(3), absl::Seconds(2), absl::Seconds(90)};
  for (absl::Duration d : elapsed) {
    metrics.RpcStarted(kPredict);
    metrics.RpcFinished(kPredict, "OK", d);
  }
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_rpc_duration_seconds_count", {{"method", kPredict}}), 5);
  EXPECT_NEAR(Sample(text, "perfcast_rpc_duration_seconds_sum", {{"method", kPredict}}),
              40e-6 + 200e-6 + 3e-3 + 2 + 90, 1e-9);

  // Every bucket holds the observations at or below its bound.
  std::map<double, double> buckets;  // le -> cumulative count
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "perfcast_rpc_duration_seconds_bucket")) continue;
    const size_t le = line.find("le=\"");
    ASSERT_NE(le, absl::string_view::npos) << line;
    absl::string_view bound = line.substr(le + 4);
    bound = bound.substr(0, bound.find('"'));
    double upper = 0;
    if (bound == "+Inf") {
      upper = 1e300;
    } else {
      ASSERT_TRUE(absl::SimpleAtod(bound, &upper)) << line;
    }
    double count = 0;
    ASSERT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &count)) << line;
    buckets[upper] = count;
  }
  ASSERT_GE(buckets.size(), 10u);
  EXPECT_DOUBLE_EQ(buckets.begin()->first, 50e-6);
  EXPECT_DOUBLE_EQ(std::prev(buckets.end(), 2)->first, 60);
  for (const auto& [upper, count] : buckets) {
    int expected = 0;
    for (absl::Duration d : elapsed) expected += absl::ToDoubleSeconds(d) <= upper ? 1 : 0;
    EXPECT_EQ(count, expected) << "le=" << upper;
  }
}

TEST(MetricsTest, CountsImportResults) {
  Metrics metrics;
  metrics.ImportCommitted(10, 2, 1);
  metrics.ImportCommitted(5, 0, 3);
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_import_profiles_total", {{"result", "stored"}}), 15);
  EXPECT_EQ(Sample(text, "perfcast_import_profiles_total", {{"result", "duplicate"}}), 2);
  EXPECT_EQ(Sample(text, "perfcast_import_profiles_total", {{"result", "rejected"}}), 4);
}

TEST(MetricsTest, ManyDistinctMethodsShareOneOtherSeries) {
  Metrics metrics;
  for (int i = 0; i < 100; ++i) {
    const std::string method = "/x.Y/M" + std::to_string(i);
    metrics.RpcStarted(method);
    metrics.RpcFinished(method, "UNIMPLEMENTED", absl::Microseconds(1));
  }
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_rpc_requests_total",
                   {{"method", "/x.Y/M0"}, {"code", "UNIMPLEMENTED"}}),
            1);
  EXPECT_EQ(
      Sample(text, "perfcast_rpc_requests_total", {{"method", "other"}, {"code", "UNIMPLEMENTED"}}),
      100 - 64);
}

class StoreGaugesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = db::OpenStore(dir_.File("store.db"));
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
    ASSERT_TRUE(store_->RegisterNode(SampleNode("n2")).ok());
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    for (int i = 0; i < 7; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    ASSERT_TRUE((*import)->Commit().ok());
  }

  perfcast::testing::TempDir dir_;
  std::unique_ptr<db::Store> store_;
};

TEST_F(StoreGaugesTest, ReportsTheStoreAndTheServingModels) {
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  db::StoredModel old_version{.name = "default",
                              .target = "t",
                              .cv_mape = 0.5,
                              .created_at_us = now_us - 3'600'000'000,
                              .payload = "{}"};
  db::StoredModel new_version = old_version;
  new_version.cv_mape = 0.12;
  new_version.created_at_us = now_us - 100'000'000;
  db::StoredModel other{.name = "ops",
                        .target = "t",
                        .cv_mape = 0.3,
                        .created_at_us = now_us - 10'000'000,
                        .payload = "{}"};
  ASSERT_TRUE(store_->SaveModel(old_version).ok());
  ASSERT_TRUE(store_->SaveModel(new_version).ok());
  ASSERT_TRUE(store_->SaveModel(other).ok());

  Metrics metrics;
  metrics.WatchStore(*store_, absl::ZeroDuration());
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_profiles"), 7);
  EXPECT_EQ(Sample(text, "perfcast_nodes"), 2);
  EXPECT_EQ(Sample(text, "perfcast_store_size_bytes"),
            static_cast<double>(*store_->ApproximateSizeBytes()));
  // The newest version serves: its age and error, not the first one's.
  const double age = Sample(text, "perfcast_model_age_seconds", {{"name", "default"}});
  EXPECT_GE(age, 100);
  EXPECT_LT(age, 3600);
  EXPECT_DOUBLE_EQ(Sample(text, "perfcast_model_cv_mape", {{"name", "default"}}), 0.12);
  EXPECT_GE(Sample(text, "perfcast_model_age_seconds", {{"name", "ops"}}), 10);
  EXPECT_DOUBLE_EQ(Sample(text, "perfcast_model_cv_mape", {{"name", "ops"}}), 0.3);
  EXPECT_GT(Sample(text, "perfcast_process_resident_bytes"), 0);
}

TEST_F(StoreGaugesTest, NoModelNoModelSamples) {
  Metrics metrics;
  metrics.WatchStore(*store_, absl::ZeroDuration());
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "perfcast_profiles"), 7);
  EXPECT_EQ(text.find("perfcast_model_age_seconds{"), std::string::npos) << text;
  EXPECT_EQ(text.find("perfcast_model_cv_mape{"), std::string::npos) << text;
}

TEST_F(StoreGaugesTest, StoreIsReadAgainOnlyAfterTheCacheAge) {
  Metrics cached;
  cached.WatchStore(*store_, absl::Hours(1));
  Metrics fresh;
  fresh.WatchStore(*store_, absl::ZeroDuration());
  EXPECT_EQ(Sample(cached.Render(), "perfcast_nodes"), 2);
  EXPECT_EQ(Sample(fresh.Render(), "perfcast_nodes"), 2);
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n3")).ok());
  EXPECT_EQ(Sample(cached.Render(), "perfcast_nodes"), 2);
  EXPECT_EQ(Sample(fresh.Render(), "perfcast_nodes"), 3);
}

TEST_F(StoreGaugesTest, ExposerServesTheSameTextOverHttp) {
  Metrics metrics;
  metrics.WatchStore(*store_);
  ASSERT_TRUE(metrics.StartExposer("127.0.0.1:0").ok());
  ASSERT_GT(metrics.exposer_port(), 0);
  metrics.RpcStarted(kPredict);
  metrics.RpcFinished(kPredict, "OK", absl::Milliseconds(1));

  auto response = HttpGet(metrics.exposer_port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(
      Sample(response->body, "perfcast_rpc_requests_total", {{"method", kPredict}, {"code", "OK"}}),
      1);
  EXPECT_EQ(Sample(response->body, "perfcast_profiles"), 7);
  EXPECT_GT(Sample(response->body, "perfcast_store_size_bytes"), 0);

  EXPECT_EQ(metrics.StartExposer("127.0.0.1:0").code(), absl::StatusCode::kFailedPrecondition);
  Metrics second;
  absl::Status taken = second.StartExposer("127.0.0.1:" + std::to_string(metrics.exposer_port()));
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable) << taken;
  EXPECT_EQ(second.exposer_port(), 0);
}

// Two clients that connect and send nothing once held both of civetweb's
// worker threads for its 30 s request timeout: scrapes got no answer.
TEST_F(StoreGaugesTest, StalledClientsDoNotBlockScrapes) {
  Metrics metrics;
  metrics.WatchStore(*store_);
  ASSERT_TRUE(metrics.StartExposer("127.0.0.1:0").ok());
  std::vector<std::unique_ptr<StalledConnection>> stalled;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::unique_ptr<StalledConnection>> c =
        StalledConnection::Open(metrics.exposer_port());
    ASSERT_TRUE(c.ok()) << c.status();
    stalled.push_back(*std::move(c));
  }
  for (int scrape = 0; scrape < 3; ++scrape) {
    auto response = HttpGet(metrics.exposer_port(), "/metrics", absl::Seconds(5));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
  }
}

// 50 clients that connect and send nothing once delayed a scrape to 29.5 s
// (each held one of 8 worker threads for a 5 s request timeout), and 8 that
// reconnected as soon as they were dropped held every thread all the time.
// Here 50 idle connections stay open while 8 more keep reconnecting, and
// each scrape must still be answered within a few seconds.
TEST_F(StoreGaugesTest, ManyIdleAndReconnectingClientsDoNotBlindScrapes) {
  Metrics metrics;
  metrics.WatchStore(*store_);
  ASSERT_TRUE(metrics.StartExposer("127.0.0.1:0").ok());
  const int port = metrics.exposer_port();
  std::vector<std::unique_ptr<StalledConnection>> idle;
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<std::unique_ptr<StalledConnection>> c = StalledConnection::Open(port);
    ASSERT_TRUE(c.ok()) << c.status();
    idle.push_back(*std::move(c));
  }
  std::atomic<bool> scraping = true;
  std::vector<std::thread> reconnecting;
  for (int t = 0; t < 8; ++t) {
    reconnecting.emplace_back([&] {
      // A new idle connection as soon as the last one is dropped; bounded,
      // should the scrapes hang.
      for (int round = 0; round < 200 && scraping; ++round) {
        absl::StatusOr<std::unique_ptr<StalledConnection>> c = StalledConnection::Open(port);
        if (!c.ok()) break;
        (*c)->WaitUntilClosed(absl::Seconds(10));
      }
    });
  }
  for (int scrape = 0; scrape < 3; ++scrape) {
    auto response = HttpGet(port, "/metrics", absl::Seconds(4));
    ASSERT_TRUE(response.ok()) << "scrape " << scrape << ": " << response.status();
    EXPECT_EQ(response->status, 200);
  }
  scraping = false;
  idle.clear();
  for (std::thread& t : reconnecting) t.join();
}

}  // namespace
}  // namespace perfcast::server
