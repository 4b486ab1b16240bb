// The RPC observer through a real server on loopback: request ids, access
// log lines and per-method metrics for sync unary, callback unary
// (Predict), client-streaming (Import) and server-streaming (Export) calls.
#include "server/rpc_observer.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "db/store.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "server/logger.h"
#include "server/metrics.h"
#include "server/server.h"
#include "tests/db/test_util.h"
#include "tests/server/http_get.h"

namespace perfcast::server {
namespace {

using perfcast::testing::PrometheusSample;

constexpr char kRegister[] = "/perfcast.v1.NodeRegistry/Register";
constexpr char kPredict[] = "/perfcast.v1.Predictor/Predict";
constexpr char kImport[] = "/perfcast.v1.ProfileStore/Import";
constexpr char kExport[] = "/perfcast.v1.ProfileStore/Export";

bool IsHex16(const std::string& id) {
  return id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string ServerRequestId(const grpc::ClientContext& call) {
  const auto& metadata = call.GetServerInitialMetadata();
  auto it = metadata.find(kRequestIdKey);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

class RpcObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    log_path_ = dir_.File("server.log");
    log_file_ = std::fopen(log_path_.c_str(), "w");
    ASSERT_NE(log_file_, nullptr);
    logger_ = std::make_unique<Logger>(LogLevel::kInfo, log_file_);
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.metrics = &metrics_;
    auto server = Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), *logger_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  void TearDown() override {
    server_.reset();
    logger_.reset();
    if (log_file_ != nullptr) std::fclose(log_file_);
  }

  // The server's log lines so far, parsed.
  std::vector<nlohmann::json> LogLines() const {
    std::ifstream in(log_path_);
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);) {
      lines.push_back(nlohmann::json::parse(line));
    }
    return lines;
  }

  // The access-log lines of `method`.
  std::vector<nlohmann::json> AccessLines(const std::string& method) const {
    std::vector<nlohmann::json> found;
    for (const nlohmann::json& line : LogLines()) {
      if (line.value("msg", "") == "rpc" && line.value("method", "") == method)
        found.push_back(line);
    }
    return found;
  }

  double Requests(const std::string& method, const std::string& code) const {
    absl::StatusOr<double> value = PrometheusSample(
        metrics_.Render(), "perfcast_rpc_requests_total", {{"method", method}, {"code", code}});
    return value.ok() ? *value : 0;
  }

  grpc::Status Register(const std::string& name, grpc::ClientContext& call) {
    v1::RegisterNodeRequest request;
    request.set_name(name);
    request.set_catalog_gpu("H100-SXM5-80GB");
    v1::RegisterNodeResponse response;
    return v1::NodeRegistry::NewStub(channel_)->Register(&call, request, &response);
  }

