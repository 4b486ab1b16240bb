// Numeric hostility through the real RPCs: NaN, infinities, negative and
// absurd sizes, empty and 1 MB strings, unknown enum values. Each is refused
// with a clear code or a per-record rejection, and the store holds nothing
// of it afterwards. Also the pure request validation (request_validation.h)
// that the services and the fuzzer share.
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/client_unary_call.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "server/logger.h"
#include "server/request_validation.h"
#include "server/server.h"
#include "tests/db/test_util.h"

namespace perfcast::server {
namespace {

using ::grpc::StatusCode;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class HostileRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), logger_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                       grpc::InsecureChannelCredentials());
    nodes_ = v1::NodeRegistry::NewStub(channel);
    profiles_ = v1::ProfileStore::NewStub(channel);
  }

  grpc::Status Register(const v1::RegisterNodeRequest& request) {
    grpc::ClientContext context;
    v1::RegisterNodeResponse response;
    return nodes_->Register(&context, request, &response);
  }

  int64_t NodeCount() {
    db::NodeFilter all;
    all.page_size = 1000;
    absl::StatusOr<db::NodePage> page = store_->ListNodes(all);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? static_cast<int64_t>(page->nodes.size()) : -1;
  }

  static v1::RegisterNodeRequest SpecNode(const std::string& name) {
    v1::RegisterNodeRequest request;
    request.set_name(name);
    v1::GpuSpec* gpu = request.mutable_gpu();
    gpu->set_model("X1");
    gpu->set_memory_gib(16);
    gpu->set_memory_bandwidth_gbs(1000);
    gpu->set_fp32_tflops(20);
    gpu->set_bf16_tflops(80);
    return request;
  }

  static v1::Profile GoodProfile() {
    v1::Profile p;
    p.set_node_name("n1");
    v1::Workload* w = p.mutable_workload();
    w->set_family("lstm");
    w->set_batch_size(64);
    v1::TimingStats* t = p.mutable_iteration();
    t->set_count(10);
    for (auto set : {&v1::TimingStats::set_mean_ms, &v1::TimingStats::set_median_ms,
                     &v1::TimingStats::set_p95_ms, &v1::TimingStats::set_min_ms,
                     &v1::TimingStats::set_max_ms}) {
      (t->*set)(5.0);
    }
    return p;
  }

  testing::TempDir dir_;
  Logger logger_{LogLevel::kWarning};
  std::unique_ptr<db::Store> store_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<v1::NodeRegistry::Stub> nodes_;
  std::unique_ptr<v1::ProfileStore::Stub> profiles_;
};

