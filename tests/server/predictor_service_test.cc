// PredictorService through a real server on loopback, over a temporary
// SQLite store of synthetic profiles that follow a known roofline law.
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "predictor/predictor.h"
#include "predictor/python_loop.h"
#include "proto/batch_results.h"
#include "proto/convert.h"
#include "server/logger.h"
#include "server/server.h"
#include "serving/model_cache.h"
#include "tests/db/test_util.h"
#include "tests/server/synthetic_store.h"

namespace perfcast::server {
namespace {

using ::grpc::StatusCode;

class PredictorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store =
        db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    nodes_ = testing::SyntheticNodes();
    // beta2 is registered with its measured rates but never profiled.
    ASSERT_TRUE(testing::FillSyntheticStore(*store_, nodes_, {"beta2"}).ok());
    // A spec-only node: hardware nobody profiled, known from the catalog.
    models::Node spec_only;
    spec_only.name = "spec-only";
    absl::StatusOr<models::GpuSpec> gpu = models::GpuCatalog::BuiltIn().Find("H100-SXM5-80GB");
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    spec_only.gpu = *gpu;
    ASSERT_TRUE(store_->RegisterNode(spec_only).ok());

    StartServer(/*answer_cache=*/true, &server_, &stub_);
  }

  // Starts a server on the store, on a free loopback port, and a stub for it.
  void StartServer(bool answer_cache, std::unique_ptr<Server>* server,
                   std::unique_ptr<v1::Predictor::Stub>* stub) {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.predict_answer_cache = answer_cache;
    absl::StatusOr<std::unique_ptr<Server>> started =
        Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), logger_);
    ASSERT_TRUE(started.ok()) << started.status();
    *server = *std::move(started);
    *stub = v1::Predictor::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Fit(const v1::FitRequest& request, v1::FitResponse* response) {
    grpc::ClientContext context;
    return stub_->Fit(&context, request, response);
  }
  grpc::Status Predict(const v1::PredictRequest& request, v1::PredictResponse* response) {
    grpc::ClientContext context;
    return stub_->Predict(&context, request, response);
  }

  // `hf`, a Hugging Face config, described as perfcast's `family` layout with
  // the params `resolved` (the answer for `hf`) reports.
  static v1::PredictRequest HuggingFaceFamilyTwin(v1::PredictRequest hf, const std::string& family,
                                                  const v1::PredictResponse& resolved) {
    hf.mutable_workload()->clear_hf_config_json();
    hf.mutable_workload()->set_family(family);
    *hf.mutable_workload()->mutable_params() = resolved.workload().params();
    return hf;
  }

  // In the agent's C++ loop, which has no Python host, `a` and `b` cost the
  // same.
  void ExpectTheSameInTheCppLoop(v1::PredictRequest a, v1::PredictRequest b) {
    a.mutable_workload()->set_loop(v1::LOOP_CPP);
    b.mutable_workload()->set_loop(v1::LOOP_CPP);
    v1::PredictResponse response;
    ASSERT_TRUE(Predict(a, &response).ok());
    const double a_ms = response.iteration_ms();
    ASSERT_TRUE(Predict(b, &response).ok());
    EXPECT_DOUBLE_EQ(a_ms, response.iteration_ms());
  }

  // Fits "default" without beta2's GPU.
  void FitHoldingOutBeta2() {
    v1::FitRequest request;
    request.mutable_selection()->add_exclude_gpu_models("beta2-gpu");
    v1::FitResponse response;
    grpc::Status status = Fit(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.model().version(), 1);
    EXPECT_FALSE(response.model().summary().empty());
    EXPECT_TRUE(std::isfinite(response.model().cv_mape()));
    EXPECT_GT(response.model().training_rows(), 0);
  }

  static v1::PredictRequest LstmQuery(const std::string& node) {
    v1::PredictRequest request;
    v1::Workload* w = request.mutable_workload();
    w->set_family("lstm");
    (*w->mutable_params())["layers"] = 3;
    (*w->mutable_params())["hidden"] = 384;
    w->set_batch_size(64);
    w->set_precision(v1::PRECISION_BF16_AMP);
    w->set_phase(v1::PHASE_TRAIN);
    // The synthetic profiles are the agent's loop, and so is their truth.
    w->set_loop(v1::LOOP_CPP);
    request.set_node_name(node);
    request.mutable_job()->set_samples(100'000);
    request.mutable_job()->set_epochs(3);
    return request;
  }

  testing::TempDir dir_;
  Logger logger_{LogLevel::kWarning};
  std::unique_ptr<db::Store> store_;
  std::vector<models::Node> nodes_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<v1::Predictor::Stub> stub_;
};

TEST_F(PredictorServiceTest, LoopIsPythonUnlessTheRequestSaysCpp) {
  FitHoldingOutBeta2();
  v1::PredictResponse cpp;
  ASSERT_TRUE(Predict(LstmQuery("beta2"), &cpp).ok());
  EXPECT_EQ(cpp.loop().loop(), v1::LOOP_CPP);
  EXPECT_EQ(cpp.workload().loop(), v1::LOOP_CPP);
  EXPECT_EQ(cpp.loop().cpp_ms(), cpp.iteration_ms());
  EXPECT_GT(cpp.loop().kernel_launches(), 0);

  v1::PredictRequest unspecified = LstmQuery("beta2");
  unspecified.mutable_workload()->clear_loop();
  v1::PredictResponse python;
  ASSERT_TRUE(Predict(unspecified, &python).ok());
  EXPECT_EQ(python.loop().loop(), v1::LOOP_PYTHON);
  EXPECT_EQ(python.workload().loop(), v1::LOOP_PYTHON);
  EXPECT_EQ(python.loop().cpp_ms(), cpp.iteration_ms());
  EXPECT_GE(python.iteration_ms(), cpp.iteration_ms());
  EXPECT_GT(python.loop().host_ms(), 0);
  EXPECT_GT(python.loop().per_op_us(), 0);
  EXPECT_FALSE(python.loop().per_op_source().empty());
  double breakdown = 0;
  for (const v1::OperationEstimate& op : python.breakdown()) breakdown += op.ms();
  EXPECT_NEAR(breakdown, python.iteration_ms(), 1e-6 * python.iteration_ms());
  bool noted = false;
  for (const std::string& note : python.notes()) noted |= note.find("loop python") == 0;
  EXPECT_TRUE(noted);

  v1::PredictRequest java = LstmQuery("beta2");
  java.mutable_workload()->set_loop(static_cast<v1::Loop>(7));
  v1::PredictResponse refused;
  grpc::Status status = Predict(java, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("LOOP_PYTHON or LOOP_CPP"), std::string::npos)
      << status.error_message();
}

