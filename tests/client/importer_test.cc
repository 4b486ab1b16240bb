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
    FailingStore service(std::move(status));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    EXPECT_GT(port, 0);
    const std::string path = dir_.File("profiles.csv");
    std::ofstream(path) << csv;
    auto channel =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    absl::StatusOr<ImportReport> report =
        ImportFiles(channel, {{path, ProfileFormat::kCsv}}, ImportOptions{});
    server->Shutdown();
    return report.status();
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

}  // namespace
}  // namespace perfcast::client