TEST_F(HostileRequestTest, RegisterRefusesHostileNumbersAndStoresNothing) {
  std::vector<v1::RegisterNodeRequest> bad;
  for (double rate : {kNan, kInf, -kInf, -1.0, 0.0}) {
    v1::RegisterNodeRequest r = SpecNode("n");
    r.mutable_gpu()->set_memory_bandwidth_gbs(rate);
    bad.push_back(r);
    r = SpecNode("n");
    r.mutable_gpu()->set_fp32_tflops(rate);
    bad.push_back(r);
  }
  for (double rate : {kNan, kInf, -1.0, 1e300}) {
    v1::RegisterNodeRequest r = SpecNode("n");
    r.mutable_gpu()->set_bf16_tflops(rate);
    bad.push_back(r);
    r = SpecNode("n");
    r.mutable_measured()->set_fp32_tflops(rate);
    bad.push_back(r);
    r = SpecNode("n");
    r.mutable_measured()->set_launch_latency_us(rate);
    bad.push_back(r);
  }
  for (int count : {-1, 1'000'000'000, std::numeric_limits<int>::max(), models::kMaxGpusPerNode + 1}) {
    v1::RegisterNodeRequest r = SpecNode("n");
    r.set_gpu_count(count);
    bad.push_back(r);
  }
  v1::RegisterNodeRequest r = SpecNode("");
  bad.push_back(r);
  bad.push_back(SpecNode(std::string(1 << 20, 'n')));
  r = SpecNode("n");
  (*r.mutable_labels())["zone"] = std::string(1 << 20, 'z');
  bad.push_back(r);
  r = SpecNode("n");
  r.mutable_host()->set_hostname(std::string(1 << 20, 'h'));
  bad.push_back(r);
  r = SpecNode("n");
  r.mutable_gpu()->set_sm_count(-5);
  bad.push_back(r);
  r = SpecNode("n");
  r.clear_gpu();
  bad.push_back(r);
  // Names a table prints: no terminal escapes, control bytes or broken UTF-8.
  for (const std::string& name :
       {std::string("evil\x1b[2J"), std::string("tab\tbed"), std::string("nul\0x", 5),
        std::string("c1\xc2\x9b" "31m"), std::string("del\x7f")}) {
    bad.push_back(SpecNode(name));
  }
  r = SpecNode("n");
  (*r.mutable_labels())["zone"] = "a\x1b]0;title\x07";
  bad.push_back(r);

  for (const v1::RegisterNodeRequest& request : bad) {
    grpc::Status status = Register(request);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT)
        << request.ShortDebugString().substr(0, 200);
    EXPECT_FALSE(status.error_message().empty());
  }
  r = SpecNode("n");
  r.set_catalog_gpu(std::string(1 << 20, 'g'));
  EXPECT_EQ(Register(r).error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(NodeCount(), 0);
  // The limits leave real nodes alone.
  r = SpecNode("n");
  r.set_gpu_count(models::kMaxGpusPerNode);
  EXPECT_TRUE(Register(r).ok());
  EXPECT_TRUE(Register(SpecNode("gpu-node \xc3\xa9t\xc3\xa9 #7")).ok());  // UTF-8 is fine
  EXPECT_EQ(NodeCount(), 2);
}

TEST_F(HostileRequestTest, ImportRejectsHostileProfilesAndStoresNone) {
  std::vector<v1::Profile> bad;
  for (double time : {kNan, kInf, -kInf, -1.0, 1e300}) {
    v1::Profile p = GoodProfile();
    p.mutable_iteration()->set_mean_ms(time);
    bad.push_back(p);
    p = GoodProfile();
    p.mutable_phases()->set_forward_ms(time);
    bad.push_back(p);
    p = GoodProfile();
    p.set_epoch_s(time);
    bad.push_back(p);
  }
  for (int64_t batch : {int64_t{-1}, int64_t{1'000'000'000'000'000'000},
                        std::numeric_limits<int64_t>::min()}) {
    v1::Profile p = GoodProfile();
    p.mutable_workload()->set_batch_size(batch);
    bad.push_back(p);
  }
  v1::Profile p = GoodProfile();
  (*p.mutable_workload()->mutable_params())["seq_len"] = int64_t{1} << 62;
  bad.push_back(p);
  p = GoodProfile();
  p.mutable_workload()->set_precision(static_cast<v1::Precision>(99));
  bad.push_back(p);
  p = GoodProfile();
  p.mutable_workload()->set_phase(static_cast<v1::Phase>(99));
  bad.push_back(p);
  p = GoodProfile();
  p.mutable_iteration()->set_count(-3);
  bad.push_back(p);
  p = GoodProfile();
  p.set_repeats(-1);
  bad.push_back(p);
  p = GoodProfile();
  p.set_node_name("");
  bad.push_back(p);
  p = GoodProfile();
  p.set_node_name(std::string(1 << 20, 'n'));
  bad.push_back(p);
  p = GoodProfile();
  p.set_agent_version(std::string(1 << 20, 'v'));
  bad.push_back(p);
  p = GoodProfile();
  p.mutable_workload()->set_family("");
  bad.push_back(p);
  p = GoodProfile();
  p.set_content_hash("not hex");
  bad.push_back(p);
  for (int i = 0; i < 8; ++i) {  // 8 MB of quoted family names would not fit a response
    p = GoodProfile();
    p.mutable_workload()->set_family(std::string(1 << 20, static_cast<char>('a' + i)));
    bad.push_back(p);
  }

  v1::ImportRequest request;
  v1::Node* node = request.add_nodes();
  node->set_name("n1");
  node->mutable_gpu()->set_model("H100-SXM5-80GB");
  for (const v1::Profile& profile : bad) *request.add_profiles() = profile;
  grpc::ClientContext context;
  v1::ImportResponse response;
  auto stream = profiles_->Import(&context, &response);
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.received(), static_cast<int64_t>(bad.size()));
  EXPECT_EQ(response.accepted(), 0);
  ASSERT_EQ(response.rejected_size(), static_cast<int>(bad.size()));
  for (const v1::Rejection& rejection : response.rejected()) {
    EXPECT_FALSE(rejection.reason().empty()) << rejection.index();
    EXPECT_LT(rejection.reason().size(), 4096u) << rejection.index();
  }
  absl::StatusOr<int64_t> stored = store_->CountProfiles({});
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, 0);
}

