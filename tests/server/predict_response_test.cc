// AppendPredictResponse against the message path it stands in for:
// EncodeAnswer and EncodeJob on the same price, serialised. Priced by a
// model fitted on synthetic profiles, over workloads, nodes and jobs that
// take every part of an answer.
#include "server/predict_response.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "proto/convert.h"
#include "serving/pricer.h"
#include "serving/training.h"
#include "tests/db/test_util.h"
#include "tests/server/synthetic_store.h"

namespace perfcast::server {
namespace {

models::WorkloadSpec Spec(const std::string& family, std::map<std::string, int64_t> params,
                          int64_t batch, models::Phase phase = models::Phase::kTrain) {
  models::WorkloadSpec spec;
  spec.family = family;
  spec.params = std::move(params);
  spec.batch_size = batch;
  spec.precision = models::Precision::kBf16Amp;
  spec.phase = phase;
  return spec;
}

class PredictResponseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(testing::FillSyntheticStore(*store_, testing::SyntheticNodes(), {"beta2"}).ok());
    predictor::ProfileSelection selection;
    selection.exclude_gpu_models = {"beta2-gpu"};
    absl::StatusOr<serving::SavedFit> fitted =
        serving::FitAndSave(*store_, "", selection, predictor::FitOptions{},
                            [] { return absl::OkStatus(); });
    ASSERT_TRUE(fitted.ok()) << fitted.status();
  }

  testing::TempDir dir_;
  std::unique_ptr<db::Store> store_;
};

TEST_F(PredictResponseTest, BytesAreTheMessagesBytes) {
  serving::Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  absl::StatusOr<std::shared_ptr<const serving::LoadedModel>> model = pricer.Model("");
  ASSERT_TRUE(model.ok()) << model.status();
  models::WorkloadSpec gemm = Spec("gemm", {{"m", 1000}, {"n", 4096}, {"k", 333}}, 1);
  gemm.kind = models::WorkloadKind::kOperation;
  const std::vector<models::WorkloadSpec> specs = {
      Spec("lstm", {{"layers", 1}, {"hidden", 128}}, 64),
      Spec("lstm", {{"layers", 4}, {"hidden", 1024}}, 256),
      Spec("lstm", {{"layers", 2}, {"hidden", 512}}, 8, models::Phase::kInference),
      gemm,
  };
  const std::vector<serving::Target> targets = {
      serving::Target::Node("beta2"), serving::Target::Node("alpha1"),
      serving::Target::CatalogGpu("L40S")};
  const std::vector<predictor::JobSize> jobs = {{.samples = 1'000'000, .epochs = 30},
                                                {.iterations = 1}};
  int compared = 0;
  bool level1 = false, extrapolated = false, uncalibrated = false, no_host = false;
  for (const models::WorkloadSpec& spec : specs) {
    absl::StatusOr<models::WorkloadDescriptor> described = models::Describe(spec);
    ASSERT_TRUE(described.ok()) << described.status();
    auto descriptor = std::make_shared<const models::WorkloadDescriptor>(*std::move(described));
    const std::string echo = EncodeWorkloadEcho(descriptor->spec);
    for (const serving::Target& target : targets) {
      absl::StatusOr<serving::PlannedPrice> planned =
          pricer.PricePlanned(*model, descriptor, target);
      ASSERT_TRUE(planned.ok()) << planned.status();
      // The answer cache's form: the job-independent answer (with a note,
      // the last field) split once, any job written into the gap.
      v1::PredictResponse answer;
      EncodeAnswer(planned->ToWorkloadPrice(), /*brief=*/false, &answer);
      answer.add_notes("a note after every other field");
      const AnswerBytes split = SplitAroundJob(answer);
      for (const predictor::JobSize& job : jobs) {
        absl::StatusOr<predictor::JobEstimate> estimate = serving::PriceJob(*planned, job);
        ASSERT_TRUE(estimate.ok()) << estimate.status();
        v1::PredictResponse message;
        EncodeAnswer(planned->ToWorkloadPrice(), /*brief=*/false, &message);
        EncodeJob(*estimate, &message);
        std::string bytes = "prefix";
        AppendPredictResponse(*planned, echo, *estimate, &bytes);
        ASSERT_EQ(bytes.substr(0, 6), "prefix");
        EXPECT_EQ(bytes.substr(6), proto::DeterministicBytes(message)) << message.ShortDebugString();
        v1::PredictResponse parsed;
        ASSERT_TRUE(parsed.ParseFromString(bytes.substr(6)));
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, message));
        v1::PredictResponse with_note = message;
        with_note.add_notes("a note after every other field");
        std::string from_split = "prefix";
        AppendAnswer(split, *estimate, &from_split);
        EXPECT_EQ(from_split.substr(6), proto::DeterministicBytes(with_note));
        ++compared;
        level1 = level1 || message.level() == 1;
        extrapolated = extrapolated || message.extrapolated_features_size() > 0;
        uncalibrated = uncalibrated || message.uncalibrated_classes_size() > 0;
        no_host = no_host || message.host_ms() == 0;
        EXPECT_GT(message.breakdown_size(), 0);
        EXPECT_GT(message.features_size(), 0);
        EXPECT_TRUE(message.has_workload() && message.has_memory());
      }
    }
  }
  EXPECT_EQ(compared, 24);
  EXPECT_TRUE(level1 && extrapolated && uncalibrated && no_host);
}

