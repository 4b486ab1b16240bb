// A price encoded as a PredictResponse: every part of a price reaches the
// message (a field added to the message and never set fails here), a brief
// answer keeps the numbers only, and a layout's answer carries its parts in
// place of one GPU's memory.
#include "server/predict_response.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/convert.h"

namespace perfcast::server {
namespace {

// A price with every field set to something other than its default.
serving::Price FullPrice() {
  auto model = std::make_shared<serving::LoadedModel>();
  model->meta.id = 7;
  model->meta.version = 3;
  auto node = std::make_shared<models::Node>();
  node->gpu.model = "H100-SXM5-80GB";
  serving::Price price;
  price.model = std::move(model);
  price.node = std::move(node);
  price.workload.family = "lstm";
  price.workload.params = {{"layers", 2}, {"hidden", 256}};
  price.workload.batch_size = 64;
  price.notes = {"a caveat"};
  predictor::Prediction& p = price.prediction;
  p.iteration_ms = 10;
  p.lo_ms = 8;
  p.hi_ms = 13;
  p.method = predictor::Method::kTwoLevel;
  p.level1_ms = 9;
  p.breakdown_ms = {{"gemm", 6}, {"host", 4}};
  p.breakdown_scale = 0.75;
  p.host_ms = 3.25;
  p.features_used = {"level2/train:level1_ms", "level1/gemm:compute_ms"};
  p.extrapolated = {"level1/gemm:compute_ms"};
  p.uncalibrated_classes = {"softmax"};
  p.rate_source = predictor::RateSource::kSpecTimesEfficiency;
  price.memory.peak_bytes = 1e9;
  price.memory.low_bytes = 0.9e9;
  price.memory.high_bytes = 1.1e9;
  price.memory.required_bytes = 1.5e9;
  price.memory.method = "analytic";
  price.memory.terms.weights = 1e8;
  price.memory.terms.activations = 2e8;
  price.memory_verdict.device_bytes = 80e9;
  price.memory_verdict.required_bytes = 1.5e9;
  price.batch_size = 64;
  price.cv_mape = 0.12;
  price.loop = models::Loop::kPython;
  price.host_work = {.python_calls = 40, .launches = 120};
  return price;
}

// `price` with a layout's parts beside its memory per GPU.
serving::Price LayoutPrice() {
  serving::Price price = FullPrice();
  predictor::ParallelPrediction parallel;
  parallel.layout = {.data = 2};
  parallel.compute_ms = 5;
  parallel.outside_layers_ms = {{"gemm", 0.5}, {"elementwise", 0.25}};
  parallel.outside_layers_bubble_ms = 0.125;
  parallel.dp_comm_ms = 1;
  parallel.dp_link = {.bus_gbs = 300, .latency_us = 3, .source = "nvlink"};
  price.parallel = parallel;
  return price;
}

// The numbers of the fields `message` sets.
std::set<int> SetFields(const google::protobuf::Message& message) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  std::set<int> numbers;
  for (const auto* field : fields) numbers.insert(field->number());
  return numbers;
}

TEST(PredictResponseTest, AnAnswerSetsEveryFieldOfTheResponse) {
  const predictor::JobEstimate job{.iterations = 200, .seconds = 2, .lo_seconds = 1.6,
                                   .hi_seconds = 2.6};
  v1::PredictResponse one_gpu, layout;
  EncodeAnswer({std::make_shared<const serving::Price>(FullPrice()), job}, /*brief=*/false,
               &one_gpu);
  EncodeAnswer({std::make_shared<const serving::Price>(LayoutPrice()), job}, /*brief=*/false,
               &layout);
  std::set<int> set = SetFields(one_gpu);
  EXPECT_FALSE(set.contains(v1::PredictResponse::kParallelFieldNumber));
  EXPECT_TRUE(SetFields(layout).contains(v1::PredictResponse::kMemoryFieldNumber));
  set.merge(SetFields(layout));
  const google::protobuf::Descriptor& d = *v1::PredictResponse::descriptor();
  for (int i = 0; i < d.field_count(); ++i) {
    EXPECT_TRUE(set.contains(d.field(i)->number()))
        << d.field(i)->name() << " is never set: teach EncodePrice (server/predict_response.cc)";
  }
  EXPECT_EQ(SetFields(one_gpu.memory()).size(),
            static_cast<size_t>(v1::MemoryEstimate::descriptor()->field_count()))
      << "a MemoryEstimate field is never set: teach EncodeMemory";
}

TEST(PredictResponseTest, AFullAnswerIsThePrice) {
  const serving::Price price = FullPrice();
  v1::PredictResponse out;
  EncodePrice(price, /*brief=*/false, &out);
  EXPECT_EQ(out.iteration_ms(), 10);
  EXPECT_EQ(out.iteration_ms_low(), 8);
  EXPECT_EQ(out.iteration_ms_high(), 13);
  EXPECT_EQ(out.model_id(), 7);
  EXPECT_EQ(out.model_version(), 3);
  EXPECT_EQ(out.level(), 2);
  EXPECT_EQ(out.method(), "two-level");
  EXPECT_EQ(out.gpu_model(), "H100-SXM5-80GB");
  EXPECT_EQ(out.rate_source(), predictor::RateSourceName(predictor::RateSource::kSpecTimesEfficiency));
  ASSERT_EQ(out.breakdown_size(), 2);
  EXPECT_EQ(out.breakdown(0).op_class(), "gemm");
  EXPECT_EQ(out.breakdown(0).share(), 0.6);
  EXPECT_EQ(out.breakdown(1).share(), 0.4);
  ASSERT_EQ(out.features_size(), 2);
  EXPECT_EQ(out.features(1), "level1/gemm:compute_ms");
  EXPECT_EQ(out.extrapolated_features(0), "level1/gemm:compute_ms");
  EXPECT_EQ(out.uncalibrated_classes(0), "softmax");
  EXPECT_EQ(out.notes(0), "a caveat");
  v1::Workload echo;
  proto::ToProto(price.workload, &echo);
  echo.set_loop(v1::LOOP_PYTHON);  // the loop the answer priced
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out.workload(), echo));
  EXPECT_EQ(out.memory().peak_bytes(), 1e9);
  EXPECT_TRUE(out.memory().fits());
  EXPECT_EQ(out.iterations(), 0) << "the job is EncodeJob's";
}

