#include "models/workload.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace perfcast::models {
namespace {

TEST(WorkloadSpecTest, KeyRoundTrips) {
  WorkloadSpec spec;
  spec.family = "lstm";
  spec.params = {{"layers", 4}, {"hidden", 512}};
  spec.batch_size = 256;
  spec.precision = Precision::kBf16Amp;
  spec.phase = Phase::kTrain;
  spec.optimizer = "sgd";
  EXPECT_EQ(spec.Key(), "model/lstm{hidden=512,layers=4}/b256/bf16-amp/train/sgd");
  auto parsed = ParseWorkloadKey(spec.Key());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, spec);
}

TEST(WorkloadSpecTest, InferenceKeyIgnoresOptimizer) {
  WorkloadSpec a;
  a.kind = WorkloadKind::kOperation;
  a.family = "gemm";
  a.params = {{"m", 1024}, {"n", 1024}, {"k", 64}};
  a.phase = Phase::kInference;
  WorkloadSpec b = a;
  b.optimizer = "sgd";
  EXPECT_EQ(a.Key(), b.Key());
  auto parsed = ParseWorkloadKey(a.Key());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Key(), a.Key());
  EXPECT_EQ(parsed->kind, WorkloadKind::kOperation);
}

TEST(WorkloadSpecTest, RejectsMalformedKeys) {
  for (const char* key : {"", "model/lstm", "model/lstm{layers=x}/b1/fp32/train/adam",
                          "model/lstm{}/b1/fp99/train/adam", "model/lstm{}/bx/fp32/train/adam",
                          "thing/lstm{}/b1/fp32/train/adam", "model/lstm{}/b1/fp32/walk/adam",
                          "model/{}/b1/fp32/train/adam"}) {
    EXPECT_FALSE(ParseWorkloadKey(key).ok()) << key;
  }
}

TEST(PrecisionTest, ParsesAliasesAndRejectsUnknown) {
  EXPECT_EQ(*ParsePrecision("BF16"), Precision::kBf16Amp);
  EXPECT_EQ(*ParsePrecision("fp16-amp"), Precision::kFp16Amp);
  EXPECT_EQ(*ParsePrecision("tf32"), Precision::kTf32);
  EXPECT_EQ(ParsePrecision("int4").status().code(), absl::StatusCode::kInvalidArgument);
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16Amp, Precision::kBf16Amp,
                      Precision::kFp64, Precision::kFp8, Precision::kInt8, Precision::kStrictFp32}) {
    EXPECT_EQ(*ParsePrecision(PrecisionName(p)), p) << PrecisionName(p);
  }
  EXPECT_EQ(PrecisionName(Precision::kStrictFp32), "strict-fp32");
  EXPECT_TRUE(IsMixedPrecision(Precision::kFp8));
  EXPECT_FALSE(IsMixedPrecision(Precision::kStrictFp32));
  EXPECT_EQ(*ParsePhase("inference"), Phase::kInference);
  EXPECT_FALSE(ParsePhase("serve").ok());
}

}  // namespace
}  // namespace perfcast::models

namespace perfcast::models {
namespace {

// Numeric hostility in workload keys and enum names: refused, never wrapped.
TEST(WorkloadSpecTest, HostileKeysAndNamesAreRefused) {
  for (const char* key : {"model/lstm{}/b99999999999999999999/fp32/train/adam",
                          "model/lstm{layers=99999999999999999999}/b1/fp32/train/adam",
                          "model/lstm{layers=1e3}/b1/fp32/train/adam",
                          "model/lstm{}/b-/fp32/train/adam", "model/lstm{}/bNaN/fp32/train/adam",
                          "model/lstm{}/b1/fp7/train/adam", "model/lstm{}/b1/fp32/phase99/adam",
                          "kind9/lstm{}/b1/fp32/train/adam", "model/{}/b1/fp32/train/adam", "",
                          "{}"}) {
    EXPECT_EQ(ParseWorkloadKey(key).status().code(), absl::StatusCode::kInvalidArgument) << key;
  }
  const std::string long_family(1 << 20, 'x');
  auto long_key = ParseWorkloadKey(absl::StrCat("model/", long_family, "{}/b1/fp32/train/adam"));
  // Parsing is syntax only: the long family parses, and NormalizeSpec refuses it.
  ASSERT_TRUE(long_key.ok());
  EXPECT_EQ(long_key->family.size(), long_family.size());
  for (const char* name : {"fp7", "", "FP32 ", "bf17"}) {
    EXPECT_EQ(ParsePrecision(name).status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_EQ(ParsePhase("99").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseWorkloadKind("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfcast::models
