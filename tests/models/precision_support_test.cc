#include "models/precision_support.h"

#include "gtest/gtest.h"
#include "models/gpu_catalog.h"

namespace perfcast::models {
namespace {

Node CatalogNode(const char* gpu) {
  Node node;
  node.name = gpu;
  node.gpu = *GpuCatalog::BuiltIn().Find(gpu);
  return node;
}

WorkloadSpec Spec(Precision precision, Phase phase = Phase::kTrain) {
  WorkloadSpec spec;
  spec.family = "lstm";
  spec.precision = precision;
  spec.phase = phase;
  return spec;
}

// Issue 29: no precision is priced silently at a speed the GPU lacks.
TEST(CheckPrecisionTest, RefusesWhatAGpuHasNoPathForNamingTheGpu) {
  for (const char* gpu : {"V100-SXM2-32GB", "T4-16GB"}) {
    absl::StatusOr<std::optional<std::string>> bf16 =
        CheckPrecision(CatalogNode(gpu), Spec(Precision::kBf16Amp));
    EXPECT_EQ(bf16.status().code(), absl::StatusCode::kFailedPrecondition) << gpu;
    EXPECT_NE(bf16.status().message().find(gpu), std::string::npos) << bf16.status();
    EXPECT_NE(bf16.status().message().find("no bf16"), std::string::npos) << bf16.status();
  }
  for (const char* gpu : {"A100-SXM4-80GB", "L40S-48GB", "RTX-4090-24GB", "MI250X-128GB"}) {
    absl::Status fp8 = CheckPrecision(CatalogNode(gpu), Spec(Precision::kFp8)).status();
    EXPECT_EQ(fp8.code(), absl::StatusCode::kFailedPrecondition) << gpu;
    EXPECT_NE(fp8.message().find(gpu), std::string::npos) << fp8;
  }
  for (const char* gpu : {"H100-SXM5-80GB", "H200-SXM-141GB", "B200-SXM-180GB", "GB200-186GB",
                          "MI300X-192GB", "MI325X-256GB"}) {
    absl::StatusOr<std::optional<std::string>> fp8 =
        CheckPrecision(CatalogNode(gpu), Spec(Precision::kFp8));
    ASSERT_TRUE(fp8.ok()) << gpu << fp8.status();
    EXPECT_FALSE(fp8->has_value()) << gpu;
  }
  EXPECT_EQ(CheckPrecision(CatalogNode("H100-SXM5-80GB"), Spec(Precision::kInt8)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      CheckPrecision(CatalogNode("L4-24GB"), Spec(Precision::kInt8, Phase::kInference)).ok());
  EXPECT_EQ(CheckPrecision(CatalogNode("V100-SXM2-32GB"), Spec(Precision::kInt8, Phase::kInference))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CheckPrecisionTest, NotesWhatPyTorchRunsInstead) {
  absl::StatusOr<std::optional<std::string>> tf32 =
      CheckPrecision(CatalogNode("V100-SXM2-32GB"), Spec(Precision::kTf32));
  ASSERT_TRUE(tf32.ok()) << tf32.status();
  ASSERT_TRUE(tf32->has_value());
  EXPECT_NE((*tf32)->find("runs as fp32"), std::string::npos) << **tf32;
  for (Precision p : {Precision::kFp32, Precision::kStrictFp32, Precision::kTf32,
                      Precision::kBf16Amp, Precision::kFp16Amp}) {
    absl::StatusOr<std::optional<std::string>> a100 = CheckPrecision(CatalogNode("A100-SXM4-80GB"), Spec(p));
    ASSERT_TRUE(a100.ok()) << a100.status();
    EXPECT_FALSE(a100->has_value()) << PrecisionName(p);
  }
  // A GPU measured in bf16 has the path whatever its spec says.
  Node measured = CatalogNode("T4-16GB");
  measured.measured.bf16_tflops = 20;
  EXPECT_TRUE(CheckPrecision(measured, Spec(Precision::kBf16Amp)).ok());
}

}  // namespace
}  // namespace perfcast::models
