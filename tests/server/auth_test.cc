// perfcastd's bearer-token check, call-duration cap and message-size limit,
// through a real server on loopback: every perfcast.v1 method refuses a call
// without a valid token and changes nothing, health checks stay open, the
// token never reaches the log, and oversize or overlong calls store nothing.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "server/authenticator.h"
#include "server/logger.h"
#include "server/server.h"
#include "tests/db/test_util.h"
#include "tests/server/synthetic_store.h"

namespace perfcast::server {
namespace {

using ::grpc::StatusCode;

constexpr char kToken[] = "s3cret-Token_0123456789";

TEST(TokenFileTest, ReadsOneTokenPerLineSkippingCommentsAndBlanks) {
  testing::TempDir dir;
  const std::string path = dir.File("tokens");
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("# operators\n\n  alpha-1  \nbeta.2\n\t# old: gamma\n", f);
  std::fclose(f);
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(*tokens, (std::vector<std::string>{"alpha-1", "beta.2"}));
}

TEST(TokenFileTest, RefusesFilesWithoutTokensOrWithBadOnes) {
  testing::TempDir dir;
  const std::string empty = dir.File("empty");
  std::FILE* f = std::fopen(empty.c_str(), "w");
  std::fputs("# nothing here\n\n", f);
  std::fclose(f);
  EXPECT_EQ(ReadTokenFile(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(dir.File("missing")).status().code(),
            absl::StatusCode::kInvalidArgument);

  const std::string spaced = dir.File("spaced");
  f = std::fopen(spaced.c_str(), "w");
  std::fputs("good\nhas inner-space\n", f);
  std::fclose(f);
  absl::Status bad = ReadTokenFile(spaced).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find(":2:"), std::string::npos) << bad;
  EXPECT_EQ(bad.message().find("inner-space"), std::string::npos) << "token leaked: " << bad;
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcabc"));  // a prefix repeated is not a match
  EXPECT_FALSE(ConstantTimeEquals("abcabc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

// One perfcastd in this process, over a fresh SQLite store, logging to a file.
class SecuredServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options) {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    log_path_ = dir_.File("server.log");
    log_file_ = std::fopen(log_path_.c_str(), "w");
    logger_ = std::make_unique<Logger>(LogLevel::kDebug, log_file_);
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), *logger_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    server_.reset();
    store_.reset();
    if (log_file_ != nullptr) std::fclose(log_file_);
  }

  std::string Log() {
    std::fflush(log_file_);
    std::FILE* in = std::fopen(log_path_.c_str(), "r");
    std::string text;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) text.append(buffer, n);
    std::fclose(in);
    return text;
  }

