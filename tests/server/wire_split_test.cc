#include "proto/wire_split.h"

#include <optional>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "perfcast/v1/predictor.pb.h"

namespace perfcast::proto {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr int kWorkloadField = 1;  // PredictRequest.workload

v1::PredictRequest FullRequest() {
  v1::PredictRequest r;
  v1::Workload* w = r.mutable_workload();
  w->set_family("gpt");
  (*w->mutable_params())["layers"] = 12;
  (*w->mutable_params())["hidden"] = 768;
  w->set_batch_size(8);
  w->set_precision(v1::PRECISION_BF16_AMP);
  r.set_node_name("h100-a");
  r.mutable_job()->set_samples(1000);
  r.mutable_job()->set_epochs(3);
  r.set_model_name("default");
  r.mutable_parallel()->set_data_parallel(2);
  return r;
}

// What a caller of ParseAroundField ends with: the rest, and the field's
// payload parsed and merged in.
v1::PredictRequest Reassembled(const v1::PredictRequest& rest,
                               const std::optional<absl::string_view>& workload) {
  v1::PredictRequest whole = rest;
  if (workload.has_value()) {
    v1::Workload w;
    EXPECT_TRUE(w.ParseFromArray(workload->data(), static_cast<int>(workload->size())));
    whole.mutable_workload()->MergeFrom(w);
  }
  return whole;
}

TEST(ParseAroundFieldTest, SplitsOffTheWorkloadAndParsesTheRest) {
  const v1::PredictRequest request = FullRequest();
  const std::string bytes = request.SerializeAsString();
  v1::PredictRequest rest;
  std::optional<absl::string_view> workload;
  ASSERT_TRUE(ParseAroundField(bytes, kWorkloadField, &rest, &workload));
  ASSERT_TRUE(workload.has_value());
  EXPECT_EQ(*workload, request.workload().SerializeAsString());
  EXPECT_FALSE(rest.has_workload());
  v1::PredictRequest expected_rest = request;
  expected_rest.clear_workload();
  EXPECT_TRUE(MessageDifferencer::Equals(rest, expected_rest)) << rest.ShortDebugString();
}

TEST(ParseAroundFieldTest, FindsTheFieldAnywhereInTheMessage) {
  // Fields in any order: a message's bytes may be concatenated parts.
  v1::PredictRequest target, workload_only, job;
  target.set_catalog_gpu("H100-SXM");
  *workload_only.mutable_workload() = FullRequest().workload();
  *job.mutable_job() = FullRequest().job();
  const std::string bytes =
      target.SerializeAsString() + workload_only.SerializeAsString() + job.SerializeAsString();
  v1::PredictRequest whole;
  ASSERT_TRUE(whole.ParseFromString(bytes));
  v1::PredictRequest rest;
  std::optional<absl::string_view> workload;
  ASSERT_TRUE(ParseAroundField(bytes, kWorkloadField, &rest, &workload));
  EXPECT_EQ(rest.catalog_gpu(), "H100-SXM");
  EXPECT_EQ(rest.job().epochs(), 3);
  EXPECT_TRUE(MessageDifferencer::Equals(Reassembled(rest, workload), whole));
}

TEST(ParseAroundFieldTest, AnAbsentFieldAndAnEmptyOneDiffer) {
  v1::PredictRequest request = FullRequest();
  request.clear_workload();
  v1::PredictRequest rest;
  std::optional<absl::string_view> workload = "stale";
  ASSERT_TRUE(ParseAroundField(request.SerializeAsString(), kWorkloadField, &rest, &workload));
  EXPECT_FALSE(workload.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(rest, request));

  request.mutable_workload();  // present, with no fields: zero bytes of payload
  ASSERT_TRUE(ParseAroundField(request.SerializeAsString(), kWorkloadField, &rest, &workload));
  ASSERT_TRUE(workload.has_value());
  EXPECT_TRUE(workload->empty());
}

TEST(ParseAroundFieldTest, ClearsWhatTheMessageHeld) {
  v1::PredictRequest rest = FullRequest();
  v1::PredictRequest only_job;
  only_job.mutable_job()->set_iterations(5);
  std::optional<absl::string_view> workload;
  ASSERT_TRUE(ParseAroundField(only_job.SerializeAsString(), kWorkloadField, &rest, &workload));
  EXPECT_TRUE(MessageDifferencer::Equals(rest, only_job)) << rest.ShortDebugString();
}

TEST(ParseAroundFieldTest, DeclinesWhatIsNotOneSubMessage) {
  v1::PredictRequest rest;
  std::optional<absl::string_view> workload;
  const std::string one = FullRequest().SerializeAsString();
  // Twice: the occurrences merge, which only a whole parse does.
  v1::PredictRequest twice;
  std::string bytes = one + one;
  ASSERT_TRUE(twice.ParseFromString(bytes));
  EXPECT_FALSE(ParseAroundField(bytes, kWorkloadField, &rest, &workload));
  // Field 1 as a varint: not the field's wire type.
  EXPECT_FALSE(ParseAroundField(std::string("\x08\x05", 2), kWorkloadField, &rest, &workload));
  // Cut short inside the workload, and inside a later field.
  EXPECT_FALSE(ParseAroundField(absl::string_view(one).substr(0, 5), kWorkloadField, &rest,
                                &workload));
  EXPECT_FALSE(ParseAroundField(absl::string_view(one).substr(0, one.size() - 1),
                                kWorkloadField, &rest, &workload));
  // A zero tag is no field.
  EXPECT_FALSE(ParseAroundField(std::string("\x00\x01", 2), kWorkloadField, &rest, &workload));
  // Invalid bytes around a valid workload: the rest does not parse.
  bytes = one + std::string("\x12\x05" "ab", 4);  // node_name claims 5 bytes, has 2
  EXPECT_FALSE(ParseAroundField(bytes, kWorkloadField, &rest, &workload));
}

TEST(ParseAroundFieldTest, ReassemblesWhatAWholeParseGivesForShuffledParts) {
  // Random requests written as their fields' parts in random order, some
  // parts repeated (a later scalar wins, sub-messages merge): reassembled,
  // each is what parsing its bytes whole gives.
  std::mt19937 random(7);
  int split = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::string> parts;
    auto add = [&](const v1::PredictRequest& part) { parts.push_back(part.SerializeAsString()); };
    v1::PredictRequest p;
    p.mutable_workload()->set_family(trial % 2 ? "lstm" : "bert");
    (*p.mutable_workload()->mutable_params())["layers"] = trial % 5;
    if (random() % 4 != 0) add(p);
    for (int extra = random() % 4; extra > 0; --extra) {
      v1::PredictRequest q;
      switch (random() % 5) {
        case 0: q.set_node_name(absl::StrCat("node-", random() % 3)); break;
        case 1: q.set_catalog_gpu("A100"); break;
        case 2: q.mutable_job()->set_samples(random() % 1000); break;
        case 3: q.set_model_name(absl::StrCat("m", random() % 2)); break;
        default: q.mutable_parallel()->set_tensor_parallel(random() % 4); break;
      }
      add(q);
    }
    if (random() % 8 == 0) add(p);  // the workload twice
    std::shuffle(parts.begin(), parts.end(), random);
    std::string bytes;
    for (const std::string& part : parts) bytes += part;
    v1::PredictRequest whole;
    ASSERT_TRUE(whole.ParseFromString(bytes));
    v1::PredictRequest rest;
    std::optional<absl::string_view> workload;
    if (!ParseAroundField(bytes, kWorkloadField, &rest, &workload)) continue;
    ++split;
    EXPECT_TRUE(MessageDifferencer::Equals(Reassembled(rest, workload), whole))
        << "trial " << trial << ": " << whole.ShortDebugString();
  }
  EXPECT_GT(split, 200);  // all but the repeated workloads
}

}  // namespace
}  // namespace perfcast::proto