TEST_F(HostileRequestTest, ImportOfANodeWithNanRatesFailsAndStoresNothing) {
  v1::ImportRequest request;
  v1::Node* node = request.add_nodes();
  node->set_name("n1");
  node->mutable_gpu()->set_model("X1");
  node->mutable_gpu()->set_memory_bandwidth_gbs(kNan);
  node->set_gpu_count(1'000'000'000);
  *request.add_profiles() = GoodProfile();
  grpc::ClientContext context;
  v1::ImportResponse response;
  auto stream = profiles_->Import(&context, &response);
  stream->Write(request);
  stream->WritesDone();
  EXPECT_EQ(stream->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(NodeCount(), 0);
  EXPECT_EQ(*store_->CountProfiles({}), 0);
}

// gRPC answers a request whose bytes do not parse INTERNAL, a server fault
// in every log and dashboard; the fault is the client's: INVALID_ARGUMENT.
TEST_F(HostileRequestTest, RequestsThatDoNotParseAreInvalidArguments) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                     grpc::InsecureChannelCredentials());
  const std::string garbage("\x0a\xff\xff\xff\xff\x0f", 6);  // a field past the end
  for (const char* method : {"/perfcast.v1.NodeRegistry/Get", "/perfcast.v1.NodeRegistry/Register",
                             "/perfcast.v1.Predictor/ListModels"}) {
    grpc::ClientContext context;
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel.get(), grpc::internal::RpcMethod(method, grpc::internal::RpcMethod::NORMAL_RPC),
        &context, request, &response);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT)
        << method << ": " << status.error_message();
  }
  // A server-streaming call's one request too.
  grpc::ClientContext context;
  grpc::Slice slice(garbage);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel.get(),
          grpc::internal::RpcMethod("/perfcast.v1.ProfileStore/Export",
                                    grpc::internal::RpcMethod::SERVER_STREAMING),
          &context, grpc::ByteBuffer(&slice, 1)));
  grpc::ByteBuffer response;
  while (reader->Read(&response)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  // The server goes on serving well-formed requests.
  EXPECT_TRUE(Register(SpecNode("n1")).ok());
}