  // A client context carrying `token` (none when empty).
  static std::unique_ptr<grpc::ClientContext> Call(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  grpc::Status Register(const std::string& token, const std::string& name) {
    v1::RegisterNodeRequest request;
    request.set_name(name);
    request.set_catalog_gpu("H100-SXM5-80GB");
    v1::RegisterNodeResponse response;
    return v1::NodeRegistry::NewStub(channel_)->Register(Call(token).get(), request, &response);
  }

  int CountNodes() {
    v1::ListNodesResponse response;
    grpc::Status status = v1::NodeRegistry::NewStub(channel_)->List(
        Call(kToken).get(), v1::ListNodesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.nodes_size();
  }

  int64_t CountProfiles(const std::string& token) {
    auto context = Call(token);
    auto reader = v1::ProfileStore::NewStub(channel_)->Export(context.get(), v1::ExportRequest());
    v1::ExportResponse batch;
    int64_t count = 0;
    while (reader->Read(&batch)) count += batch.profiles_size();
    grpc::Status status = reader->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    return count;
  }

  static v1::ImportRequest Profiles(int first, int count) {
    v1::ImportRequest request;
    for (int i = first; i < first + count; ++i) {
      proto::ToProto(testing::SampleProfile("n1", i), request.add_profiles());
    }
    return request;
  }

  testing::TempDir dir_;
  std::string log_path_;
  std::FILE* log_file_ = nullptr;
  std::unique_ptr<Logger> logger_;
  std::unique_ptr<db::Store> store_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Sends one empty message to `method` (any kind of RPC) and returns the status.
grpc::Status CallGeneric(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                         const std::string& token) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto call = stub.PrepareCall(&context, method, &cq);
  void* tag;
  bool ok;
  auto step = [&](int expected) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, reinterpret_cast<void*>(expected));
  };
  call->StartCall(reinterpret_cast<void*>(1));
  step(1);
  grpc::Slice nothing("", 0);
  const grpc::ByteBuffer empty(&nothing, 1);
  call->WriteLast(empty, grpc::WriteOptions(), reinterpret_cast<void*>(2));
  step(2);
  // The status comes after every response message has been read.
  for (bool more = true; more;) {
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(4));
    EXPECT_TRUE(cq.Next(&tag, &more));
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(3));
  step(3);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

std::vector<std::string> AllPerfcastMethods() {
  std::vector<std::string> methods;
  for (const char* service : {v1::NodeRegistry::service_full_name(),
                              v1::ProfileStore::service_full_name(),
                              v1::Predictor::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
    EXPECT_NE(descriptor, nullptr) << service;
    if (descriptor == nullptr) continue;
    for (int m = 0; m < descriptor->method_count(); ++m) {
      methods.push_back(absl::StrCat("/", service, "/", descriptor->method(m)->name()));
    }
  }
  return methods;
}

TEST_F(SecuredServerTest, EveryMethodRefusesCallsWithoutAValidToken) {
  ServerOptions options;
  options.tokens = {"another-token", kToken};
  Start(options);
  const std::vector<std::string> methods = AllPerfcastMethods();
  ASSERT_GE(methods.size(), 12u);  // 4 + 2 + 6 when this test was written
  for (const std::string& method : methods) {
    for (const std::string& token : {std::string(), std::string("wrong-token"),
                                     std::string(kToken) + "x", std::string("s3cret")}) {
      grpc::Status status = CallGeneric(channel_, method, token);
      EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED)
          << method << " with token '" << token << "': " << status.error_message();
    }
    // With the right token the call passes the check (whatever it answers
    // to an empty request).
    EXPECT_NE(CallGeneric(channel_, method, kToken).error_code(), StatusCode::UNAUTHENTICATED)
        << method;
  }
  const std::string log = Log();
  EXPECT_NE(log.find("call rejected"), std::string::npos) << log;
  EXPECT_NE(log.find("NodeRegistry.Register"), std::string::npos) << log;
  EXPECT_EQ(log.find("wrong-token"), std::string::npos) << "a presented token was logged";
  EXPECT_EQ(log.find(kToken), std::string::npos) << "a token was logged";
}

TEST_F(SecuredServerTest, RefusedCallsChangeNothing) {
  ServerOptions options;
  options.tokens = {kToken};
  Start(options);
  EXPECT_EQ(Register("", "n1").error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register("wrong", "n1").error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CountNodes(), 0);

  ASSERT_TRUE(Register(kToken, "n1").ok());
  {  // An import without a token stores nothing, even from a client that keeps writing.
    auto context = Call("");
    v1::ImportResponse response;
    auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
    for (int b = 0; b < 3 && writer->Write(Profiles(b * 10, 10)); ++b) {
    }
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(CountProfiles(kToken), 0);
  {
    auto context = Call("");
    auto reader = v1::ProfileStore::NewStub(channel_)->Export(context.get(), v1::ExportRequest());
    v1::ExportResponse batch;
    EXPECT_FALSE(reader->Read(&batch));
    EXPECT_EQ(reader->Finish().error_code(), StatusCode::UNAUTHENTICATED);
  }
}

TEST_F(SecuredServerTest, HealthChecksNeedNoToken) {
  ServerOptions options;
  options.tokens = {kToken};
  Start(options);
  // HealthCheckRequest{service: ""} and an empty message serialise alike;
  // the answer is HealthCheckResponse{status: SERVING} = field 1, value 1.
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  grpc::Slice nothing("", 0);
  grpc::ByteBuffer request(&nothing, 1), response;
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(SecuredServerTest, WithoutTokensEveryCallIsOpen) {
  Start(ServerOptions());
  EXPECT_TRUE(Register("", "n1").ok());
  EXPECT_TRUE(Register("anything", "n2").ok());
  EXPECT_EQ(CountNodes(), 2);
}

TEST_F(SecuredServerTest, AnImportPastTheServersCapStoresNothing) {
  ServerOptions options;
  options.max_call = absl::Seconds(1);
  Start(options);
  ASSERT_TRUE(Register("", "n1").ok());
  auto context = Call("");
  v1::ImportResponse response;
  auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
  // A client that keeps sending, slowly, for longer than the cap.
  for (int b = 0; b < 40 && writer->Write(Profiles(b * 10, 10)); ++b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_EQ(CountProfiles(""), 0);
  EXPECT_NE(Log().find("import rolled back"), std::string::npos);
}

TEST_F(SecuredServerTest, AStalledImportIsCutOffAtTheCapAndStoresNothing) {
  ServerOptions options;
  options.max_call = absl::Seconds(1);
  Start(options);
  ASSERT_TRUE(Register("", "n1").ok());
  auto context = Call("");
  v1::ImportResponse response;
  auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
  ASSERT_TRUE(writer->Write(Profiles(0, 10)));
  // The client goes quiet with the stream open; the server must not wait for it.
  grpc::Status status = writer->Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(CountProfiles(""), 0);
  // The store is free for the next import.
  auto next_context = Call("");
  auto next = v1::ProfileStore::NewStub(channel_)->Import(next_context.get(), &response);
  ASSERT_TRUE(next->Write(Profiles(100, 10)));
  next->WritesDone();
  ASSERT_TRUE(next->Finish().ok());
  EXPECT_EQ(CountProfiles(""), 10);
}

TEST_F(SecuredServerTest, AnIdleImportIsCutOffSoOtherWritersGoOn) {
  ServerOptions options;
  options.max_import_idle = absl::Seconds(1);  // no cap on the whole call
  Start(options);
  ASSERT_TRUE(Register("", "n1").ok());
  auto context = Call("");
  v1::ImportResponse response;
  auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
  ASSERT_TRUE(writer->Write(Profiles(0, 10)));
  // The stream now holds the write lock and goes quiet. Another writer waits
  // for the lock, and gets it once the watchdog has cut the stream off.
  EXPECT_TRUE(Register("", "n2").ok());
  EXPECT_FALSE(writer->Finish().ok());
  EXPECT_EQ(CountProfiles(""), 0);
  EXPECT_EQ(CountNodes(), 2);
}

TEST_F(SecuredServerTest, AClientDeadlineRollsTheImportBack) {
  Start(ServerOptions());
  ASSERT_TRUE(Register("", "n1").ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  v1::ImportResponse response;
  auto writer = v1::ProfileStore::NewStub(channel_)->Import(&context, &response);
  for (int b = 0; b < 20 && writer->Write(Profiles(b * 10, 10)); ++b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // No WritesDone: on a loaded machine the writes could all go out before the
  // deadline fires, and a half-close would let the server commit first. The
  // stream must end by the deadline alone.
  EXPECT_EQ(writer->Finish().error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(CountProfiles(""), 0);
}

TEST_F(SecuredServerTest, OversizeMessagesAreRefusedBothWays) {
  ServerOptions options;
  options.max_message_bytes = 64 << 10;
  Start(options);
  // Received: a request over the limit.
  v1::RegisterNodeRequest big;
  big.set_name("n1");
  big.set_catalog_gpu("H100-SXM5-80GB");
  (*big.mutable_labels())["padding"] = std::string(100 << 10, 'x');
  v1::RegisterNodeResponse registered;
  grpc::Status status =
      v1::NodeRegistry::NewStub(channel_)->Register(Call("").get(), big, &registered);
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(CountNodes(), 0);

  // Sent: an export batch over the limit (each message fits when imported).
  ASSERT_TRUE(Register("", "n1").ok());
  v1::ImportResponse response;
  {
    auto context = Call("");
    auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
    for (int b = 0; b < 20; ++b) ASSERT_TRUE(writer->Write(Profiles(b * 50, 50)));
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
  }
  ASSERT_EQ(response.accepted(), 1000);
  v1::ExportRequest request;
  request.set_batch_size(1000);
  auto context = Call("");
  auto reader = v1::ProfileStore::NewStub(channel_)->Export(context.get(), request);
  v1::ExportResponse batch;
  while (reader->Read(&batch)) {
  }
  status = reader->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
}

TEST_F(SecuredServerTest, AnImportOverTheProfileLimitStoresNothing) {
  ServerOptions options;
  options.max_profiles_per_import = 25;
  Start(options);
  ASSERT_TRUE(Register("", "n1").ok());
  v1::ImportResponse response;
  auto context = Call("");
  auto writer = v1::ProfileStore::NewStub(channel_)->Import(context.get(), &response);
  for (int b = 0; b < 3 && writer->Write(Profiles(b * 10, 10)); ++b) {
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(CountProfiles(""), 0);
}

// A cap already spent when the handler first looks: every long call stops
// with DEADLINE_EXCEEDED, and Fit saves no model.
TEST_F(SecuredServerTest, LongCallsStopAtTheCapAndFitSavesNothing) {
  ServerOptions options;
  options.max_call = absl::Nanoseconds(1);
  Start(options);
  ASSERT_TRUE(testing::FillSyntheticStore(*store_, testing::SyntheticNodes(), {}).ok());
  auto predictor = v1::Predictor::NewStub(channel_);

  v1::FitResponse fitted;
  grpc::Status status = predictor->Fit(Call("").get(), v1::FitRequest(), &fitted);
  EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  v1::ListModelsResponse models;
  ASSERT_TRUE(predictor->ListModels(Call("").get(), v1::ListModelsRequest(), &models).ok());
  EXPECT_EQ(models.models_size(), 0);

  v1::EvaluateRequest evaluate;
  evaluate.set_split(v1::SPLIT_K_FOLD);
  v1::EvaluateResponse evaluated;
  status = predictor->Evaluate(Call("").get(), evaluate, &evaluated);
  EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();

  {
    auto context = Call("");
    auto stream = predictor->PredictBatch(context.get());
    v1::PredictBatchRequest batch;
    batch.add_queries()->set_node_name("alpha1");
    stream->Write(batch);
    stream->WritesDone();
    v1::PredictBatchResponse answer;
    while (stream->Read(&answer)) {
    }
    status = stream->Finish();
    EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  }
  {
    v1::ExportRequest request;
    request.set_batch_size(1);
    auto context = Call("");
    auto reader = v1::ProfileStore::NewStub(channel_)->Export(context.get(), request);
    v1::ExportResponse batch;
    while (reader->Read(&batch)) {
    }
    status = reader->Finish();
    EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  }
}

TEST(ServerStartTest, RefusesHalfATlsConfiguration) {
  testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir.File("perfcast.db"));
  ASSERT_TRUE(store.ok());
  Logger logger(LogLevel::kError);
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.tls_cert_pem = "-----BEGIN CERTIFICATE-----\n";
  EXPECT_EQ(Server::Start(options, **store, models::GpuCatalog::BuiltIn(), logger).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.tls_cert_pem.clear();
  options.tls_client_ca_pem = "-----BEGIN CERTIFICATE-----\n";
  EXPECT_EQ(Server::Start(options, **store, models::GpuCatalog::BuiltIn(), logger).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfcast::server