TEST_F(PredictorServiceTest, FitThenPredictHeldOutGpuWithinAFewPercent) {
  FitHoldingOutBeta2();
  v1::PredictResponse response;
  grpc::Status status = Predict(LstmQuery("beta2"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  models::WorkloadSpec spec;
  spec.family = "lstm";
  spec.params = {{"layers", 3}, {"hidden", 384}};
  spec.batch_size = 64;
  spec.precision = models::Precision::kBf16Amp;
  absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
  ASSERT_TRUE(d.ok());
  const double truth = testing::TrueIterationMs(*d, nodes_[3]);
  EXPECT_NEAR(response.iteration_ms(), truth, 0.05 * truth);
  EXPECT_LE(response.iteration_ms_low(), response.iteration_ms());
  EXPECT_GE(response.iteration_ms_high(), response.iteration_ms());
  EXPECT_EQ(response.iterations(), 3 * ((100'000 + 63) / 64));
  EXPECT_NEAR(response.job_seconds(), response.iterations() * response.iteration_ms() / 1e3,
              1e-9 * response.job_seconds());
  EXPECT_EQ(response.gpu_model(), "beta2-gpu");
  EXPECT_EQ(response.rate_source(), "measured");
  EXPECT_EQ(response.level(), 2);
  EXPECT_EQ(response.model_version(), 1);
  EXPECT_GT(response.model_id(), 0);
  EXPECT_FALSE(response.features().empty());
  EXPECT_FALSE(response.breakdown().empty());

  // The unseen-GPU case: a catalog GPU, and a node registered from its spec.
  v1::PredictRequest catalog = LstmQuery("");
  catalog.set_catalog_gpu("H100-SXM5-80GB");
  status = Predict(catalog, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(response.rate_source(), "measured");
  EXPECT_TRUE(std::isfinite(response.job_seconds()) && response.job_seconds() > 0);
  status = Predict(LstmQuery("spec-only"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(std::isfinite(response.iteration_ms()));

  // Iterations instead of samples × epochs.
  v1::PredictRequest by_iterations = LstmQuery("beta2");
  by_iterations.mutable_job()->Clear();
  by_iterations.mutable_job()->set_iterations(1000);
  status = Predict(by_iterations, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.iterations(), 1000);

  // A refit is served at once by the same server.
  v1::FitRequest refit;
  v1::FitResponse refit_response;
  ASSERT_TRUE(Fit(refit, &refit_response).ok());
  status = Predict(LstmQuery("beta2"), &response);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(response.model_version(), 2);
}

TEST_F(PredictorServiceTest, BadPredictInputsGiveClearCodes) {
  v1::PredictResponse response;
  EXPECT_EQ(Predict(LstmQuery("beta2"), &response).error_code(), StatusCode::NOT_FOUND)
      << "no model fitted yet";
  FitHoldingOutBeta2();

  auto expect = [&](const v1::PredictRequest& request, StatusCode code, const std::string& says) {
    grpc::Status status = Predict(request, &response);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(says), std::string::npos) << status.error_message();
  };
  expect(LstmQuery("no-such-node"), StatusCode::NOT_FOUND, "no-such-node");
  v1::PredictRequest r = LstmQuery("");
  r.set_catalog_gpu("Z9000");
  expect(r, StatusCode::NOT_FOUND, "Z9000");
  r = LstmQuery("beta2");
  r.clear_workload();
  expect(r, StatusCode::INVALID_ARGUMENT, "workload");
  r = LstmQuery("beta2");
  r.mutable_workload()->clear_family();
  expect(r, StatusCode::INVALID_ARGUMENT, "workload.family");
  r = LstmQuery("beta2");
  r.mutable_workload()->set_batch_size(0);
  expect(r, StatusCode::INVALID_ARGUMENT, "batch_size");
  r.mutable_workload()->set_batch_size(-4);
  expect(r, StatusCode::INVALID_ARGUMENT, "batch_size");
  r = LstmQuery("beta2");
  (*r.mutable_workload()->mutable_params())["wings"] = 2;
  expect(r, StatusCode::INVALID_ARGUMENT, "wings");
  r = LstmQuery("beta2");
  r.mutable_job()->set_epochs(0);
  expect(r, StatusCode::INVALID_ARGUMENT, "epochs");
  r.mutable_job()->set_epochs(-1);
  expect(r, StatusCode::INVALID_ARGUMENT, "epochs");
  r = LstmQuery("beta2");
  r.mutable_job()->set_samples(0);
  expect(r, StatusCode::INVALID_ARGUMENT, "samples");
  r = LstmQuery("beta2");
  r.clear_job();
  expect(r, StatusCode::INVALID_ARGUMENT, "job");
  r = LstmQuery("beta2");
  r.clear_node_name();
  expect(r, StatusCode::INVALID_ARGUMENT, "target");
  r = LstmQuery("beta2");
  r.set_model_name("never-fitted");
  expect(r, StatusCode::NOT_FOUND, "perfcast fit");
  // Several faults: the GPU named wrong comes first, not the missing job.
  r = LstmQuery("");
  r.set_catalog_gpu("Z9000");
  r.clear_job();
  r.set_model_name("never-fitted");
  expect(r, StatusCode::NOT_FOUND, "Z9000");
}

// A model's own implementation changes the number, not only the note: the
// same workload given by its torchvision name or Hugging Face config costs
// what that implementation adds (predictor/python_loop.h) over the family
// given by its parameters.
TEST_F(PredictorServiceTest, ImplementationEffectsArePriced) {
  FitHoldingOutBeta2();
  const predictor::PythonLoopTerms& terms = predictor::FittedPythonLoopTerms();
  v1::PredictResponse response;
  // torchvision's ViT under autocast: the attention slow path, in either loop.
  v1::PredictRequest torchvision = LstmQuery("beta2");
  torchvision.mutable_workload()->clear_family();
  torchvision.mutable_workload()->clear_params();
  torchvision.mutable_workload()->set_torchvision("vit_b_16");
  torchvision.mutable_workload()->set_phase(v1::PHASE_INFERENCE);
  grpc::Status status = Predict(torchvision, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const double torchvision_ms = response.iteration_ms();
  v1::PredictRequest family = torchvision;
  family.mutable_workload()->clear_torchvision();
  family.mutable_workload()->set_family("vit");
  *family.mutable_workload()->mutable_params() = response.workload().params();
  status = Predict(family, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.notes_size(), 0);
  EXPECT_GT(terms.slow_path_autocast_inference, 1);
  EXPECT_NEAR(torchvision_ms, response.iteration_ms() * terms.slow_path_autocast_inference,
              1e-9 * torchvision_ms);

  // Hugging Face's GPT-2 in a Python loop: the host sync of every forward.
  v1::PredictRequest hf = LstmQuery("beta2");
  hf.mutable_workload()->clear_family();
  hf.mutable_workload()->clear_params();
  hf.mutable_workload()->set_hf_config_json(
      R"({"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4,
          "n_positions": 256, "vocab_size": 1000})");
  hf.mutable_workload()->set_batch_size(4);
  hf.mutable_workload()->set_phase(v1::PHASE_INFERENCE);
  hf.mutable_workload()->set_loop(v1::LOOP_PYTHON);
  status = Predict(hf, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const double hf_ms = response.iteration_ms();
  v1::PredictRequest decoder = HuggingFaceFamilyTwin(hf, "decoder", response);
  status = Predict(decoder, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(terms.sync_drain_inference, 0);
  EXPECT_GT(hf_ms, response.iteration_ms());
  // The agent's C++ loop has no Python host to drain: the two agree.
  ExpectTheSameInTheCppLoop(hf, decoder);

  // Hugging Face's BERT, small enough to be host-bound in a Python loop: its
  // heavier dispatch makes the step slower than the family layout's, with a
  // note that says why; in the C++ loop the two agree.
  v1::PredictRequest hf_bert = LstmQuery("beta2");
  hf_bert.mutable_workload()->clear_family();
  hf_bert.mutable_workload()->clear_params();
  hf_bert.mutable_workload()->set_hf_config_json(
      R"({"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 128,
          "num_attention_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
          "max_position_embeddings": 128, "type_vocab_size": 2})");
  hf_bert.mutable_workload()->set_batch_size(2);
  hf_bert.mutable_workload()->set_phase(v1::PHASE_INFERENCE);
  hf_bert.mutable_workload()->set_loop(v1::LOOP_PYTHON);
  status = Predict(hf_bert, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const double hf_bert_ms = response.iteration_ms();
  bool noted = false;
  for (const std::string& note : response.notes()) {
    noted |= note.find("host work per kernel") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  v1::PredictRequest bert = HuggingFaceFamilyTwin(hf_bert, "bert", response);
  ASSERT_TRUE(Predict(bert, &response).ok());
  EXPECT_GT(terms.heavy_dispatch_host_scale, 1);
  EXPECT_GT(hf_bert_ms, response.iteration_ms());
  ExpectTheSameInTheCppLoop(hf_bert, bert);
}

TEST_F(PredictorServiceTest, PredictResolvesHuggingFaceConfigsAndTorchvisionNames) {
  FitHoldingOutBeta2();
  v1::PredictResponse response;
  v1::PredictRequest gpt2 = LstmQuery("beta2");
  v1::Workload* w = gpt2.mutable_workload();
  w->clear_family();
  w->clear_params();
  w->set_hf_config_json(R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768,
                            "n_head": 12, "n_positions": 1024, "vocab_size": 50257})");
  (*w->mutable_params())["seq_len"] = 512;
  w->set_batch_size(8);
  grpc::Status status = Predict(gpt2, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(response.iteration_ms(), 0);
  EXPECT_EQ(response.workload().family(), "decoder");
  EXPECT_EQ(response.workload().params().at("seq_len"), 512);
  EXPECT_EQ(response.workload().params().at("layers"), 12);
  EXPECT_EQ(response.workload().params().at("tied"), 1);
  EXPECT_EQ(response.workload().batch_size(), 8);
  EXPECT_TRUE(response.workload().hf_config_json().empty());
  // What the user's own implementation does differently comes with the
  // answer (models::ImplementationCaveats), for the models it applies to.
  ASSERT_EQ(response.notes_size(), 1);
  EXPECT_NE(response.notes(0).find("once per forward"), std::string::npos) << response.notes(0);

  v1::PredictRequest vit = LstmQuery("beta2");
  vit.mutable_workload()->clear_family();
  vit.mutable_workload()->clear_params();
  vit.mutable_workload()->set_torchvision("vit_b_16");
  vit.mutable_workload()->set_phase(v1::PHASE_INFERENCE);
  status = Predict(vit, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.notes_size(), 1);
  EXPECT_NE(response.notes(0).find("30-38%"), std::string::npos) << response.notes(0);

  v1::PredictRequest resnet = LstmQuery("beta2");
  resnet.mutable_workload()->clear_family();
  resnet.mutable_workload()->clear_params();
  resnet.mutable_workload()->set_torchvision("resnet50");
  status = Predict(resnet, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.workload().family(), "resnet_imagenet");
  EXPECT_EQ(response.workload().params().at("depth"), 50);
  EXPECT_EQ(response.workload().params().at("image"), 224);
  EXPECT_EQ(response.notes_size(), 0);
  // A family-and-params query says what it predicted too, defaults filled in.
  status = Predict(LstmQuery("beta2"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.notes_size(), 0);
  EXPECT_EQ(response.workload().family(), "lstm");
  EXPECT_GT(response.workload().params_size(), 2);

  auto expect_invalid = [&](const v1::PredictRequest& request, const std::string& says) {
    grpc::Status bad = Predict(request, &response);
    EXPECT_EQ(bad.error_code(), StatusCode::INVALID_ARGUMENT) << bad.error_message();
    EXPECT_NE(bad.error_message().find(says), std::string::npos) << bad.error_message();
  };
  v1::PredictRequest r = gpt2;
  r.mutable_workload()->set_hf_config_json(R"({"model_type": "t5"})");
  expect_invalid(r, "unknown 'model_type' 't5'");
  r = gpt2;
  r.mutable_workload()->set_hf_config_json(R"({"model_type": "gpt2", "n_layer": 2})");
  expect_invalid(r, "missing key 'n_embd'");
  r = gpt2;
  (*r.mutable_workload()->mutable_params())["seq_len"] = 4096;
  expect_invalid(r, "exceeds 'n_positions' (1024)");
  r = gpt2;
  (*r.mutable_workload()->mutable_params())["layers"] = 2;
  expect_invalid(r, "only 'seq_len'");
  r = gpt2;
  r.mutable_workload()->set_family("decoder");
  expect_invalid(r, "family must be empty");
  r = gpt2;
  r.mutable_workload()->set_torchvision("resnet50");
  expect_invalid(r, "not both");
  r = resnet;
  r.mutable_workload()->set_torchvision("resnet42");
  expect_invalid(r, "unknown torchvision model 'resnet42'");
  r = resnet;
  (*r.mutable_workload()->mutable_params())["image"] = 16;
  expect_invalid(r, "'image' (16) is smaller than the network's stride");
}

TEST_F(PredictorServiceTest, BadFitInputsGiveFailedPrecondition) {
  v1::FitRequest request;
  v1::FitResponse response;
  request.mutable_selection()->add_gpu_models("no-such-gpu");
  grpc::Status status = Fit(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("no profiles match"), std::string::npos);

  // Too few rows for the folds: every regression is skipped.
  request.Clear();
  request.mutable_selection()->add_gpu_models("alpha1-gpu");
  request.mutable_options()->set_folds(100'000);
  status = Fit(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::FAILED_PRECONDITION) << status.error_message();

  // A singular design: one GPU and one workload repeated, so every feature
  // is constant.
  models::Node solo = testing::SyntheticNodes()[0];
  solo.name = "solo";
  solo.gpu.model = "solo-gpu";
  ASSERT_TRUE(store_->RegisterNode(solo).ok());
  {
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    for (int i = 0; i < 12; ++i) {
      models::Profile p;
      p.node_name = "solo";
      p.workload.kind = models::WorkloadKind::kOperation;
      p.workload.family = "gemm";
      p.workload.phase = models::Phase::kInference;
      p.workload.params = {{"m", 512}, {"n", 512}, {"k", 512}, {"batch", 1}};
      const double ms = 0.1 + 0.001 * i;
      p.iteration = {.count = 5, .mean_ms = ms, .median_ms = ms, .p95_ms = ms,
                     .min_ms = ms, .max_ms = ms};
      p.measured_at_us = 1'000'000 + i;
      ASSERT_TRUE((*import)->Add(i, p).ok());
    }
    ASSERT_TRUE((*import)->Commit().ok());
  }
  request.Clear();
  request.set_model_name("solo");
  request.mutable_selection()->add_gpu_models("solo-gpu");
  status = Fit(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::FAILED_PRECONDITION) << status.error_message();
  // Twelve GEMMs of one shape: every feature is constant, nothing can be fitted.
  EXPECT_NE(status.error_message().find("constant"), std::string::npos) << status.error_message();
  request.mutable_options()->set_folds(-1);
  EXPECT_EQ(Fit(request, &response).error_code(), StatusCode::INVALID_ARGUMENT);
}

// A fit learns from one measurement method: the newest present by default,
// an older one or all of them on request, and its summary says which.
TEST_F(PredictorServiceTest, FitUsesTheNewestMeasurementMethodUnlessTold) {
  v1::FitRequest request;
  v1::FitResponse old_only;
  ASSERT_TRUE(Fit(request, &old_only).ok());
  EXPECT_NE(old_only.model().summary().find("measurement method 1"), std::string::npos)
      << old_only.model().summary();

  // alpha1 and beta1 measured again with the current method.
  std::vector<models::Profile> remeasured;
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    if (p.node_name != "alpha1" && p.node_name != "beta1") return true;
                    models::Profile again = p;
                    again.id = 0;
                    again.content_hash.clear();
                    again.method_version = models::kCurrentMethodVersion;
                    again.conditions.dispatch_ops_per_s = 150000;
                    remeasured.push_back(again);
                    return true;
                  })
                  .ok());
  ASSERT_FALSE(remeasured.empty());
  {
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    for (size_t i = 0; i < remeasured.size(); ++i) {
      ASSERT_TRUE((*import)->Add(static_cast<int64_t>(i), remeasured[i]).ok());
    }
    auto summary = (*import)->Commit();
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_EQ(summary->accepted, static_cast<int64_t>(remeasured.size()));
  }

  v1::FitResponse newest;
  ASSERT_TRUE(Fit(request, &newest).ok());
  EXPECT_NE(newest.model().summary().find(
                absl::StrCat("measurement method ", models::kCurrentMethodVersion)),
            std::string::npos)
      << newest.model().summary();
  EXPECT_LT(newest.model().training_rows(), old_only.model().training_rows());

  request.mutable_selection()->set_method_version(1);
  v1::FitResponse older;
  ASSERT_TRUE(Fit(request, &older).ok());
  EXPECT_EQ(older.model().training_rows(), old_only.model().training_rows());

  request.mutable_selection()->set_method_version(0);
  request.mutable_selection()->set_all_methods(true);
  v1::FitResponse all;
  ASSERT_TRUE(Fit(request, &all).ok());
  EXPECT_NE(all.model().summary().find("all measurement methods"), std::string::npos);
  EXPECT_GT(all.model().training_rows(), old_only.model().training_rows());

  request.mutable_selection()->set_method_version(1);
  v1::FitResponse refused;
  EXPECT_EQ(Fit(request, &refused).error_code(), StatusCode::INVALID_ARGUMENT);
  request.mutable_selection()->set_all_methods(false);
  request.mutable_selection()->set_method_version(models::kCurrentMethodVersion + 1);
  EXPECT_EQ(Fit(request, &refused).error_code(), StatusCode::INVALID_ARGUMENT);
}

// Numeric hostility: absurd sizes and unknown enum values are refused with
// a clear code, and extreme but valid sizes give a finite answer or an
// error, never NaN or infinity.
TEST_F(PredictorServiceTest, HostileSizesNeverGiveNonFiniteAnswers) {
  FitHoldingOutBeta2();
  v1::PredictResponse response;
  auto expect = [&](const v1::PredictRequest& request, StatusCode code, const std::string& says) {
    grpc::Status status = Predict(request, &response);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(says), std::string::npos) << status.error_message();
  };
  v1::PredictRequest r = LstmQuery("beta2");
  r.mutable_workload()->set_batch_size(1'000'000'000'000'000'000);
  expect(r, StatusCode::INVALID_ARGUMENT, "batch_size");
  r = LstmQuery("beta2");
  (*r.mutable_workload()->mutable_params())["seq_len"] = int64_t{1} << 62;
  expect(r, StatusCode::INVALID_ARGUMENT, "seq_len");
  r = LstmQuery("beta2");
  r.mutable_workload()->set_precision(static_cast<v1::Precision>(77));
  expect(r, StatusCode::INVALID_ARGUMENT, "precision");
  r = LstmQuery("beta2");
  r.mutable_workload()->set_phase(static_cast<v1::Phase>(99));
  expect(r, StatusCode::INVALID_ARGUMENT, "phase");
  r = LstmQuery("beta2");
  r.mutable_workload()->set_kind(static_cast<v1::WorkloadKind>(42));
  expect(r, StatusCode::INVALID_ARGUMENT, "kind");
  r = LstmQuery("beta2");
  r.mutable_workload()->set_family(std::string(1 << 20, 'f'));
  expect(r, StatusCode::INVALID_ARGUMENT, "family");
  r = LstmQuery("");
  r.set_catalog_gpu(std::string(1 << 20, 'g'));
  expect(r, StatusCode::NOT_FOUND, "unknown GPU");
  r = LstmQuery("beta2");
  r.mutable_job()->set_samples(std::numeric_limits<int64_t>::max());
  r.mutable_job()->set_epochs(std::numeric_limits<int64_t>::max());
  expect(r, StatusCode::OUT_OF_RANGE, "overflow");
  // Once answered 45.6 trillion hours.
  r = LstmQuery("beta2");
  r.mutable_job()->Clear();
  r.mutable_job()->set_iterations(std::numeric_limits<int64_t>::max());
  expect(r, StatusCode::OUT_OF_RANGE, "iterations");

  // The largest sizes every family accepts, on a profiled and a spec-only GPU.
  auto finite_or_refused = [&](const v1::PredictRequest& request) {
    grpc::Status status = Predict(request, &response);
    if (status.ok()) {
      for (double v : {response.iteration_ms(), response.iteration_ms_low(),
                       response.iteration_ms_high(), response.job_seconds(),
                       response.job_seconds_low(), response.job_seconds_high()}) {
        EXPECT_TRUE(std::isfinite(v)) << request.ShortDebugString().substr(0, 200);
      }
      EXPECT_GT(response.iteration_ms(), 0);
    } else {
      EXPECT_TRUE(status.error_code() == StatusCode::INVALID_ARGUMENT ||
                  status.error_code() == StatusCode::FAILED_PRECONDITION ||
                  status.error_code() == StatusCode::OUT_OF_RANGE)
          << status.error_code() << " " << status.error_message();
      EXPECT_FALSE(status.error_message().empty());
    }
  };
  int answered = 0;
  for (const models::FamilyInfo& family : models::Families()) {
    for (const char* target : {"beta2", "spec-only"}) {
      v1::PredictRequest extreme;
      v1::Workload* w = extreme.mutable_workload();
      w->set_family(family.name);
      w->set_kind(family.kind == models::WorkloadKind::kModel ? v1::WORKLOAD_KIND_MODEL
                                                             : v1::WORKLOAD_KIND_OPERATION);
      for (const models::ParamInfo& param : family.params) {
        (*w->mutable_params())[param.name] = param.max_value;
      }
      w->set_batch_size(models::kMaxBatchSize);
      extreme.set_node_name(target);
      extreme.mutable_job()->set_iterations(std::numeric_limits<int64_t>::max());
      finite_or_refused(extreme);
      extreme.mutable_job()->clear_iterations();
      extreme.mutable_job()->set_samples(std::numeric_limits<int64_t>::max());
      extreme.mutable_job()->set_epochs(1);
      finite_or_refused(extreme);
      // The largest sizes no GPU holds are refused by the memory fit; the
      // smallest ones must be answered, finitely.
      for (const models::ParamInfo& param : family.params) {
        (*w->mutable_params())[param.name] = param.min_value;
      }
      w->set_batch_size(1);
      extreme.mutable_job()->Clear();
      extreme.mutable_job()->set_iterations(1);
      finite_or_refused(extreme);
      answered += Predict(extreme, &response).ok() ? 1 : 0;
    }
  }
  // Not every request is refused: the check above saw real answers.
  EXPECT_GT(answered, 0);
}

TEST_F(PredictorServiceTest, PredictBatchReportsPerQueryErrors) {
  FitHoldingOutBeta2();
  v1::PredictBatchRequest batch;
  *batch.add_queries() = LstmQuery("beta2");                     // 0 ok
  *batch.add_queries() = LstmQuery("no-such-node");              // 1 NOT_FOUND
  v1::PredictRequest zero = LstmQuery("beta2");
  zero.mutable_workload()->set_batch_size(0);
  *batch.add_queries() = zero;                                   // 2 INVALID_ARGUMENT
  v1::PredictRequest epochs = LstmQuery("beta2");
  epochs.mutable_job()->set_epochs(-2);
  *batch.add_queries() = epochs;                                 // 3 INVALID_ARGUMENT
  v1::PredictRequest other = LstmQuery("alpha1");
  other.mutable_job()->set_epochs(6);
  *batch.add_queries() = other;                                  // 4 ok
  *batch.add_queries() = LstmQuery("beta2");                     // 5 ok, cached

  grpc::ClientContext context;
  auto stream = stub_->PredictBatch(&context);
  ASSERT_TRUE(stream->Write(batch));
  batch.set_brief(true);
  ASSERT_TRUE(stream->Write(batch));
  ASSERT_TRUE(stream->WritesDone());
  v1::PredictBatchResponse full, brief;
  ASSERT_TRUE(stream->Read(&full));
  ASSERT_TRUE(stream->Read(&brief));
  ASSERT_TRUE(stream->Finish().ok());

  v1::PredictResponse single;
  ASSERT_TRUE(Predict(LstmQuery("beta2"), &single).ok());
  for (const v1::PredictBatchResponse* response : {&full, &brief}) {
    ASSERT_EQ(response->results_size(), 6);
    const auto& r = response->results();
    EXPECT_EQ(r[0].code(), 0) << r[0].error();
    EXPECT_EQ(r[1].code(), static_cast<int>(StatusCode::NOT_FOUND));
    EXPECT_EQ(r[2].code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(r[2].error().find("batch_size"), std::string::npos);
    EXPECT_EQ(r[3].code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(r[3].error().find("epochs"), std::string::npos);
    EXPECT_EQ(r[4].code(), 0) << r[4].error();
    EXPECT_EQ(r[5].code(), 0) << r[5].error();
    EXPECT_DOUBLE_EQ(r[0].prediction().iteration_ms(), single.iteration_ms());
    EXPECT_DOUBLE_EQ(r[0].prediction().job_seconds(), single.job_seconds());
    EXPECT_DOUBLE_EQ(r[5].prediction().job_seconds(), single.job_seconds());
    EXPECT_EQ(r[4].prediction().iterations(), 6 * ((100'000 + 63) / 64));
  }
  EXPECT_FALSE(full.results(0).prediction().features().empty());
  EXPECT_TRUE(brief.results(0).prediction().features().empty());
}

// The compact layout carries the same results as the per-query one, full
// and brief, each distinct answer once per message; a full row equals unary
// Predict's answer to its query.
TEST_F(PredictorServiceTest, PredictBatchCompactResultsEqualPerQueryResults) {
  FitHoldingOutBeta2();
  v1::PredictBatchRequest batch;
  *batch.add_queries() = LstmQuery("beta2");         // 0 ok
  *batch.add_queries() = LstmQuery("no-such-node");  // 1 NOT_FOUND
  v1::PredictRequest other = LstmQuery("alpha1");
  other.mutable_job()->set_epochs(6);
  *batch.add_queries() = other;                      // 2 ok
  v1::PredictRequest longer = LstmQuery("beta2");
  longer.mutable_job()->set_epochs(9);
  *batch.add_queries() = longer;                     // 3 ok, 0's answer
  v1::PredictRequest zero = LstmQuery("beta2");
  zero.mutable_workload()->set_batch_size(0);
  *batch.add_queries() = zero;                       // 4 INVALID_ARGUMENT

  grpc::ClientContext context;
  auto stream = stub_->PredictBatch(&context);
  for (bool brief : {false, true}) {
    for (bool compact : {false, true}) {
      batch.set_brief(brief);
      batch.set_compact(compact);
      ASSERT_TRUE(stream->Write(batch));
    }
  }
  ASSERT_TRUE(stream->WritesDone());
  std::vector<v1::PredictBatchResponse> responses(4);
  for (v1::PredictBatchResponse& response : responses) ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(stream->Finish().ok());

  for (int brief = 0; brief < 2; ++brief) {
    const v1::PredictBatchResponse& rows = responses[2 * brief];
    const v1::PredictBatchResponse& table = responses[2 * brief + 1];
    EXPECT_EQ(rows.results_size(), 5);
    EXPECT_FALSE(rows.has_compact());
    ASSERT_TRUE(table.has_compact());
    EXPECT_EQ(table.results_size(), 0);
    EXPECT_EQ(table.compact().answers_size(), 2);  // beta2's and alpha1's
    ASSERT_TRUE(proto::ValidateBatchResponse(table).ok());
    ASSERT_EQ(proto::BatchResultCount(table), 5);
    v1::PredictResult result;
    for (int i = 0; i < 5; ++i) {
      proto::BatchResult(table, i, &result);
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(result, rows.results(i)))
          << i << ":\n" << result.ShortDebugString() << "\nvs\n"
          << rows.results(i).ShortDebugString();
    }
    EXPECT_EQ(table.compact().answer(1), -1);
    EXPECT_EQ(table.compact().failed_codes(0), static_cast<int>(StatusCode::NOT_FOUND));
    EXPECT_EQ(table.compact().failed_codes(1), static_cast<int>(StatusCode::INVALID_ARGUMENT));
  }
  // Full rows are unary Predict's answers.
  for (int i : {0, 2, 3}) {
    v1::PredictResponse single;
    ASSERT_TRUE(Predict(batch.queries(i), &single).ok());
    v1::PredictResult result;
    proto::BatchResult(responses[1], i, &result);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(result.prediction(), single))
        << i;
    EXPECT_FALSE(result.prediction().breakdown().empty());
  }
}

// Without the answer cache Predict encodes a price it made for this one
// response (its strings moved into the reply, not copied); with it, a kept
// answer that later questions share. Both are the same full answer, the
// lists included, asked once or again.
TEST_F(PredictorServiceTest, UncachedAnswersAreTheCachedOnes) {
  FitHoldingOutBeta2();
  std::unique_ptr<Server> uncached;
  std::unique_ptr<v1::Predictor::Stub> stub;
  ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &uncached, &stub));
  std::vector<v1::PredictRequest> queries = {LstmQuery("beta2"), LstmQuery("alpha1"),
                                             LstmQuery("")};
  queries[2].set_catalog_gpu("H100-SXM5-80GB");
  for (int round = 0; round < 2; ++round) {
    for (const v1::PredictRequest& query : queries) {
      v1::PredictResponse cached, fresh;
      ASSERT_TRUE(Predict(query, &cached).ok());
      grpc::ClientContext context;
      grpc::Status status = stub->Predict(&context, query, &fresh);
      ASSERT_TRUE(status.ok()) << status.error_message();
      EXPECT_FALSE(fresh.features().empty()) << query.ShortDebugString();
      EXPECT_FALSE(fresh.breakdown().empty()) << query.ShortDebugString();
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(cached, fresh))
          << cached.ShortDebugString() << "\nvs\n" << fresh.ShortDebugString();
    }
  }
}

// Predict's request and response live in holders that the server reuses
// from call to call: no field of one call's request or answer may reach the
// next. Each answer, after many calls of other shapes (a layout, an error,
// other parameters), is the one a server answering its first call gave.
TEST_F(PredictorServiceTest, ReusedCallMessagesCarryNothingOver) {
  FitHoldingOutBeta2();
  v1::PredictRequest plain = LstmQuery("beta2");
  v1::PredictRequest parallel = LstmQuery("");
  parallel.set_catalog_gpu("H100-SXM5-80GB");
  parallel.mutable_parallel()->set_data_parallel(2);
  (*parallel.mutable_workload()->mutable_params())["hidden"] = 512;
  (*parallel.mutable_workload()->mutable_params())["seq_len"] = 48;
  v1::PredictRequest no_job = plain;
  no_job.clear_job();
  const std::vector<v1::PredictRequest> queries = {plain, parallel, no_job};
  std::vector<v1::PredictResponse> first(queries.size());
  std::vector<grpc::Status> first_status(queries.size());
  for (size_t q = 0; q < queries.size(); ++q) {
    std::unique_ptr<Server> fresh;
    std::unique_ptr<v1::Predictor::Stub> stub;
    ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &fresh, &stub));
    grpc::ClientContext context;
    first_status[q] = stub->Predict(&context, queries[q], &first[q]);
  }
  ASSERT_TRUE(first_status[0].ok()) << first_status[0].error_message();
  ASSERT_TRUE(first_status[1].ok()) << first_status[1].error_message();
  ASSERT_EQ(first_status[2].error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(first[0].has_memory() && !first[0].has_parallel());
  EXPECT_TRUE(first[1].has_parallel() && first[1].has_memory());
  EXPECT_LE(first[1].memory().peak_bytes_low(), first[1].memory().peak_bytes());
  EXPECT_GE(first[1].memory().peak_bytes_high(), first[1].memory().peak_bytes());
  EXPECT_EQ(first[1].workload().params().at("seq_len"), 48);

  // One client calling one at a time: every call after the first reuses
  // the holder of the call before it.
  ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &server_, &stub_));
  for (int round = 0; round < 150; ++round) {
    for (size_t i = 0; i < queries.size(); ++i) {
      const size_t q = (i + round) % queries.size();
      v1::PredictResponse response;
      grpc::Status status = Predict(queries[q], &response);
      ASSERT_EQ(status.error_code(), first_status[q].error_code()) << round << " " << q;
      ASSERT_EQ(status.error_message(), first_status[q].error_message());
      ASSERT_TRUE(google::protobuf::util::MessageDifferencer::Equals(response, first[q]))
          << round << " " << q << ": " << response.ShortDebugString() << "\nvs\n"
          << first[q].ShortDebugString();
    }
  }
}

// Predict with the answer cache and without, asked twice and with another
// job size, answers what PredictBatch answers for the same queries: the same
// messages and the same errors, over workloads that take every part of an
// answer: level 2 and level 1, measured and spec-sheet rates, extrapolated
// features, uncalibrated classes, a resolved Hugging Face config, an
// operation, a layout.
TEST_F(PredictorServiceTest, PredictAnswersAsPredictBatchWithAndWithoutTheCache) {
  FitHoldingOutBeta2();
  std::unique_ptr<Server> bytes_server;
  std::unique_ptr<v1::Predictor::Stub> bytes_stub;
  ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &bytes_server, &bytes_stub));
  std::vector<v1::PredictRequest> queries;
  for (const char* node : {"beta2", "alpha1", "spec-only"}) queries.push_back(LstmQuery(node));
  v1::PredictRequest catalog = LstmQuery("");
  catalog.set_catalog_gpu("L40S");
  queries.push_back(catalog);
  v1::PredictRequest inference = LstmQuery("beta2");
  inference.mutable_workload()->set_phase(v1::PHASE_INFERENCE);
  (*inference.mutable_workload()->mutable_params())["hidden"] = 2048;
  inference.clear_job();
  inference.mutable_job()->set_iterations(7);
  queries.push_back(inference);
  v1::PredictRequest gpt2 = LstmQuery("beta2");
  gpt2.mutable_workload()->clear_family();
  gpt2.mutable_workload()->clear_params();
  gpt2.mutable_workload()->set_hf_config_json(
      R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 256, "n_head": 4,
          "n_positions": 128, "vocab_size": 1000})");
  queries.push_back(gpt2);
  v1::PredictRequest gemm = LstmQuery("beta2");
  gemm.mutable_workload()->set_kind(v1::WORKLOAD_KIND_OPERATION);
  gemm.mutable_workload()->set_family("gemm");
  gemm.mutable_workload()->clear_params();
  for (const char* side : {"m", "n", "k"}) (*gemm.mutable_workload()->mutable_params())[side] = 1024;
  gemm.mutable_workload()->set_batch_size(1);
  queries.push_back(gemm);
  v1::PredictRequest layout = LstmQuery("");
  layout.set_catalog_gpu("H100-SXM5-80GB");
  layout.mutable_parallel()->set_data_parallel(2);
  queries.push_back(layout);
  // Errors: no job, an unknown node, a workload that does not fit the GPU.
  v1::PredictRequest no_job = LstmQuery("beta2");
  no_job.clear_job();
  queries.push_back(no_job);
  queries.push_back(LstmQuery("nowhere"));
  v1::PredictRequest huge = LstmQuery("beta2");
  huge.mutable_workload()->set_batch_size(int64_t{1} << 24);
  (*huge.mutable_workload()->mutable_params())["hidden"] = 8192;
  queries.push_back(huge);

  // The reference: PredictBatch's full results.
  v1::PredictBatchRequest batch;
  for (const v1::PredictRequest& query : queries) *batch.add_queries() = query;
  v1::PredictBatchResponse reference;
  {
    grpc::ClientContext context;
    auto stream = stub_->PredictBatch(&context);
    ASSERT_TRUE(stream->Write(batch));
    ASSERT_TRUE(stream->WritesDone());
    ASSERT_TRUE(stream->Read(&reference));
    ASSERT_TRUE(stream->Finish().ok());
  }
  ASSERT_EQ(reference.results_size(), static_cast<int>(queries.size()));

  bool level1 = false, extrapolated = false, uncalibrated = false, spec_rates = false;
  bool notes = false;
  int answered = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const v1::PredictResponse& message = reference.results(i).prediction();
    const int code = reference.results(i).code();
    // The answer priced afresh (answer cache off), and the cached answer
    // (the default server), asked twice: the second a cache hit, then a hit
    // with another job size.
    v1::PredictRequest other_job = queries[i];
    if (other_job.job().iterations() > 0) {
      other_job.mutable_job()->set_iterations(other_job.job().iterations() + 5);
    } else {
      other_job.mutable_job()->set_epochs(other_job.job().epochs() + 7);
    }
    std::vector<const v1::PredictRequest*> asked = {&queries[i], &queries[i]};
    if (code == 0) asked.push_back(&other_job);
    for (const v1::PredictRequest* query : asked) {
      for (v1::Predictor::Stub* stub : {bytes_stub.get(), stub_.get()}) {
        v1::PredictResponse bytes;
        grpc::ClientContext context;
        grpc::Status status = stub->Predict(&context, *query, &bytes);
        ASSERT_EQ(static_cast<int>(status.error_code()), code)
            << status.error_message() << " vs " << reference.results(i).error();
        if (code != 0) {
          EXPECT_EQ(status.error_message(), reference.results(i).error());
          continue;
        }
        v1::PredictResponse expected = message;
        if (query == &other_job) {
          // The job's fields from a unary Predict of the reference's kind:
          // only they may differ.
          expected.clear_iterations();
          expected.clear_job_seconds();
          expected.clear_job_seconds_low();
          expected.clear_job_seconds_high();
          bytes.clear_iterations();
          bytes.clear_job_seconds();
          bytes.clear_job_seconds_low();
          bytes.clear_job_seconds_high();
        }
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(bytes, expected))
            << bytes.ShortDebugString() << "\nvs\n" << expected.ShortDebugString();
      }
    }
    if (code != 0) continue;
    // A cache hit with another job size answers that job: the same as the
    // cache-off server priced afresh.
    v1::PredictResponse hit, fresh;
    grpc::ClientContext hit_context, fresh_context;
    ASSERT_TRUE(stub_->Predict(&hit_context, other_job, &hit).ok());
    ASSERT_TRUE(bytes_stub->Predict(&fresh_context, other_job, &fresh).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(hit, fresh));
    EXPECT_NE(hit.job_seconds(), message.job_seconds()) << "the job was not rewritten";
    ++answered;
    level1 = level1 || message.level() == 1;
    extrapolated = extrapolated || message.extrapolated_features_size() > 0;
    uncalibrated = uncalibrated || message.uncalibrated_classes_size() > 0;
    spec_rates = spec_rates || message.rate_source() != "measured";
    notes = notes || message.notes_size() > 0;  // the Hugging Face config's
  }
  EXPECT_EQ(answered, static_cast<int>(queries.size()) - 3);
  EXPECT_TRUE(level1 && extrapolated && uncalibrated && spec_rates && notes);
}