TEST(PredictResponseTest, ABriefAnswerKeepsTheNumbersOnly) {
  v1::PredictResponse out;
  EncodePrice(FullPrice(), /*brief=*/true, &out);
  EXPECT_EQ(SetFields(out),
            (std::set<int>{v1::PredictResponse::kIterationMsFieldNumber,
                           v1::PredictResponse::kIterationMsLowFieldNumber,
                           v1::PredictResponse::kIterationMsHighFieldNumber,
                           v1::PredictResponse::kModelIdFieldNumber,
                           v1::PredictResponse::kModelVersionFieldNumber,
                           v1::PredictResponse::kLevelFieldNumber}));
}

TEST(PredictResponseTest, ALayoutsAnswerCarriesItsPartsAndTheJob) {
  v1::PredictResponse out;
  const predictor::JobEstimate job{.iterations = 5, .seconds = 0.05, .lo_seconds = 0.04,
                                   .hi_seconds = 0.065};
  EncodeAnswer({std::make_shared<const serving::Price>(LayoutPrice()), job}, /*brief=*/false,
               &out);
  EXPECT_EQ(out.parallel().gpus(), 2);
  EXPECT_EQ(out.parallel().compute_ms(), 5);
  // The work outside the layers, which a framework's term is learned from.
  EXPECT_EQ(out.parallel().outside_layers_ms().size(), 2);
  EXPECT_EQ(out.parallel().outside_layers_ms().at("gemm"), 0.5);
  EXPECT_EQ(out.parallel().outside_layers_ms().at("elementwise"), 0.25);
  EXPECT_EQ(out.parallel().outside_layers_bubble_ms(), 0.125);
  EXPECT_EQ(out.parallel().dp_link(), predictor::DescribeLink(LayoutPrice().parallel->dp_link));
  // Memory per GPU with its band, as one GPU's.
  EXPECT_EQ(out.memory().peak_bytes_low(), 0.9e9);
  EXPECT_EQ(out.memory().peak_bytes_high(), 1.1e9);
  EXPECT_EQ(out.iterations(), 5);
  EXPECT_EQ(out.job_seconds(), 0.05);
  EXPECT_EQ(out.job_seconds_low(), 0.04);
  EXPECT_EQ(out.job_seconds_high(), 0.065);
}

}  // namespace
}  // namespace perfcast::server