// The planned price is Price's answer, and fails as Price does.
TEST_F(PredictResponseTest, PlannedPriceIsPricesAnswer) {
  serving::Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  absl::StatusOr<std::shared_ptr<const serving::LoadedModel>> model = pricer.Model("");
  ASSERT_TRUE(model.ok()) << model.status();
  int answered = 0, failed = 0;
  // The second does not fit in memory.
  for (const auto& [hidden, batch] : {std::pair<int64_t, int64_t>{256, 64}, {8192, 1 << 24}}) {
    absl::StatusOr<models::WorkloadDescriptor> described =
        models::Describe(Spec("lstm", {{"layers", 2}, {"hidden", hidden}}, batch));
    ASSERT_TRUE(described.ok()) << described.status();
    auto descriptor = std::make_shared<const models::WorkloadDescriptor>(*std::move(described));
    for (const serving::Target& target :
         {serving::Target::Node("beta2"), serving::Target::Node("nowhere")}) {
      absl::StatusOr<serving::WorkloadPrice> price = pricer.Price(*model, descriptor, target);
      absl::StatusOr<serving::PlannedPrice> planned =
          pricer.PricePlanned(*model, descriptor, target);
      ASSERT_EQ(planned.status(), price.status());
      if (!price.ok()) {
        ++failed;
        continue;
      }
      ++answered;
      v1::PredictResponse from_price, from_planned;
      EncodeAnswer(*price, /*brief=*/false, &from_price);
      EncodeAnswer(planned->ToWorkloadPrice(), /*brief=*/false, &from_planned);
      EXPECT_EQ(proto::DeterministicBytes(from_planned), proto::DeterministicBytes(from_price));
      EXPECT_EQ(planned->prediction.numbers.iteration_ms, price->prediction.iteration_ms);
    }
  }
  EXPECT_EQ(answered, 1);
  EXPECT_EQ(failed, 3);
}

// AppendPredictResponse writes its fields by hand: a field added to the
// answer's messages must be added there too, or clients of unary Predict
// silently miss it (BytesAreTheMessagesBytes only notices fields its answers
// set). So the fields it knows are listed here, and a new one fails this
// test until AppendPredictResponse (and this list) learn it.
std::vector<int> FieldNumbers(const google::protobuf::Descriptor& d) {
  std::vector<int> numbers;
  for (int i = 0; i < d.field_count(); ++i) numbers.push_back(d.field(i)->number());
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

TEST(PredictResponseFieldsTest, AppendPredictResponseKnowsEveryField) {
  // 1-19 and 21-24 written by AppendPredictResponse, 25 (notes) by
  // AppendPredictNotes; 20 (parallel) only in layout answers, which take the
  // message path.
  std::vector<int> response;
  for (int n = 1; n <= 25; ++n) response.push_back(n);
  EXPECT_EQ(FieldNumbers(*v1::PredictResponse::descriptor()), response)
      << "a PredictResponse field was added or removed: teach AppendPredictResponse "
         "(server/predict_response.cc) and update this list";
  EXPECT_EQ(FieldNumbers(*v1::OperationEstimate::descriptor()), (std::vector<int>{1, 2, 3}))
      << "teach AppendPredictResponse's breakdown entries the new field";
  EXPECT_EQ(FieldNumbers(*v1::MemoryEstimate::descriptor()),
            (std::vector<int>{v1::MemoryEstimate::kPeakBytesFieldNumber,
                              v1::MemoryEstimate::kPeakBytesLowFieldNumber,
                              v1::MemoryEstimate::kPeakBytesHighFieldNumber,
                              v1::MemoryEstimate::kRequiredBytesFieldNumber,
                              v1::MemoryEstimate::kDeviceBytesFieldNumber,
                              v1::MemoryEstimate::kFitsFieldNumber,
                              v1::MemoryEstimate::kMethodFieldNumber,
                              v1::MemoryEstimate::kPersistentBytesFieldNumber,
                              v1::MemoryEstimate::kActivationBytesFieldNumber}))
      << "teach AppendMemory (server/predict_response.cc) the new MemoryEstimate field";
}

// The notes follow the answer's other fields as its last one, so that the
// bytes stay the message's own serialisation.
TEST(PredictResponseFieldsTest, NotesAreAppendedAsTheLastField) {
  v1::PredictResponse message;
  message.set_iteration_ms(1.5);
  message.set_host_ms(0.25);
  std::string bytes = proto::DeterministicBytes(message);
  const std::vector<std::string> notes = {"first note", "", "third"};
  AppendPredictNotes(notes, &bytes);
  for (const std::string& note : notes) message.add_notes(note);
  EXPECT_EQ(bytes, proto::DeterministicBytes(message));
  v1::PredictResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.notes_size(), 3);
  EXPECT_EQ(parsed.notes(2), "third");
}

}  // namespace
}  // namespace perfcast::server