// Predict's bytes `request` sent as they are to the server at `port`.
grpc::Status PredictBytes(int port, const std::string& request, v1::PredictResponse* response) {
  grpc::GenericStub generic(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                grpc::InsecureChannelCredentials()));
  grpc::Slice slice(request.data(), request.size());
  grpc::ByteBuffer sent(&slice, 1), received;
  grpc::ClientContext context;
  grpc::CompletionQueue cq;
  grpc::Status status;
  auto call = generic.PrepareUnaryCall(&context, "/perfcast.v1.Predictor/Predict", sent, &cq);
  call->StartCall();
  call->Finish(&received, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  if (!cq.Next(&tag, &ok)) return grpc::Status(StatusCode::UNKNOWN, "no completion");
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    if (!received.Dump(&slices).ok()) return grpc::Status(StatusCode::UNKNOWN, "no bytes");
    std::string bytes;
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    if (!response->ParseFromString(bytes)) return grpc::Status(StatusCode::UNKNOWN, "no answer");
  }
  return status;
}

// Predict takes bytes: bytes that are no PredictRequest are the client's
// fault, INVALID_ARGUMENT (gRPC's own answer, INTERNAL, read as a server
// fault), and the next call is served.
TEST_F(PredictorServiceTest, UnparsableRequestBytesAreInvalidArguments) {
  FitHoldingOutBeta2();
  const char garbage[] = "\x0a\xff\xff\xff\xff\x0f";  // a field longer than the message
  v1::PredictResponse answer;
  grpc::Status status =
      PredictBytes(server_->port(), std::string(garbage, sizeof(garbage) - 1), &answer);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  grpc::Status next = Predict(LstmQuery("beta2"), &answer);
  EXPECT_TRUE(next.ok()) << next.error_message();
  EXPECT_GT(answer.iteration_ms(), 0);
}

