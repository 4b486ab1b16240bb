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

// Issue 29's list, every value with its source, and rates dense: a sparse
// figure copied by mistake would double a GPU's speed.
TEST(GpuCatalogTest, HasTodaysAcceleratorsEachValueSourcedAndRatesDense) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  for (const char* model :
       {"B200-SXM-180GB", "B100-SXM-180GB", "GB200-186GB", "H20-96GB", "H800-SXM5-80GB",
        "H100-NVL-94GB", "H100-PCIE-80GB", "L40-48GB", "L40S-48GB", "L20-48GB", "RTX-4090-24GB",
        "RTX-5090-32GB", "RTX-6000-ADA-48GB", "RTX-A6000-48GB", "A10G-24GB", "MI210-64GB",
        "MI250X-128GB", "MI300X-192GB", "MI325X-256GB"}) {
    EXPECT_TRUE(catalog.FindExact(model).ok()) << model;
  }
  for (const GpuSpec& gpu : catalog.gpus()) {
    EXPECT_FALSE(gpu.vendor.empty()) << gpu.model;
    EXPECT_GT(gpu.memory_gib, 0) << gpu.model;
    EXPECT_GE(gpu.pcie_generation, 3) << gpu.model;
    for (const GpuSpecField& field : GpuSpecSchema()) {
      if (field.name == "model") continue;
      EXPECT_FALSE(catalog.SourceOf(gpu.model, field.name).empty()) << gpu.model << " " << field.name;
    }
    // Dense tensor rates: FP8 twice FP16 and FP16 twice TF32 where a GPU
    // has them (Hopper, Ada, Blackwell, CDNA3 with FP32 accumulate).
    if (gpu.fp8_tflops > 0) {
      EXPECT_NEAR(gpu.fp8_tflops / gpu.fp16_tflops, 2, 0.05) << gpu.model;
    }
    if (gpu.tf32_tflops > 0 && gpu.architecture != "ada" && gpu.vendor == "NVIDIA") {
      EXPECT_NEAR(gpu.fp16_tflops / gpu.tf32_tflops, 2, 0.05) << gpu.model;
    }
  }
  EXPECT_EQ(catalog.Find("B200")->bf16_tflops, 2250);  // HGX B200: 36 PFLOP/s sparse / 8 / 2
  EXPECT_EQ(catalog.Find("MI300X")->vendor, "AMD");
  EXPECT_EQ(catalog.Find("H100-SXM5-80GB")->fp8_tflops, 1979);
  EXPECT_EQ(catalog.Find("A100-SXM4-80GB")->fp8_tflops, 0);
}

TEST(GpuCatalogTest, EveryGpuHasLinksAndNvlinkGenerationsGrow) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  for (const GpuSpec& gpu : catalog.gpus()) {
    EXPECT_GT(gpu.pcie_gbs, 0) << gpu.model;
    EXPECT_EQ(gpu.nvlink_gbs > 0, gpu.nvlink_gpus >= 2) << gpu.model;
    // NVLink beats PCIe wherever a GPU has it.
    if (gpu.nvlink_gbs > 0) {
      EXPECT_GT(gpu.nvlink_gbs, gpu.pcie_gbs) << gpu.model;
    }
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
  EXPECT_NE(missing.status().message().find("nearest: H100-SXM5-80GB"), std::string::npos)
      << missing.status();
  EXPECT_EQ(catalog.FindByVendorName("NVIDIA H100 80GB HBM3")->model, "H100-SXM5-80GB");
  EXPECT_EQ(catalog.FindByVendorName("tesla t4")->model, "T4-16GB");
  EXPECT_EQ(catalog.FindByVendorName("Voodoo 2").status().code(), absl::StatusCode::kNotFound);
  // The H200 NVL's name keeps "H200" the one H200 of the short-name rule.
  EXPECT_EQ(catalog.FindByVendorName("NVIDIA H200 NVL")->model, "H200NVL-141GB");
  EXPECT_EQ(catalog.Find("H200")->model, "H200-SXM-141GB");
}