  perfcast::testing::TempDir dir_;
  std::unique_ptr<db::Store> store_;
  std::string log_path_;
  std::FILE* log_file_ = nullptr;
  std::unique_ptr<Logger> logger_;
  Metrics metrics_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST(RequestIdTest, AcceptsVisibleAsciiUpTo128Characters) {
  EXPECT_TRUE(IsValidRequestId("abc-123_XYZ.9"));
  EXPECT_TRUE(IsValidRequestId(std::string(128, 'a')));
  EXPECT_FALSE(IsValidRequestId(""));
  EXPECT_FALSE(IsValidRequestId(std::string(129, 'a')));
  EXPECT_FALSE(IsValidRequestId("two words"));
  EXPECT_FALSE(IsValidRequestId("line\nbreak"));
  EXPECT_FALSE(IsValidRequestId("caf\xc3\xa9"));
}

TEST_F(RpcObserverTest, ClientRequestIdIsEchoedAndLoggedOnEveryLineOfTheCall) {
  grpc::ClientContext call;
  call.AddMetadata(kRequestIdKey, "client-chosen-42");
  grpc::Status status = Register("n1", call);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(ServerRequestId(call), "client-chosen-42");

  std::vector<nlohmann::json> access = AccessLines(kRegister);
  ASSERT_EQ(access.size(), 1u);
  EXPECT_EQ(access[0]["request_id"], "client-chosen-42");
  EXPECT_EQ(access[0]["code"], "OK");
  EXPECT_EQ(access[0]["level"], "info");
  EXPECT_FALSE(access[0]["peer"].get<std::string>().empty());
  EXPECT_GE(std::stod(access[0]["duration_ms"].get<std::string>()), 0);
  bool service_line = false;
  for (const nlohmann::json& line : LogLines()) {
    if (line["msg"] == "node registered") {
      service_line = true;
      EXPECT_EQ(line["request_id"], "client-chosen-42");
    }
  }
  EXPECT_TRUE(service_line);
}

TEST_F(RpcObserverTest, MissingOrInvalidRequestIdIsReplacedByAGeneratedOne) {
  grpc::ClientContext plain;
  ASSERT_TRUE(Register("n1", plain).ok());
  grpc::ClientContext invalid;
  invalid.AddMetadata(kRequestIdKey, std::string(200, 'x'));
  ASSERT_TRUE(Register("n2", invalid).ok());

  const std::string first = ServerRequestId(plain);
  const std::string second = ServerRequestId(invalid);
  EXPECT_TRUE(IsHex16(first)) << first;
  EXPECT_TRUE(IsHex16(second)) << second;
  EXPECT_NE(first, second);
  std::vector<nlohmann::json> access = AccessLines(kRegister);
  ASSERT_EQ(access.size(), 2u);
  EXPECT_EQ(access[0]["request_id"], first);
  EXPECT_EQ(access[1]["request_id"], second);
}

TEST_F(RpcObserverTest, FailedCallsCarryTheirCodeTheirIdAndTheirError) {
  grpc::ClientContext first;
  ASSERT_TRUE(Register("n1", first).ok());
  grpc::ClientContext again;
  again.AddMetadata(kRequestIdKey, "dup-1");
  grpc::Status status = Register("n1", again);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(ServerRequestId(again), "dup-1");

  std::vector<nlohmann::json> access = AccessLines(kRegister);
  ASSERT_EQ(access.size(), 2u);
  EXPECT_EQ(access[1]["code"], "ALREADY_EXISTS");
  EXPECT_EQ(access[1]["request_id"], "dup-1");
  EXPECT_EQ(access[1]["error"], status.error_message());
  EXPECT_EQ(Requests(kRegister, "OK"), 1);
  EXPECT_EQ(Requests(kRegister, "ALREADY_EXISTS"), 1);
}

TEST_F(RpcObserverTest, CallbackPredictIsObserved) {
  auto stub = v1::Predictor::NewStub(channel_);
  v1::PredictRequest request;  // no workload: INVALID_ARGUMENT
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext call;
    call.AddMetadata(kRequestIdKey, absl::StrCat("predict-", i));
    v1::PredictResponse response;
    grpc::Status status = stub->Predict(&call, request, &response);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(ServerRequestId(call), absl::StrCat("predict-", i));
  }
  std::vector<nlohmann::json> access = AccessLines(kPredict);
  ASSERT_EQ(access.size(), 3u);
  const std::string code = access[0]["code"];
  EXPECT_NE(code, "OK");
  EXPECT_EQ(access[2]["request_id"], "predict-2");
  EXPECT_EQ(Requests(kPredict, code), 3);
  EXPECT_EQ(PrometheusSample(metrics_.Render(), "perfcast_rpc_duration_seconds_count",
                             {{"method", kPredict}})
                .value_or(-1),
            3);
  EXPECT_EQ(PrometheusSample(metrics_.Render(), "perfcast_rpc_in_flight", {{"method", kPredict}})
                .value_or(-1),
            0);
}