// A workload is kept by its fields, not its bytes, which are no canonical
// form: the same request written in other orders, its workload's parameters
// too, or with its workload in two parts that merge, gets the answer of its
// fields, with the answer cache and without; a workload whose bytes do not
// parse is INVALID_ARGUMENT.
TEST_F(PredictorServiceTest, ARequestInOtherByteOrdersAnswersAsItsFields) {
  FitHoldingOutBeta2();
  std::unique_ptr<Server> uncached;
  std::unique_ptr<v1::Predictor::Stub> uncached_stub;
  ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &uncached, &uncached_stub));
  const v1::PredictRequest query = LstmQuery("beta2");
  v1::PredictRequest other = query;  // another workload, for the first call to see
  (*other.mutable_workload()->mutable_params())["hidden"] += 64;
  v1::PredictResponse expected, expected_other;
  ASSERT_TRUE(Predict(query, &expected).ok());
  ASSERT_TRUE(Predict(other, &expected_other).ok());

  auto part = [](auto fill) {
    v1::PredictRequest r;
    fill(r);
    return r.SerializeAsString();
  };
  const v1::Workload& w = query.workload();
  std::vector<std::string> params;  // each parameter as a request of it alone
  for (const auto& [name, value] : w.params()) {
    params.push_back(part([&](v1::PredictRequest& r) {
      (*r.mutable_workload()->mutable_params())[name] = value;
    }));
  }
  ASSERT_GE(params.size(), 2u);
  v1::PredictRequest without_params = query;
  without_params.mutable_workload()->clear_params();
  const std::string job_first =
      part([&](v1::PredictRequest& r) { *r.mutable_job() = query.job(); }) +
      part([&](v1::PredictRequest& r) {
        *r.mutable_workload() = without_params.workload();
        r.set_node_name(query.node_name());
      });
  // One workload field: its parameters in the other order.
  v1::Workload reversed = without_params.workload();
  std::string reversed_bytes = reversed.SerializeAsString();
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    v1::PredictRequest one;
    ASSERT_TRUE(one.ParseFromString(*it));
    reversed_bytes += one.workload().SerializeAsString();
  }
  v1::PredictRequest rest = query;
  rest.clear_workload();
  const std::string one_field = rest.SerializeAsString() + std::string("\x0a", 1) +
                                std::string(1, static_cast<char>(reversed_bytes.size())) +
                                reversed_bytes;
  ASSERT_LT(reversed_bytes.size(), 128u);
  std::string merged = job_first;
  for (const std::string& p : params) merged += p;  // the workload in parts
  const std::vector<std::string> forms = {query.SerializeAsString(), one_field, merged,
                                          one_field};  // the last: seen before
  for (Server* server : {server_.get(), uncached.get()}) {
    v1::PredictResponse answer;
    ASSERT_TRUE(PredictBytes(server->port(), other.SerializeAsString(), &answer).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(answer, expected_other));
    for (size_t i = 0; i < forms.size(); ++i) {
      v1::PredictRequest parsed;
      ASSERT_TRUE(parsed.ParseFromString(forms[i]));
      ASSERT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, query)) << i;
      grpc::Status status = PredictBytes(server->port(), forms[i], &answer);
      ASSERT_TRUE(status.ok()) << i << ": " << status.error_message();
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(answer, expected))
          << i << ": " << answer.ShortDebugString() << "\nvs\n" << expected.ShortDebugString();
    }
    // A workload of bytes that are no Workload (a family longer than the
    // workload) inside a request that parses around it.
    const std::string bad = rest.SerializeAsString() + std::string("\x0a\x03\x12\x09x", 5);
    grpc::Status status = PredictBytes(server->port(), bad, &answer);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  }
}