TEST(GpuCatalogTest, UnambiguousShortNamesResolveAndAmbiguousOnesListCandidates) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  EXPECT_EQ(catalog.Find("H200")->model, "H200-SXM-141GB");
  EXPECT_EQ(catalog.Find("h200")->model, "H200-SXM-141GB");
  EXPECT_EQ(catalog.Find("L4")->model, "L4-24GB");  // not also the L40S
  EXPECT_EQ(catalog.Find("L40")->model, "L40-48GB");
  EXPECT_EQ(catalog.Find("L40S")->model, "L40S-48GB");
  EXPECT_EQ(catalog.Find("B200")->model, "B200-SXM-180GB");
  EXPECT_EQ(catalog.Find("MI300X")->model, "MI300X-192GB");
  EXPECT_EQ(catalog.Find("rtx-4090")->model, "RTX-4090-24GB");
  EXPECT_EQ(catalog.Find("A10")->model, "A10-24GB");  // not the A100s
  EXPECT_EQ(catalog.Find("h100-sxm")->model, "H100-SXM5-80GB");
  absl::StatusOr<GpuSpec> h100 = catalog.Find("H100");
  EXPECT_EQ(h100.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* candidate : {"H100-SXM5-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"}) {
    EXPECT_NE(h100.status().message().find(candidate), std::string::npos) << h100.status();
  }
  EXPECT_EQ(catalog.Find("Z9000").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog.Find("").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog.FindExact("H200").status().code(), absl::StatusCode::kNotFound);
}

TEST(GpuCatalogTest, ParseRejectsBadDocuments) {
  EXPECT_FALSE(GpuCatalog::Parse("{").ok());
  EXPECT_FALSE(GpuCatalog::Parse("{\"gpus\": 3}").ok());
  EXPECT_FALSE(GpuCatalog::Parse(R"({"gpus": [{"model": "X"}]})").ok());  // no rates
  EXPECT_FALSE(GpuCatalog::Parse(
                   R"({"gpus": [{"model": "X", "memory_bandwidth_gbs": 1, "fp32_tflops": -1}]})")
                   .ok());
  const std::string entry =
      R"("vendor": "V", "sm_count": 1, "memory_gib": 1, "memory_bandwidth_gbs": 1, "fp32_tflops": 1)";
  EXPECT_FALSE(GpuCatalog::Parse(absl::StrCat(R"({"gpus": [{"model": "X", )", entry,
                                              R"(, "sources": {"*": "a"}}, {"model": "x", )",
                                              entry, R"(, "sources": {"*": "a"}}]})"))
                   .ok());
  // Two models the driver reports by one name: the agent could not tell them apart.
  auto same_reported_name = GpuCatalog::Parse(absl::StrCat(
      R"({"gpus": [{"model": "X", "vendor_name": "NVIDIA X", )", entry,
      R"(, "sources": {"*": "a"}}, {"model": "Y", "vendor_name": "nvidia x", )", entry,
      R"(, "sources": {"*": "a"}}]})"));
  ASSERT_FALSE(same_reported_name.ok());
  EXPECT_NE(same_reported_name.status().message().find("duplicate vendor_name"), std::string::npos)
      << same_reported_name.status();
  // Every value keeps its source.
  auto unsourced = GpuCatalog::Parse(
      absl::StrCat(R"({"gpus": [{"model": "X", )", entry, R"(, "sources": {"model": "a"}}]})"));
  ASSERT_FALSE(unsourced.ok());
  EXPECT_NE(unsourced.status().message().find("no source for 'vendor'"), std::string::npos)
      << unsourced.status();
  auto misspelled = GpuCatalog::Parse(absl::StrCat(R"({"gpus": [{"model": "X", )", entry,
                                                   R"(, "sources": {"*": "a", "fp8_tflop": "b"}}]})"));
  ASSERT_FALSE(misspelled.ok());
  EXPECT_NE(misspelled.status().message().find("'fp8_tflops'"), std::string::npos)
      << misspelled.status();
  auto ok = GpuCatalog::Parse(absl::StrCat(R"({"gpus": [{"model": "X", )", entry,
                                           R"(, "sources": {"*": "a", "fp32_tflops,sm_count": "b"}}]})"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->gpus().size(), 1u);
  EXPECT_EQ(ok->SourceOf("X", "sm_count"), "b");
  EXPECT_EQ(ok->SourceOf("X", "memory_gib"), "a");
  EXPECT_EQ(ok->SourceOf("X", "no_such_field"), "");
  EXPECT_EQ(ok->SourceOf("Y", "sm_count"), "");
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
      R"({"name": "n2", "gpu": {"model": "MI300X", "memory_gib": 192, "memory_bandwidth_gbs": 5300, "fp32_tflops": 163.4, "bf16_tflops": 1307,
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
                R"({"name": "n4", "gpu": {"model": "X", "memory_gib": 1, "memory_bandwidth_gbs": 1, "fp32_tflops": 1, "bf16_tflops": 2, "pcie_gbs": -1}})",
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
    EXPECT_EQ(code(absl::StrCat(R"({"name": "n", "gpu": {"model": "X", "memory_gib": 8, "fp16_tflops": 50, )", rates, "}}")),
              absl::StatusCode::kInvalidArgument)
        << rates;
  }
  EXPECT_EQ(code(R"({"name": "n", "gpu": ""})"), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(absl::StrCat(R"({"name": "n", "gpu": ")", std::string(1 << 20, 'g'), R"("})")),
            absl::StatusCode::kNotFound);
}