TEST_F(RpcObserverTest, StreamingImportAndExportAreObservedAndImportsCounted) {
  grpc::ClientContext register_call;
  ASSERT_TRUE(Register("n1", register_call).ok());
  auto profiles = v1::ProfileStore::NewStub(channel_);
  auto import = [&](int first_seed, int count, bool with_unknown_node) {
    grpc::ClientContext call;
    call.AddMetadata(kRequestIdKey, absl::StrCat("import-", first_seed));
    v1::ImportResponse response;
    auto stream = profiles->Import(&call, &response);
    v1::ImportRequest batch;
    for (int i = 0; i < count; ++i) {
      proto::ToProto(perfcast::testing::SampleProfile("n1", first_seed + i), batch.add_profiles());
    }
    if (with_unknown_node) {
      proto::ToProto(perfcast::testing::SampleProfile("ghost", 999), batch.add_profiles());
    }
    EXPECT_TRUE(stream->Write(batch));
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(ServerRequestId(call), absl::StrCat("import-", first_seed));
    return response;
  };
  v1::ImportResponse first = import(0, 5, true);
  EXPECT_EQ(first.accepted(), 5);
  EXPECT_EQ(first.rejected_size(), 1);
  v1::ImportResponse second = import(3, 4, false);  // seeds 3, 4 again; 5, 6 new
  EXPECT_EQ(second.accepted(), 2);
  EXPECT_EQ(second.duplicates(), 2);

  grpc::ClientContext export_call;
  v1::ExportRequest request;
  request.set_batch_size(2);
  auto reader = profiles->Export(&export_call, request);
  v1::ExportResponse batch;
  int exported = 0;
  while (reader->Read(&batch)) exported += batch.profiles_size();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(exported, 7);
  EXPECT_TRUE(IsHex16(ServerRequestId(export_call)));

  const std::string text = metrics_.Render();
  EXPECT_EQ(Requests(kImport, "OK"), 2);
  EXPECT_EQ(Requests(kExport, "OK"), 1);
  EXPECT_EQ(
      PrometheusSample(text, "perfcast_import_profiles_total", {{"result", "stored"}}).value_or(-1),
      7);
  EXPECT_EQ(PrometheusSample(text, "perfcast_import_profiles_total", {{"result", "duplicate"}})
                .value_or(-1),
            2);
  EXPECT_EQ(PrometheusSample(text, "perfcast_import_profiles_total", {{"result", "rejected"}})
                .value_or(-1),
            1);
  std::vector<nlohmann::json> access = AccessLines(kImport);
  ASSERT_EQ(access.size(), 2u);
  EXPECT_EQ(access[1]["request_id"], "import-3");
  int committed_lines = 0;
  for (const nlohmann::json& line : LogLines()) {
    if (line["msg"] != "import committed") continue;
    ++committed_lines;
    EXPECT_TRUE(line["request_id"] == "import-0" || line["request_id"] == "import-3") << line;
  }
  EXPECT_EQ(committed_lines, 2);
  EXPECT_EQ(AccessLines(kExport).size(), 1u);
}

TEST_F(RpcObserverTest, HealthChecksAreCountedButLoggedOnlyAtDebug) {
  grpc::ClientContext call;
  // The health service by its method name, without its generated stub: an
  // empty HealthCheckRequest (zero bytes) asks about the whole server.
  grpc::Slice empty{std::string()};
  grpc::ByteBuffer request(&empty, 1);
  grpc::GenericStub generic(channel_);
  grpc::ByteBuffer response;
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader =
      generic.PrepareUnaryCall(&call, "/grpc.health.v1.Health/Check", request, &cq);
  reader->StartCall();
  grpc::Status status;
  reader->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  ASSERT_TRUE(status.ok()) << status.error_message();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  EXPECT_EQ(Requests("/grpc.health.v1.Health/Check", "OK"), 1);
  EXPECT_TRUE(AccessLines("/grpc.health.v1.Health/Check").empty());
}

}  // namespace
}  // namespace perfcast::server