// A sequence length or image size of 0 silently became the default (the
// model's maximum positions, 224 pixels); absent means the default, given
// must be a size.
TEST(RequestValidationTest, AGivenSequenceLengthOrImageSizeMustBePositive) {
  v1::PredictRequest request;
  request.mutable_workload()->set_torchvision("resnet50");
  request.mutable_workload()->set_batch_size(8);
  ASSERT_TRUE(DescribeWorkload(request).ok());
  (*request.mutable_workload()->mutable_params())["image"] = 0;
  absl::Status zero = DescribeWorkload(request).status();
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("'image' must be >= 1, got 0"), std::string::npos) << zero;
  request.mutable_workload()->clear_torchvision();
  request.mutable_workload()->mutable_params()->clear();
  request.mutable_workload()->set_hf_config_json(
      R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 128,
          "vocab_size": 100})");
  ASSERT_TRUE(DescribeWorkload(request).ok()) << DescribeWorkload(request).status();
  (*request.mutable_workload()->mutable_params())["seq_len"] = 0;
  EXPECT_EQ(DescribeWorkload(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RequestValidationTest, FitOptionsRefuseNonFiniteAndUnknownValues) {
  for (double bad : {kNan, kInf, -kInf, -1.0}) {
    v1::FitOptions options;
    options.set_ridge(bad);
    EXPECT_EQ(ToFitOptions(options).status().code(), absl::StatusCode::kInvalidArgument) << bad;
    options = v1::FitOptions();
    options.set_min_improvement(bad);
    EXPECT_EQ(ToFitOptions(options).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  v1::FitOptions options;
  options.set_group_by(static_cast<v1::GroupBy>(17));
  EXPECT_EQ(ToFitOptions(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = v1::FitOptions();
  options.set_ridge(0.5);
  EXPECT_TRUE(ToFitOptions(options).ok());
  v1::ProfileSelection selection;
  selection.set_phase(static_cast<v1::Phase>(99));
  EXPECT_EQ(SelectionFromRequest(selection).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RequestValidationTest, ExportAndJobRefuseNegativeAndUnknownValues) {
  v1::ExportRequest request;
  request.set_limit(-1);
  EXPECT_EQ(ExportQueryFromRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  request = v1::ExportRequest();
  request.set_kind(static_cast<v1::WorkloadKind>(42));
  EXPECT_EQ(ExportQueryFromRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  v1::PredictRequest predict;
  predict.mutable_job()->set_iterations(std::numeric_limits<int64_t>::min());
  EXPECT_EQ(JobFromRequest(predict).status().code(), absl::StatusCode::kInvalidArgument);
  predict.mutable_job()->set_iterations(0);
  predict.mutable_job()->set_samples(std::numeric_limits<int64_t>::min());
  predict.mutable_job()->set_epochs(1);
  EXPECT_EQ(JobFromRequest(predict).status().code(), absl::StatusCode::kInvalidArgument);
}

std::string WorkloadKey(const v1::Workload& workload) {
  std::string key;
  AppendWorkloadKey(workload, &key);
  return key;
}

// Predict keeps answers and descriptions by the workload's key: two workloads
// that differ in any field, one added to Workload later included, must not
// share one. Each field set in turn (by reflection) changes the key.
TEST(RequestValidationTest, WorkloadKeyTellsEveryFieldApart) {
  v1::Workload base;
  base.set_family("lstm");
  (*base.mutable_params())["layers"] = 2;
  const std::string base_key = WorkloadKey(base);
  const google::protobuf::Descriptor& d = *v1::Workload::descriptor();
  const google::protobuf::Reflection& r = *base.GetReflection();
  for (int i = 0; i < d.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *d.field(i);
    v1::Workload changed = base;
    if (field.is_map()) {
      (*changed.mutable_params())["hidden"] = 64;
    } else if (field.type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
      r.SetString(&changed, &field, "x");
    } else if (field.type() == google::protobuf::FieldDescriptor::TYPE_INT64) {
      r.SetInt64(&changed, &field, 7);
    } else if (field.type() == google::protobuf::FieldDescriptor::TYPE_ENUM) {
      r.SetEnumValue(&changed, &field, 2);
    } else {
      ADD_FAILURE() << field.name() << ": a field of a new type; teach this test to set it";
      continue;
    }
    EXPECT_NE(WorkloadKey(changed), base_key)
        << field.name() << " does not change the key: add it to AppendWorkloadKey";
  }
  v1::Workload other_value = base;
  (*other_value.mutable_params())["layers"] = 3;
  EXPECT_NE(WorkloadKey(other_value), base_key);
}

// The same content is the same key, whatever order the parameters came in;
// strings cannot run into each other.
TEST(RequestValidationTest, WorkloadKeyIsTheContentsNotItsOrder) {
  v1::Workload a, b;
  (*a.mutable_params())["layers"] = 2;
  (*a.mutable_params())["hidden"] = 64;
  (*b.mutable_params())["hidden"] = 64;
  (*b.mutable_params())["layers"] = 2;
  EXPECT_EQ(WorkloadKey(a), WorkloadKey(b));
  a.set_family("ab");
  a.set_optimizer("c");
  b.set_family("a");
  b.set_optimizer("bc");
  EXPECT_NE(WorkloadKey(a), WorkloadKey(b));
}

// A Predict request as the question it asks: the target's errors at once,
// the job's kept for Pricer::Ask to report in turn, no layout for one GPU,
// and an absent workload never kept.
TEST(RequestValidationTest, QueryFromRequestDecodesThePredictOnce) {
  v1::PredictRequest request;
  EXPECT_EQ(QueryFromRequest(request).status().message(),
            "a target is required: node_name or catalog_gpu");
  request.set_catalog_gpu("H100");
  request.set_model_name("mine");
  request.mutable_parallel()->set_data_parallel(1);
  absl::StatusOr<serving::Query> query = QueryFromRequest(request);
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->target.kind, serving::Target::Kind::kCatalogGpu);
  EXPECT_EQ(query->target.name, "H100");
  EXPECT_EQ(query->model_name, "mine");
  EXPECT_FALSE(query->layout.has_value());
  EXPECT_EQ(query->job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(query->workload.key.empty());
  EXPECT_EQ(query->workload.describe().descriptor.status().message(), "workload is required");

  request.mutable_parallel()->set_tensor_parallel(2);
  request.mutable_job()->set_iterations(10);
  request.mutable_workload()->set_torchvision("resnet18");
  request.mutable_workload()->set_batch_size(32);
  query = QueryFromRequest(request);
  ASSERT_TRUE(query.ok()) << query.status();
  ASSERT_TRUE(query->layout.has_value());
  EXPECT_EQ(query->layout->tensor, 2);
  EXPECT_EQ(query->layout->data, 1);
  ASSERT_TRUE(query->job.ok());
  EXPECT_EQ(query->job->iterations, 10);
  EXPECT_EQ(query->workload.key, "w" + WorkloadKey(request.workload()));
  serving::WorkloadDescription described = query->workload.describe();
  ASSERT_TRUE(described.descriptor.ok()) << described.descriptor.status();
  EXPECT_EQ(described.descriptor->spec.family, "resnet_imagenet");
}

}  // namespace
}  // namespace perfcast::server
