// perfcastd's metrics endpoint and request ids, through the real daemon and
// the real CLI: the counters must match the calls made, the import counters
// the records imported, and a request id must lead from a client's error to
// the server's log line.
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"
#include "tests/server/http_get.h"

namespace perfcast::testing {
namespace {

constexpr char kRegister[] = "/perfcast.v1.NodeRegistry/Register";
constexpr char kImport[] = "/perfcast.v1.ProfileStore/Import";
constexpr char kPredict[] = "/perfcast.v1.Predictor/Predict";
constexpr char kFit[] = "/perfcast.v1.Predictor/Fit";

std::vector<nlohmann::json> LogLines(const ServerProcess& server) {
  std::ifstream in(server.log_path());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << "not a JSON log line: " << line;
    if (!parsed.is_discarded()) lines.push_back(std::move(parsed));
  }
  return lines;
}

// The access-log line of the call with `request_id`; null if none.
nlohmann::json AccessLine(const ServerProcess& server, const std::string& request_id) {
  for (nlohmann::json& line : LogLines(server)) {
    if (line.value("msg", "") == "rpc" && line.value("request_id", "") == request_id) return line;
  }
  return nullptr;
}

// The port perfcastd logged for --metrics_listen=...:0.
int MetricsPort(const ServerProcess& server) {
  for (const nlohmann::json& line : LogLines(server)) {
    if (line.value("msg", "") == "serving metrics") {
      return std::stoi(line.value("metrics_port", "0"));
    }
  }
  return 0;
}

class ObservabilityIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        dir_.File("perfcast.db"),
        std::vector<std::string>{"--log_level=info", "--metrics_listen=127.0.0.1:0"});
    ASSERT_TRUE(server_->started());
    metrics_port_ = MetricsPort(*server_);
    ASSERT_GT(metrics_port_, 0);
  }

  // One scrape of /metrics.
  std::string Scrape() {
    absl::StatusOr<HttpResponse> response = HttpGet(metrics_port_, "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return "";
    EXPECT_EQ(response->status, 200);
    return response->body;
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  int metrics_port_ = 0;
};

double Value(const std::string& text, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  absl::StatusOr<double> value = PrometheusSample(text, name, labels);
  EXPECT_TRUE(value.ok()) << name << ": " << value.status();
  return value.ok() ? *value : -1;
}

double Calls(const std::string& text, const std::string& method, const std::string& code) {
  return Value(text, "perfcast_rpc_requests_total", {{"method", method}, {"code", code}});
}

TEST_F(ObservabilityIntegrationTest, MetricsMatchTheCallsAndTheImports) {
  ASSERT_EQ(
      server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  ASSERT_NE(
      server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  ASSERT_EQ(
      server_->Cli({"nodes", "register", "--name", "n2", "--gpu", "H200-SXM-141GB"}).exit_code, 0);

  // Three valid rows and one naming a node nobody registered, twice.
  const std::string csv = dir_.File("runs.csv");
  std::ofstream(csv) << "node,family,params,batch_size,precision,phase,mean_ms,median_ms,count\n"
                        "n1,lstm,layers=2;hidden=128,64,bf16-amp,train,3.5,3.4,20\n"
                        "n1,lstm,layers=4;hidden=128,64,bf16-amp,train,6.5,6.4,20\n"
                        "n1,transformer,layers=2,8,fp32,inference,1.25,1.2,50\n"
                        "ghost,lstm,,8,fp32,train,1.0,,\n";
  EXPECT_EQ(server_->Cli({"import", csv}).exit_code, 3);
  EXPECT_EQ(server_->Cli({"import", csv}).exit_code, 3);
  CommandResult r = server_->Cli({"import", std::string(PERFCAST_DATA_DIR) + "/h100.sqlite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::vector<std::string> predict = {"predict",        "--family",     "lstm",
                                            "--batch",        "64",           "--gpu",
                                            "H100-SXM5-80GB", "--iterations", "10"};
  EXPECT_NE(server_->Cli(predict).exit_code, 0);  // nothing fitted yet
  r = server_->Cli({"fit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server_->Cli(predict);
  EXPECT_EQ(r.exit_code, 0) << r.err;

  const std::string text = Scrape();
  EXPECT_EQ(Calls(text, kRegister, "OK"), 2);
  EXPECT_EQ(Calls(text, kRegister, "ALREADY_EXISTS"), 1);
  EXPECT_EQ(Calls(text, kImport, "OK"), 3);
  EXPECT_EQ(Calls(text, kPredict, "NOT_FOUND"), 1);
  EXPECT_EQ(Calls(text, kPredict, "OK"), 1);
  EXPECT_EQ(Calls(text, kFit, "OK"), 1);
  EXPECT_EQ(Value(text, "perfcast_rpc_duration_seconds_count", {{"method", kRegister}}), 3);
  EXPECT_EQ(Value(text, "perfcast_rpc_in_flight", {{"method", kImport}}), 0);

  // What imports stored is what the store holds.
  const double stored = Value(text, "perfcast_import_profiles_total", {{"result", "stored"}});
  EXPECT_GT(stored, 3);
  EXPECT_EQ(stored, Value(text, "perfcast_profiles"));
  EXPECT_EQ(Value(text, "perfcast_import_profiles_total", {{"result", "duplicate"}}), 3);
  EXPECT_EQ(Value(text, "perfcast_import_profiles_total", {{"result", "rejected"}}), 2);
  EXPECT_EQ(Value(text, "perfcast_nodes"), 3);  // n1, n2 and the H100 file's own node
  EXPECT_GT(Value(text, "perfcast_store_size_bytes"), stored * 100);  // a profile is > 100 bytes
  const double age = Value(text, "perfcast_model_age_seconds", {{"name", "default"}});
  EXPECT_GE(age, 0);
  EXPECT_LT(age, 300);
  EXPECT_GT(Value(text, "perfcast_model_cv_mape", {{"name", "default"}}), 0);
  EXPECT_GT(Value(text, "perfcast_process_resident_bytes"), 0);
}

TEST_F(ObservabilityIntegrationTest, RequestIdLeadsFromTheErrorToTheServerLog) {
  // The CLI's own id, printed with its error.
  CommandResult r = server_->Cli({"nodes", "get", "nobody"});
  ASSERT_NE(r.exit_code, 0);
  std::smatch id;
  ASSERT_TRUE(std::regex_search(r.err, id, std::regex(R"(\(request id ([0-9a-f]{16})\))")))
      << r.err;
  nlohmann::json line = AccessLine(*server_, id[1]);
  ASSERT_FALSE(line.is_null()) << "no log line with request id " << id[1];
  EXPECT_EQ(line["code"], "NOT_FOUND");
  EXPECT_EQ(line["method"], "/perfcast.v1.NodeRegistry/Get");

  // Any client's id, echoed back and logged.
  auto stub = v1::NodeRegistry::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext call;
  call.AddMetadata("x-request-id", "ticket-4711.retry-2");
  v1::GetNodeRequest request;
  request.set_name("nobody");
  v1::GetNodeResponse response;
  ASSERT_EQ(stub->Get(&call, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  auto echoed = call.GetServerInitialMetadata().find("x-request-id");
  ASSERT_NE(echoed, call.GetServerInitialMetadata().end());
  EXPECT_EQ(std::string(echoed->second.data(), echoed->second.size()), "ticket-4711.retry-2");
  line = AccessLine(*server_, "ticket-4711.retry-2");
  ASSERT_FALSE(line.is_null());
  EXPECT_EQ(line["code"], "NOT_FOUND");
  EXPECT_FALSE(line["peer"].get<std::string>().empty());
  EXPECT_TRUE(line.contains("duration_ms"));
}

}  // namespace
}  // namespace perfcast::testing