// The schema is strict: a misspelled key is an error that names it and the
// key meant, and what prediction needs must be there and plausible.
TEST(NodeSpecTest, RejectsUnknownKeysAndImplausibleValuesNamingTheField) {
  const GpuCatalog& catalog = GpuCatalog::BuiltIn();
  const std::string good_gpu =
      R"("model": "B200-SXM-180GB", "memory_gib": 180, "memory_bandwidth_gbs": 8000, )"
      R"("fp32_tflops": 75, "bf16_tflops": 2250)";
  auto message = [&](const std::string& gpu_fields, const std::string& top = "") {
    absl::StatusOr<Node> node = NodeFromSpecJson(
        absl::StrCat(R"({"name": "n", )", top, R"("gpu": {)", gpu_fields, "}}"), catalog);
    EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument) << gpu_fields << top;
    return std::string(node.status().message());
  };
  ASSERT_TRUE(NodeFromSpecJson(absl::StrCat(R"({"name": "n", "gpu": {)", good_gpu, "}}"), catalog)
                  .ok());
  std::string m = message(absl::StrCat(good_gpu, R"(, "memory_gb": 180)"));
  EXPECT_NE(m.find("'memory_gb'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'memory_gib'"), std::string::npos) << m;
  m = message(absl::StrCat(good_gpu, R"(, "fp8_tflop": 4500)"));
  EXPECT_NE(m.find("did you mean 'fp8_tflops'"), std::string::npos) << m;
  m = message(good_gpu, R"("lables": {}, )");
  EXPECT_NE(m.find("did you mean 'labels'"), std::string::npos) << m;
  // Required: memory, bandwidth, fp32 and a tensor rate.
  m = message(R"("model": "X", "memory_bandwidth_gbs": 8000, "fp32_tflops": 75, "bf16_tflops": 2250)");
  EXPECT_NE(m.find("memory_gib"), std::string::npos) << m;
  m = message(R"("model": "X", "memory_gib": 180, "memory_bandwidth_gbs": 8000, "fp32_tflops": 75)");
  EXPECT_NE(m.find("tensor rate"), std::string::npos) << m;
  m = message(R"("model": "X", "memory_gib": 180, "memory_bandwidth_gbs": 0, "fp32_tflops": 75, "bf16_tflops": 9)");
  EXPECT_NE(m.find("memory_bandwidth_gbs"), std::string::npos) << m;
  // Absurd: a rate in FLOP/s where TFLOP/s belong, memory in MiB.
  m = message(absl::StrCat(good_gpu, R"(, "fp8_tflops": 1e6)"));
  EXPECT_NE(m.find("'fp8_tflops'"), std::string::npos) << m;
  m = message(R"("model": "X", "memory_gib": 184320, "memory_bandwidth_gbs": 8000, "fp32_tflops": 75, "bf16_tflops": 9)");
  EXPECT_NE(m.find("'memory_gib'"), std::string::npos) << m;
  m = message(absl::StrCat(good_gpu, R"(, "tdp_watts": -700)"));
  EXPECT_NE(m.find("'tdp_watts'"), std::string::npos) << m;
}

TEST(NodeSpecTest, SpecFormRoundTripsAndTheSchemaHelpListsEveryField) {
  auto node = NodeFromSpecJson(R"({"name": "n", "count": 8, "labels": {"a": "b"}, "gpu": "B200"})",
                               GpuCatalog::BuiltIn());
  ASSERT_TRUE(node.ok()) << node.status();
  auto again = NodeFromSpecJson(NodeSpecToJson(*node), GpuCatalog::BuiltIn());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->gpu, node->gpu);
  EXPECT_EQ(again->gpu_count, 8);
  const std::string help = SpecFileSchemaHelp();
  for (const GpuSpecField& field : GpuSpecSchema()) {
    EXPECT_NE(help.find(absl::StrCat("  ", field.name)), std::string::npos) << field.name;
  }
}

TEST(NearestNamesTest, RanksByEditDistanceToTheNameOrItsLeadingParts) {
  const std::vector<std::string> names = {"H100-SXM5-80GB", "B200-SXM-180GB", "MI300X-192GB"};
  EXPECT_EQ(NearestNames("B300", names, 1), std::vector<std::string>{"B200-SXM-180GB"});
  EXPECT_EQ(NearestNames("mi300", names, 1), std::vector<std::string>{"MI300X-192GB"});
  EXPECT_TRUE(NearestNames("Voodoo-2", names).empty());
  EXPECT_TRUE(NearestNames("", names).empty());
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
