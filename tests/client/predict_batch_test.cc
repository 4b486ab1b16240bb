// client/predict_batch.h against a stand-in Predictor: the results of every
// response message in query order, and what a failed or inconsistent
// stream tells the user.
#include "client/predict_batch.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/batch_results.h"

namespace perfcast::client {
namespace {

// Answers each query with iteration_ms = its batch size, in two compact
// messages (the first query alone, then the rest); a query of batch 0 fails.
// `corrupt` makes the second table inconsistent; `status` ends the call.
class StandInPredictor final : public v1::Predictor::Service {
 public:
  grpc::Status PredictBatch(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::PredictBatchResponse, v1::PredictBatchRequest>* stream)
      override {
    v1::PredictBatchRequest request;
    while (stream->Read(&request)) {
      saw_compact = request.compact();
      const int n = request.queries_size();
      for (auto [first, end] : {std::pair{0, std::min(1, n)}, std::pair{std::min(1, n), n}}) {
        if (first == end) continue;
        v1::PredictBatchResponse response;
        proto::CompactResultsBuilder builder(response.mutable_compact(), end - first);
        std::vector<v1::PredictResponse> answers(end - first);
        for (int i = first; i < end; ++i) {
          const int64_t batch = request.queries(i).workload().batch_size();
          if (batch == 0) {
            builder.AddFailed(3, "batch size is 0");
            continue;
          }
          answers[i - first].set_iteration_ms(static_cast<double>(batch));
          builder.AddAnswered(&answers[i - first], answers[i - first], 0, 0, 0, 0);
        }
        if (corrupt && first > 0) response.mutable_compact()->add_answer(7);
        stream->Write(response);
      }
    }
    return status;
  }

  bool corrupt = false;
  grpc::Status status = grpc::Status::OK;
  bool saw_compact = false;
};

class PredictBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = v1::Predictor::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  std::optional<CliError> Run(const std::vector<int64_t>& batches,
                              std::vector<v1::PredictResult>& results) {
    v1::PredictBatchRequest request;
    for (int64_t batch : batches) request.add_queries()->mutable_workload()->set_batch_size(batch);
    grpc::ClientContext call;
    return PredictBatch(*stub_, call, request, results);
  }

  StandInPredictor service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Predictor::Stub> stub_;
};

TEST_F(PredictBatchTest, ReadsEveryMessagesResultsInQueryOrder) {
  std::vector<v1::PredictResult> results;
  std::optional<CliError> error = Run({8, 0, 32, 8}, results);
  ASSERT_FALSE(error.has_value()) << error->message;
  EXPECT_TRUE(service_.saw_compact);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].code(), 0);
  EXPECT_EQ(results[0].prediction().iteration_ms(), 8);
  EXPECT_EQ(results[1].code(), 3);
  EXPECT_EQ(results[1].error(), "batch size is 0");
  EXPECT_EQ(results[2].prediction().iteration_ms(), 32);
  EXPECT_EQ(results[3].prediction().iteration_ms(), 8);
}

TEST_F(PredictBatchTest, AFailedCallIsTheServersStatus) {
  service_.status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "no model fitted");
  std::vector<v1::PredictResult> results;
  std::optional<CliError> error = Run({8}, results);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->exit_code, kExitFailure);
  EXPECT_TRUE(absl::StrContains(error->message, "no model fitted")) << error->message;
}

TEST_F(PredictBatchTest, AnInconsistentResponseFailsTheCall) {
  service_.corrupt = true;
  std::vector<v1::PredictResult> results;
  std::optional<CliError> error = Run({8, 16}, results);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->exit_code, kExitFailure);
  EXPECT_EQ(results.size(), 1u);  // the first, consistent message's
}

}  // namespace
}  // namespace perfcast::client
