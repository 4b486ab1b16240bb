#include "models/gpu_catalog.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace perfcast::models {
namespace {

TEST(GpuCatalogTest, BuiltInCoversTheRequiredGpusWithSaneRates) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  for (const char* model : {"V100-SXM2-32GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB",
                            "H100-PCIE-80GB", "H200-SXM-141GB", "L4-24GB", "L40S-48GB",
                            "T4-16GB", "A10-24GB", "A30-24GB"}) {
    auto gpu = catalog.Find(model);
    ASSERT_TRUE(gpu.ok()) << model;
    EXPECT_GT(gpu->sm_count, 0) << model;
    EXPECT_GT(gpu->memory_bandwidth_gbs, 100) << model;
    EXPECT_GT(gpu->fp32_tflops, 1) << model;
    // Tensor-core half precision beats plain FP32 on every listed GPU.
    EXPECT_GT(gpu->fp16_tflops, gpu->fp32_tflops) << model;
    EXPECT_GT(gpu->l2_cache_mib, 0) << model;
    EXPECT_FALSE(gpu->architecture.empty()) << model;
  }
  // Same silicon, more and faster memory.
  auto h100 = catalog.Find("H100-SXM5-80GB");
  auto h200 = catalog.Find("H200-SXM-141GB");
  EXPECT_GT(h200->memory_bandwidth_gbs, h100->memory_bandwidth_gbs);
  EXPECT_EQ(h200->bf16_tflops, h100->bf16_tflops);
}

TEST(GpuCatalogTest, EveryGpuHasLinksAndNvlinkGenerationsGrow) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  for (const GpuSpec& gpu : catalog.gpus()) {
    EXPECT_GT(gpu.pcie_gbs, 0) << gpu.model;
    EXPECT_EQ(gpu.nvlink_gbs > 0, gpu.nvlink_gpus >= 2) << gpu.model;
    // NVLink beats PCIe wherever a GPU has it.
    if (gpu.nvlink_gbs > 0) EXPECT_GT(gpu.nvlink_gbs, gpu.pcie_gbs) << gpu.model;
  }
  EXPECT_LT(catalog.Find("V100-SXM2-32GB")->nvlink_gbs, catalog.Find("A100-SXM4-80GB")->nvlink_gbs);
  EXPECT_LT(catalog.Find("A100-SXM4-80GB")->nvlink_gbs, catalog.Find("H100-SXM5-80GB")->nvlink_gbs);
  EXPECT_EQ(catalog.Find("H100-SXM5-80GB")->nvlink_gpus, 8);
  EXPECT_EQ(catalog.Find("H100-NVL-94GB")->nvlink_gpus, 2);
  EXPECT_EQ(catalog.Find("L4-24GB")->nvlink_gbs, 0);
}

TEST(GpuCatalogTest, LookupIsCaseInsensitiveAndUnknownNamesListTheCatalog) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  EXPECT_EQ(catalog.Find("h100-sxm5-80gb")->model, "H100-SXM5-80GB");
  auto missing = catalog.Find("H900");
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("H100-SXM5-80GB"), std::string::npos);
  EXPECT_EQ(catalog.FindByVendorName("NVIDIA H100 80GB HBM3")->model, "H100-SXM5-80GB");
  EXPECT_FALSE(catalog.FindByVendorName("Voodoo 2").ok());
}

TEST(GpuCatalogTest, ParseRejectsBadDocuments) {
  EXPECT_FALSE(GpuCatalog::Parse("{").ok());
  EXPECT_FALSE(GpuCatalog::Parse("{\"gpus\": 3}").ok());
  EXPECT_FALSE(GpuCatalog::Parse(R"({"gpus": [{"model": "X"}]})").ok());  // no rates
  EXPECT_FALSE(GpuCatalog::Parse(
                   R"({"gpus": [{"model": "X", "memory_bandwidth_gbs": 1, "fp32_tflops": -1}]})")
                   .ok());
  EXPECT_FALSE(GpuCatalog::Parse(R"({"gpus": [
      {"model": "X", "memory_bandwidth_gbs": 1, "fp32_tflops": 1},
      {"model": "x", "memory_bandwidth_gbs": 2, "fp32_tflops": 2}]})")
                   .ok());
  auto ok = GpuCatalog::Parse(R"({"gpus": [{"model": "X", "memory_bandwidth_gbs": 1, "fp32_tflops": 1}]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->gpus().size(), 1u);
}

