// What a failed import tells the user: nothing stored, or an outcome the
// client cannot know (the call failed after the whole stream was sent, so
// the server may have committed), against a stand-in ProfileStore.
#include "client/importer.h"

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "tests/db/test_util.h"

namespace perfcast::client {
namespace {

// Reads every message, then fails with `status`: a server that died or timed
// out after (or before) its commit looks like this from the client.
class FailingStore final : public v1::ProfileStore::Service {
 public:
  explicit FailingStore(grpc::Status status) : status_(std::move(status)) {}
  grpc::Status Import(grpc::ServerContext*, grpc::ServerReader<v1::ImportRequest>* reader,
                      v1::ImportResponse*) override {
    v1::ImportRequest request;
    while (reader->Read(&request)) {
    }
    return status_;
  }

 private:
  grpc::Status status_;
};

class ImporterTest : public ::testing::Test {
 protected:
  absl::Status ImportAgainst(grpc::Status status, const std::string& csv) {
    return ImportReportAgainst(std::move(status), csv, ProfileFormat::kCsv).status();
  }

  absl::StatusOr<ImportReport> ImportReportAgainst(grpc::Status status, const std::string& text,
                                                   ProfileFormat format) {
    FailingStore service(std::move(status));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    EXPECT_GT(port, 0);
    const std::string path = dir_.File("profiles");
    std::ofstream(path) << text;
    auto channel =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    absl::StatusOr<ImportReport> report = ImportFiles(channel, {{path, format}}, ImportOptions{});
    server->Shutdown();
    return report;
  }

  testing::TempDir dir_;
};

constexpr char kCsv[] =
    "node,family,params,batch_size,precision,phase,mean_ms\n"
    "n1,lstm,layers=2,64,bf16-amp,train,3.5\n";

// The CLI used to say "nothing imported" here; 6 of 20 kills in the commit
// window had stored the import.
TEST_F(ImporterTest, ConnectionLostAfterTheStreamIsAnUnknownOutcome) {
  for (grpc::StatusCode code : {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::DEADLINE_EXCEEDED,
                                grpc::StatusCode::CANCELLED}) {
    absl::Status status = ImportAgainst(grpc::Status(code, "socket closed"), kCsv);
    EXPECT_EQ(static_cast<int>(status.code()), static_cast<int>(code));
    EXPECT_TRUE(absl::EndsWith(status.message(), kOutcomeUnknown)) << status;
    EXPECT_EQ(status.message().find("nothing imported"), std::string::npos) << status;
  }
}

TEST_F(ImporterTest, RefusalsAndFileErrorsStoredNothing) {
  absl::Status refused =
      ImportAgainst(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad node"), kCsv);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::EndsWith(refused.message(), kNothingImported)) << refused;
  absl::Status header = ImportAgainst(grpc::Status::OK, "node,family,size\nn1,lstm,3\n");
  EXPECT_EQ(header.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::EndsWith(header.message(), kNothingImported)) << header;
}

// 5M lines of `{}` once took the CLI to 611 MB (every rejection kept) and
// /dev/urandom read as JSON Lines never ended: rejections past the kept ones
// are counted only, and a file whose records mostly cannot be read stops
// the import with nothing stored.
TEST_F(ImporterTest, RejectionsAreCappedAndUnreadableFilesStop) {
  std::string some_bad;
  for (int i = 0; i < 3000; ++i) some_bad += "{}\n";
  some_bad += R"({"node":"n1","family":"lstm","batch_size":64,"mean_ms":1})" "\n";
  absl::StatusOr<ImportReport> report =
      ImportReportAgainst(grpc::Status::OK, some_bad, ProfileFormat::kJsonLines);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->records, 3001);
  EXPECT_EQ(report->rejected, 3000);
  ASSERT_EQ(report->first_rejections.size(), 1000u);
  EXPECT_EQ(report->first_rejections.front().line, 1);
  EXPECT_EQ(report->first_rejections.back().line, 1000);

  std::string garbage;
  for (int i = 0; i < 20000; ++i) garbage += "\x89PNG\x1a\n";
  absl::StatusOr<ImportReport> stopped =
      ImportReportAgainst(grpc::Status::OK, garbage, ProfileFormat::kJsonLines);
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(stopped.status().message().find("not a profile file"), std::string::npos)
      << stopped.status();
  EXPECT_TRUE(absl::EndsWith(stopped.status().message(), kNothingImported)) << stopped.status();
}

}  // namespace
}  // namespace perfcast::client