// A workload that differs in any field is another workload (described
// afresh, not taken for one kept), and each answer is what the library
// computes for it.
TEST_F(PredictorServiceTest, DescribedWorkloadsAreKeptPerDistinctWorkload) {
  FitHoldingOutBeta2();
  std::unique_ptr<Server> uncached;
  std::unique_ptr<v1::Predictor::Stub> stub;
  ASSERT_NO_FATAL_FAILURE(StartServer(/*answer_cache=*/false, &uncached, &stub));
  absl::StatusOr<db::StoredModel> stored = store_->LatestModel("default");
  ASSERT_TRUE(stored.ok()) << stored.status();
  absl::StatusOr<std::shared_ptr<const serving::LoadedModel>> loaded =
      serving::LoadModel(*std::move(stored));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<models::Node> node = store_->GetNode("beta2");
  ASSERT_TRUE(node.ok()) << node.status();

  std::vector<v1::PredictRequest> queries(6, LstmQuery("beta2"));
  (*queries[1].mutable_workload()->mutable_params())["layers"] = 4;
  (*queries[2].mutable_workload()->mutable_params())["hidden"] = 512;
  queries[3].mutable_workload()->set_precision(v1::PRECISION_FP32);
  queries[4].mutable_workload()->set_batch_size(128);
  // queries[5] asks queries[0]'s question again, its params inserted in
  // another order.
  queries[5].mutable_workload()->mutable_params()->clear();
  (*queries[5].mutable_workload()->mutable_params())["hidden"] = 384;
  (*queries[5].mutable_workload()->mutable_params())["layers"] = 3;
  std::set<double> distinct;
  for (const v1::PredictRequest& query : queries) {
    v1::PredictResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub->Predict(&context, query, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    absl::StatusOr<models::WorkloadSpec> spec = proto::FromProto(query.workload());
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<predictor::Prediction> expected =
        predictor::Predict((*loaded)->model, *spec, *node);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_EQ(response.iteration_ms(), expected->iteration_ms) << spec->Key();
    EXPECT_EQ(response.workload().params().at("layers"), spec->params.at("layers"));
    EXPECT_EQ(response.workload().batch_size(), spec->batch_size);
    distinct.insert(response.iteration_ms());
  }
  EXPECT_EQ(distinct.size(), 5u);

  // No workload and an empty one are told apart, whichever comes first.
  for (int round = 0; round < 2; ++round) {
    v1::PredictRequest absent = LstmQuery("beta2");
    absent.clear_workload();
    v1::PredictRequest empty = absent;
    empty.mutable_workload();
    for (const v1::PredictRequest& query : round == 0 ? std::vector{absent, empty}
                                                      : std::vector{empty, absent}) {
      v1::PredictResponse response;
      grpc::ClientContext context;
      grpc::Status status = stub->Predict(&context, query, &response);
      EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
      EXPECT_EQ(status.error_message(), query.has_workload() ? "workload.family is required"
                                                             : "workload is required");
    }
  }
}

TEST_F(PredictorServiceTest, EvaluateAndModels) {
  FitHoldingOutBeta2();
  for (v1::SplitStrategy split :
       {v1::SPLIT_LEAVE_ONE_GPU_OUT, v1::SPLIT_K_FOLD, v1::SPLIT_HELD_OUT_LARGER_SIZES,
        v1::SPLIT_LARGEST_SIZE_PER_FAMILY}) {
    v1::EvaluateRequest request;
    request.set_split(split);
    v1::EvaluateResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->Evaluate(&context, request, &response);
    ASSERT_TRUE(status.ok()) << split << ": " << status.error_message();
    EXPECT_TRUE(std::isfinite(response.level2_mape()));
    EXPECT_LT(response.level2_mape(), 0.15) << split;
    EXPECT_FALSE(response.points().empty());
    EXPECT_FALSE(response.per_gpu().empty());
    EXPECT_FALSE(response.selected_features().empty());
    nlohmann::json report = nlohmann::json::parse(response.report_json());
    EXPECT_EQ(report["points"].size(), static_cast<size_t>(response.points_size()));
    for (const v1::EvaluatedPoint& p : response.points()) {
      ASSERT_TRUE(std::isfinite(p.predicted_ms()));
    }
    EXPECT_GT(response.level2_rows(), 0) << split;
    // Held-out sizes evaluate workloads only: level 1 has no rows to report.
    if (split == v1::SPLIT_HELD_OUT_LARGER_SIZES) {
      EXPECT_EQ(response.level1_rows(), 0);
      EXPECT_GT(response.size_threshold(), 0);
    } else if (split != v1::SPLIT_LARGEST_SIZE_PER_FAMILY) {
      EXPECT_GT(response.level1_rows(), 0) << split;
    }
    if (split == v1::SPLIT_LARGEST_SIZE_PER_FAMILY) {
      // The synthetic lstm runs' largest size (4 layers, the wider hidden).
      ASSERT_EQ(response.per_family_size(), 1);
      EXPECT_EQ(response.per_family(0).group(), "lstm");
      EXPECT_EQ(report["split"], "largest-size-per-family");
      for (const v1::EvaluatedPoint& p : response.points()) {
        EXPECT_NE(p.workload_key().find("hidden=512,"), std::string::npos) << p.workload_key();
        EXPECT_NE(p.workload_key().find("layers=4,"), std::string::npos) << p.workload_key();
      }
    }
  }
  v1::EvaluateRequest none;
  none.mutable_selection()->add_families("no-such-family");
  none.mutable_selection()->add_gpu_models("no-such-gpu");
  v1::EvaluateResponse response;
  grpc::ClientContext context;
  EXPECT_EQ(stub_->Evaluate(&context, none, &response).error_code(),
            StatusCode::FAILED_PRECONDITION);

  v1::ListModelsResponse list;
  grpc::ClientContext list_context;
  ASSERT_TRUE(stub_->ListModels(&list_context, v1::ListModelsRequest(), &list).ok());
  ASSERT_EQ(list.models_size(), 1);
  v1::GetModelRequest get;
  get.set_id(list.models(0).id());
  v1::GetModelResponse got;
  grpc::ClientContext get_context;
  ASSERT_TRUE(stub_->GetModel(&get_context, get, &got).ok());
  EXPECT_FALSE(got.model().detail_json().empty());
  get.set_id(987654);
  grpc::ClientContext missing_context;
  EXPECT_EQ(stub_->GetModel(&missing_context, get, &got).error_code(), StatusCode::NOT_FOUND);
}

// The transfer protocol over the API: fitted on the training GPUs alone,
// reported per test GPU, class, family and phase with bias and coverage; bad
// GPU lists are INVALID_ARGUMENT naming the GPU.
TEST_F(PredictorServiceTest, EvaluateTrainTestGpus) {
  v1::EvaluateRequest request;
  request.set_split(v1::SPLIT_TRAIN_TEST_GPUS);
  request.add_train_gpus("alpha1-gpu");
  request.add_train_gpus("alpha2-gpu");
  request.add_train_gpus("alpha1-gpu");  // a repeat counts once
  request.add_test_gpus("beta1-gpu");
  v1::EvaluateResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->Evaluate(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_EQ(std::vector<std::string>(response.train_gpus().begin(), response.train_gpus().end()),
            (std::vector<std::string>{"alpha1-gpu", "alpha2-gpu"}));
  ASSERT_EQ(response.test_gpus_size(), 1);
  EXPECT_EQ(response.test_gpus(0), "beta1-gpu");
  ASSERT_GT(response.level1_rows(), 0);
  ASSERT_GT(response.level2_rows(), 0);
  int64_t covered[3] = {0, 0, 0}, rows[3] = {0, 0, 0};
  for (const v1::EvaluatedPoint& p : response.points()) {
    EXPECT_EQ(p.gpu_model(), "beta1-gpu");
    EXPECT_FALSE(p.phase().empty());
    EXPECT_FALSE(p.method().empty());
    EXPECT_EQ(p.op_class().empty(), p.level() == 2) << p.workload_key();
    EXPECT_LT(p.predicted_ms_low(), p.predicted_ms_high());
    ++rows[p.level()];
    covered[p.level()] +=
        p.predicted_ms_low() <= p.measured_ms() && p.measured_ms() <= p.predicted_ms_high();
  }
  EXPECT_DOUBLE_EQ(response.level1_coverage(), static_cast<double>(covered[1]) / rows[1]);
  EXPECT_DOUBLE_EQ(response.level2_coverage(), static_cast<double>(covered[2]) / rows[2]);
  ASSERT_EQ(response.per_gpu_size(), 2);  // one per level
  for (const v1::GroupError& g : response.per_gpu()) {
    EXPECT_EQ(g.group(), "beta1-gpu");
    EXPECT_DOUBLE_EQ(g.coverage(), g.level() == 1 ? response.level1_coverage()
                                                  : response.level2_coverage());
    EXPECT_DOUBLE_EQ(g.bias(), g.level() == 1 ? response.level1_bias() : response.level2_bias());
  }
  EXPECT_FALSE(response.per_class().empty());
  EXPECT_FALSE(response.per_phase().empty());
  // The model shown is the one fitted on the training GPUs.
  nlohmann::json report = nlohmann::json::parse(response.report_json());
  EXPECT_EQ(report["split"], "train-test-gpus");
  EXPECT_EQ(report["test_gpus"], nlohmann::json::array({"beta1-gpu"}));
  EXPECT_EQ(report["model_fitted_on"], "training GPUs");
  for (const auto& [phase, m] : report["model"]["level2"].items()) {
    EXPECT_EQ(m["training_gpus"], nlohmann::json::array({"alpha1-gpu", "alpha2-gpu"})) << phase;
  }
  EXPECT_TRUE(report["level1"]["by_gpu"]["beta1-gpu"].contains("coverage"));

  auto invalid = [&](v1::EvaluateRequest bad, const std::string& says) {
    grpc::ClientContext context;
    v1::EvaluateResponse ignored;
    grpc::Status status = stub_->Evaluate(&context, bad, &ignored);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_NE(status.error_message().find(says), std::string::npos) << status.error_message();
  };
  v1::EvaluateRequest bad = request;
  bad.add_test_gpus("gamma-gpu");
  invalid(bad, "unknown GPU 'gamma-gpu'");
  bad = request;
  bad.add_test_gpus("alpha2-gpu");
  invalid(bad, "'alpha2-gpu' is both");
  bad = request;
  bad.add_test_gpus("beta2-gpu");  // registered, never profiled
  invalid(bad, "beta2-gpu");
  bad = request;
  bad.clear_test_gpus();
  invalid(bad, "test_gpus");
  bad = request;
  bad.add_train_gpus("");
  invalid(bad, "train_gpus: an empty GPU model");
  bad = request;
  bad.set_split(v1::SPLIT_LEAVE_ONE_GPU_OUT);
  invalid(bad, "SPLIT_TRAIN_TEST_GPUS");
}

// Public measurements import as method 1 beside an agent's newer profiles:
// a protocol naming their GPUs says why it finds none, and all methods work.
TEST_F(PredictorServiceTest, TrainTestGpusSayWhenOlderMethodsWereLeftOut) {
  std::vector<models::Profile> remeasured;
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    if (p.node_name != "alpha1") return true;
                    models::Profile again = p;
                    again.id = 0;
                    again.content_hash.clear();
                    again.method_version = models::kCurrentMethodVersion;
                    remeasured.push_back(again);
                    return true;
                  })
                  .ok());
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  for (size_t i = 0; i < remeasured.size(); ++i) {
    ASSERT_TRUE((*import)->Add(static_cast<int64_t>(i), remeasured[i]).ok());
  }
  ASSERT_TRUE((*import)->Commit().ok());

  v1::EvaluateRequest request;
  request.set_split(v1::SPLIT_TRAIN_TEST_GPUS);
  request.add_train_gpus("alpha2-gpu");
  request.add_test_gpus("alpha1-gpu");
  v1::EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->Evaluate(&context, request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("no selected profile ran on GPU alpha2-gpu"),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("older measurement methods were left out"),
            std::string::npos)
      << status.error_message();

  request.mutable_selection()->set_all_methods(true);
  grpc::ClientContext all_context;
  status = stub_->Evaluate(&all_context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(response.level2_rows(), 0);

  // Each GPU's newest method: alpha1's remeasured rows, alpha2's method-1
  // rows, and the notes say which method each GPU contributed.
  request.mutable_selection()->set_all_methods(false);
  request.mutable_selection()->set_newest_per_gpu(true);
  v1::EvaluateResponse per_gpu;
  grpc::ClientContext per_gpu_context;
  status = stub_->Evaluate(&per_gpu_context, request, &per_gpu);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(per_gpu.level2_rows(), 0);
  EXPECT_LT(per_gpu.level2_rows(), response.level2_rows());  // alpha1's method-1 rows left out
  bool named = false;
  for (const std::string& note : per_gpu.notes()) {
    named = named || (note.find("alpha1-gpu: " + std::to_string(models::kCurrentMethodVersion)) !=
                          std::string::npos &&
                      note.find("alpha2-gpu: 1") != std::string::npos);
  }
  EXPECT_TRUE(named);

  request.mutable_selection()->set_all_methods(true);
  grpc::ClientContext refused_context;
  EXPECT_EQ(stub_->Evaluate(&refused_context, request, &per_gpu).error_code(),
            StatusCode::INVALID_ARGUMENT);
}