TEST(NodeSpecTest, ParsesCatalogAndCustomGpus) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  auto node = NodeFromSpecJson(R"({"name": "n1", "count": 4, "labels": {"zone": "a"}, "gpu": "L4-24GB"})",
                               catalog);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpu.model, "L4-24GB");
  EXPECT_EQ(node->gpu_count, 4);
  EXPECT_EQ(node->labels.at("zone"), "a");
  auto custom = NodeFromSpecJson(
      R"({"name": "n2", "gpu": {"model": "MI300X", "memory_bandwidth_gbs": 5300, "fp32_tflops": 163.4, "bf16_tflops": 1307,
          "nvlink_gbs": 448, "nvlink_gpus": 8, "pcie_gbs": 63, "network_gbs": 50}})",
      catalog);
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->gpu.bf16_tflops, 1307);
  EXPECT_EQ(custom->gpu.nvlink_gbs, 448);
  EXPECT_EQ(custom->gpu.nvlink_gpus, 8);
  EXPECT_EQ(custom->gpu.pcie_gbs, 63);
  EXPECT_EQ(custom->gpu.network_gbs, 50);
  EXPECT_EQ(GpuSpecFromJson(GpuSpecToJson(custom->gpu)).value(), custom->gpu);
  EXPECT_EQ(NodeFromSpecJson(
                R"({"name": "n4", "gpu": {"model": "X", "memory_bandwidth_gbs": 1, "fp32_tflops": 1, "pcie_gbs": -1}})",
                catalog)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(custom->source, NodeSource::kSpecFile);
  EXPECT_EQ(NodeFromSpecJson(R"({"name": "n3", "gpu": "H900"})", catalog).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(NodeFromSpecJson(R"({"gpu": "L4-24GB"})", catalog).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NodeFromSpecJson("[1,2]", catalog).status().code(), absl::StatusCode::kInvalidArgument);
}

// Numeric hostility in node spec files: impossible counts, rates, names.
TEST(NodeSpecTest, RejectsHostileNumbersAndNames) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  auto code = [&](const std::string& json) { return NodeFromSpecJson(json, catalog).status().code(); };
  for (const char* count : {"0", "-1", "1e9", "1025", "2.5", "1e999", "\"8\"", "null"}) {
    EXPECT_EQ(code(absl::StrCat(R"({"name": "n", "gpu": "L4-24GB", "count": )", count, "}")),
              absl::StatusCode::kInvalidArgument)
        << count;
  }
  EXPECT_TRUE(NodeFromSpecJson(R"({"name": "n", "gpu": "L4-24GB", "count": 1024})", catalog).ok());
  EXPECT_EQ(code(R"({"name": "", "gpu": "L4-24GB"})"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(absl::StrCat(R"({"name": ")", std::string(1 << 20, 'x'), R"(", "gpu": "L4-24GB"})")),
            absl::StatusCode::kInvalidArgument);
  for (const char* rates : {R"("memory_bandwidth_gbs": -1, "fp32_tflops": 10)",
                            R"("memory_bandwidth_gbs": 0, "fp32_tflops": 10)",
                            R"("memory_bandwidth_gbs": 100, "fp32_tflops": 1e999)",
                            R"("memory_bandwidth_gbs": 100, "fp32_tflops": NaN)",
                            R"("memory_bandwidth_gbs": 100, "fp32_tflops": "fast")",
                            R"("memory_bandwidth_gbs": 100, "fp32_tflops": 10, "sm_count": 1e12)"}) {
    EXPECT_EQ(code(absl::StrCat(R"({"name": "n", "gpu": {"model": "X", )", rates, "}}")),
              absl::StatusCode::kInvalidArgument)
        << rates;
  }
  EXPECT_EQ(code(R"({"name": "n", "gpu": ""})"), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(absl::StrCat(R"({"name": "n", "gpu": ")", std::string(1 << 20, 'g'), R"("})")),
            absl::StatusCode::kNotFound);
}

TEST(NodeSpecTest, GpuSpecJsonRoundTrips) {
  const GpuSpec h100 = *GpuCatalog::BuiltIn().Find("H100-SXM5-80GB");
  auto parsed = GpuSpecFromJson(GpuSpecToJson(h100));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, h100);
}

}  // namespace
}  // namespace perfcast::models

namespace perfcast::models {
namespace {

TEST(CompleteFromCatalogTest, FillsOnlyMissingSpecFields) {
  GpuSpec measured;
  measured.model = "H100-SXM5-80GB";
  measured.sm_count = 132;
  measured.memory_gib = 79.2;  // what the device reports, kept
  ASSERT_TRUE(CompleteFromCatalog(GpuCatalog::BuiltIn(), measured));
  EXPECT_EQ(measured.memory_gib, 79.2);
  EXPECT_EQ(measured.bf16_tflops, 989.4);
  EXPECT_EQ(measured.architecture, "hopper");
  GpuSpec unknown;
  unknown.model = "cpu-16t";
  EXPECT_FALSE(CompleteFromCatalog(GpuCatalog::BuiltIn(), unknown));
  EXPECT_EQ(unknown.fp32_tflops, 0);
}

}  // namespace
}  // namespace perfcast::models