// A single operation through Predict: the level-1 model of its class, with
// its band, one call per iteration.
TEST_F(PredictorServiceTest, PredictsOneOperation) {
  FitHoldingOutBeta2();
  auto gemm = [](int64_t m) {
    v1::PredictRequest request;
    v1::Workload* w = request.mutable_workload();
    w->set_kind(v1::WORKLOAD_KIND_OPERATION);
    w->set_family("gemm");
    (*w->mutable_params())["m"] = m;
    (*w->mutable_params())["n"] = 4096;
    (*w->mutable_params())["k"] = 4096;
    w->set_batch_size(1);
    w->set_precision(v1::PRECISION_BF16_AMP);
    w->set_phase(v1::PHASE_INFERENCE);
    request.set_node_name("beta2");
    request.mutable_job()->set_iterations(10);
    return request;
  };
  v1::PredictResponse small, large;
  grpc::Status status = Predict(gemm(1024), &small);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(Predict(gemm(8192), &large).ok());
  EXPECT_EQ(small.method(), "level1-operation");
  EXPECT_EQ(small.level(), 1);
  EXPECT_LT(small.iteration_ms_low(), small.iteration_ms());
  EXPECT_GT(small.iteration_ms_high(), small.iteration_ms());
  EXPECT_GT(large.iteration_ms(), 4 * small.iteration_ms());
  ASSERT_EQ(small.breakdown_size(), 1);
  EXPECT_EQ(small.breakdown(0).op_class(), "gemm");
  EXPECT_DOUBLE_EQ(small.breakdown(0).ms(), small.iteration_ms());
  EXPECT_DOUBLE_EQ(small.job_seconds(), 10 * small.iteration_ms() / 1000);
  // The true law of the synthetic store, on the node never profiled.
  absl::StatusOr<models::WorkloadSpec> spec = proto::FromProto(gemm(8192).workload());
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(*spec);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(large.iteration_ms(), testing::TrueIterationMs(*d, nodes_[3]),
              0.25 * large.iteration_ms());

  v1::PredictRequest wrong_kind = gemm(1024);
  wrong_kind.mutable_workload()->set_family("lstm");
  EXPECT_EQ(Predict(wrong_kind, &small).error_code(), StatusCode::INVALID_ARGUMENT);
}

// Whole models: the breakdown adds up to the answer, its scaling said.
TEST_F(PredictorServiceTest, BreakdownAddsUpToTheAnswer) {
  FitHoldingOutBeta2();
  v1::PredictResponse response;
  ASSERT_TRUE(Predict(LstmQuery("beta2"), &response).ok());
  double sum = 0;
  for (const v1::OperationEstimate& op : response.breakdown()) sum += op.ms();
  EXPECT_NEAR(sum, response.iteration_ms(), 1e-9 * response.iteration_ms());
  ASSERT_GT(response.level1_ms(), 0);
  EXPECT_NEAR(response.breakdown_scale(),
              (response.iteration_ms() - response.host_ms()) / response.level1_ms(), 1e-12);
}

}  // namespace
}  // namespace perfcast::server
