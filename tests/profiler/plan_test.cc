#include "profiler/plan.h"

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"

namespace perfcast::profiler {
namespace {

using ::testing::HasSubstr;
using models::WorkloadKind;

struct Counts {
  int64_t models = 0;
  int64_t operations = 0;
  std::set<std::string> families;
};

Counts CountPlan(const RunPlan& plan) {
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(plan);
  EXPECT_TRUE(specs.ok()) << specs.status();
  Counts counts;
  if (!specs.ok()) return counts;
  for (const models::WorkloadSpec& spec : *specs) {
    (spec.kind == WorkloadKind::kModel ? counts.models : counts.operations)++;
    counts.families.insert(spec.family);
  }
  return counts;
}

TEST(BuiltinPlanTest, QuickCoversEveryFamilyOnce) {
  absl::StatusOr<RunPlan> plan = BuiltinPlan("quick");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Counts counts = CountPlan(*plan);
  EXPECT_EQ(counts.models, 20);  // 10 families x train/inference
  EXPECT_EQ(counts.operations, 21);
  // Every family but allreduce, which needs several GPUs (perfcast-agent collectives).
  EXPECT_EQ(counts.families.size(), models::Families().size() - 1);
  EXPECT_FALSE(counts.families.contains("allreduce"));
}

TEST(BuiltinPlanTest, DefaultMeasuresFewConfigurationsWell) {
  absl::StatusOr<RunPlan> plan = BuiltinPlan("default");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Counts counts = CountPlan(*plan);
  // 6 families x sizes {1, 2, 4, 8} x batches {16, 64, 256} x (fp32 and
  // bf16-amp training, fp32 inference), plus tf32 training at batch 64 for
  // cnn, resnet and transformer.
  EXPECT_EQ(counts.models, 6 * 4 * 3 * 3 + 3 * 4);
  EXPECT_EQ(counts.operations, 251);
  // The study's proxies and every operation class; the architectures plan
  // adds the models users train.
  Counts both = counts;
  both.families.merge(CountPlan(*BuiltinPlan("architectures")).families);
  EXPECT_EQ(both.families.size(), models::Families().size() - 1);  // not allreduce
  EXPECT_EQ(plan->max_minutes, 9);
  // The method: >= 5 timed blocks of >= 100 ms over two passes.
  EXPECT_GE(plan->timing.repeats, 5);
  EXPECT_EQ(plan->timing.passes, 2);
  EXPECT_GE(plan->timing.target_repeat_ms, 100);
  // Adaptive: more blocks where five leave the median uncertain.
  EXPECT_GT(plan->timing.max_repeats, plan->timing.repeats);
}

TEST(RepeatsInPassTest, SplitsEvenlyEarlierPassesFirst) {
  EXPECT_EQ(RepeatsInPass(5, 2, 0), 3);
  EXPECT_EQ(RepeatsInPass(5, 2, 1), 2);
  EXPECT_EQ(RepeatsInPass(6, 3, 2), 2);
  EXPECT_EQ(RepeatsInPass(5, 1, 0), 5);
  EXPECT_EQ(RepeatsInPass(1, 2, 1), 1);  // never zero
}

TEST(BuiltinPlanTest, ArchitecturesCoverTheModelsUsersTrain) {
  absl::StatusOr<RunPlan> plan = BuiltinPlan("architectures");
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(*plan);
  ASSERT_TRUE(specs.ok()) << specs.status();
  // Per family: the distinct parameter counts (sizes), and which of them are
  // trained in bf16-amp.
  std::map<std::string, std::set<double>> sizes;
  std::map<std::string, std::set<double>> bf16_train;
  std::set<std::string> ops;
  std::map<models::Precision, std::set<std::string>> families_by_fp32_mode;
  for (const models::WorkloadSpec& spec : *specs) {
    if (spec.kind == WorkloadKind::kOperation) {
      ops.insert(spec.family);
      continue;
    }
    if (spec.precision == models::Precision::kTf32 ||
        spec.precision == models::Precision::kStrictFp32) {
      families_by_fp32_mode[spec.precision].insert(spec.family);
    }
    absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
    ASSERT_TRUE(d.ok()) << d.status();
    sizes[spec.family].insert(d->parameters);
    if (spec.precision == models::Precision::kBf16Amp && spec.phase == models::Phase::kTrain) {
      bf16_train[spec.family].insert(d->parameters);
    }
  }
  // GPT-2 small and medium, TinyLlama-1.1B; BERT-base and -large; ViT-B/16 at
  // 6 and 12 layers; ResNet-18, 50 and 101: every family has a largest size
  // to hold out and smaller ones to learn from, all trained in bf16-amp.
  const std::map<std::string, std::set<double>> expected = {
      {"decoder", {124439808, 354823168, 1100048384}},
      {"bert", {109514298, 335174458}},
      {"vit", {44040424, 86567656}},
      {"resnet_imagenet", {11689512, 25557032, 44549160}},
  };
  EXPECT_EQ(sizes, expected);
  EXPECT_EQ(bf16_train, expected);
  for (const char* op : {"gemm", "sdpa", "rmsnorm", "swiglu", "cross_entropy", "embedding",
                         "layernorm", "optimizer"}) {
    EXPECT_TRUE(ops.contains(op)) << op;
  }
  // PyTorch's tf32 and strict-fp32 modes are measured on the families the
  // plain-loop validation runs, so the agent's runs calibrate them too.
  const std::map<models::Precision, std::set<std::string>> expected_fp32_modes = {
      {models::Precision::kTf32, {"bert", "decoder", "resnet_imagenet", "vit"}},
      {models::Precision::kStrictFp32, {"bert", "decoder", "resnet_imagenet"}},
  };
  EXPECT_EQ(families_by_fp32_mode, expected_fp32_modes);
  EXPECT_EQ(specs->size(), 62u + 163u);
}

TEST(BuiltinPlanTest, FullIsLargerAndUnknownIsNotFound) {
  absl::StatusOr<RunPlan> full = BuiltinPlan("full");
  ASSERT_TRUE(full.ok());
  const Counts counts = CountPlan(*full);
  EXPECT_GT(counts.models + counts.operations, 7202);
  EXPECT_EQ(BuiltinPlan("nope").status().code(), absl::StatusCode::kNotFound);
}

constexpr char kJsonPlan[] = R"({
  "name": "mine",
  "max_minutes": 2.5,
  "timing": {"warmup": 1, "repeats": 4, "target_repeat_ms": 10, "passes": 2,
             "warmup_tolerance": 0.05, "max_warmup_blocks": 4, "prefetch": 3,
             "max_repeats": 12, "target_median_error": 0.02},
  "grids": [
    {"family": "lstm", "params": {"layers": [1, 2], "hidden": 64},
     "batch": [8, 16], "precision": ["fp32", "bf16"], "phase": ["train", "inference"],
     "optimizer": ["adam", "sgd"]},
    {"family": "gemm", "params": {"m": [64, 128], "n": 64, "k": 64}, "precision": "fp16"}
  ]
})";

TEST(PlanFileTest, JsonExpandsTheProduct) {
  absl::StatusOr<RunPlan> plan = ParsePlanJson(kJsonPlan);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->name, "mine");
  EXPECT_DOUBLE_EQ(plan->max_minutes, 2.5);
  EXPECT_EQ(plan->timing.repeats, 4);
  EXPECT_EQ(plan->timing.warmup_iterations, 1);
  EXPECT_EQ(plan->timing.passes, 2);
  EXPECT_DOUBLE_EQ(plan->timing.warmup_tolerance, 0.05);
  EXPECT_EQ(plan->timing.max_warmup_blocks, 4);
  EXPECT_EQ(plan->timing.prefetch_batches, 3);
  EXPECT_EQ(plan->timing.max_repeats, 12);
  EXPECT_DOUBLE_EQ(plan->timing.target_median_error, 0.02);
  ASSERT_EQ(plan->grids.size(), 2u);
  EXPECT_EQ(plan->grids[1].kind, WorkloadKind::kOperation);
  const Counts counts = CountPlan(*plan);
  // layers 2 x batch 2 x precision 2 x (train: 2 optimizers + inference: 1).
  EXPECT_EQ(counts.models, 2 * 2 * 2 * 3);
  EXPECT_EQ(counts.operations, 2);  // operations default to inference
}

TEST(PlanFileTest, YamlMatchesJson) {
  constexpr char kYaml[] = R"(
name: mine
max_minutes: 2.5
timing: {warmup: 1, repeats: 4, target_repeat_ms: 10, passes: 2, warmup_tolerance: 0.05,
         max_warmup_blocks: 4, prefetch: 3, max_repeats: 12, target_median_error: 0.02}
grids:
  - family: lstm
    params: {layers: [1, 2], hidden: 64}
    batch: [8, 16]
    precision: [fp32, bf16]
    phase: [train, inference]
    optimizer: [adam, sgd]
  - family: gemm
    params: {m: [64, 128], n: 64, k: 64}
    precision: fp16
)";
  absl::StatusOr<RunPlan> yaml = ParsePlanYaml(kYaml);
  absl::StatusOr<RunPlan> json = ParsePlanJson(kJsonPlan);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*ExpandPlan(*yaml), *ExpandPlan(*json));
  EXPECT_EQ(yaml->timing, json->timing);
}

TEST(PlanFileTest, LoadsByExtension) {
  const std::string path = ::testing::TempDir() + "/plan_test.yaml";
  {
    std::ofstream out(path);
    out << "grids:\n  - family: softmax\n    params: {rows: 8, cols: [16, 32]}\n";
  }
  absl::StatusOr<RunPlan> plan = LoadPlanFile(path);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CountPlan(*plan).operations, 2);
  std::remove(path.c_str());
}

TEST(PlanFileTest, BadPlansFailClearly) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"{not json", "not valid JSON"},
      {R"({"grids": []})", "non-empty list"},
      {R"({"grids": [{"family": "warp_drive"}]})", "unknown family 'warp_drive'"},
      {R"({"grids": [{"family": "lstm", "colour": 1}]})", "unknown key 'colour'"},
      {R"({"grids": [{"family": "lstm", "precision": "fp4"}]})", "unknown precision"},
      {R"({"grids": [{"family": "lstm", "batch": []}]})", "empty list"},
      {R"({"grids": [{"family": "lstm", "params": {"layers": "two"}}]})", "expected an integer"},
      {R"({"grids": [{"family": "lstm", "optimizer": "lbfgs"}]})", "unknown optimizer"},
      {R"({"grids": [{"family": "gemm", "kind": "model"}]})", "is not of kind"},
      {R"({"timing": {"repeats": 0}, "grids": [{"family": "gemm"}]})", "timing.repeats"},
      {R"({"timing": {"passes": 9}, "grids": [{"family": "gemm"}]})", "timing.passes"},
      {R"({"timing": {"passes": 0}, "grids": [{"family": "gemm"}]})", "timing.passes"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RunPlan> plan = ParsePlanJson(c.text);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(plan.status().message(), HasSubstr(c.message)) << c.text;
  }
  EXPECT_FALSE(ParsePlanYaml("grids: [unclosed").ok());
}

// Found while writing tests/fuzz/plan_file_fuzz.cc (inputs in
// tests/fuzz/regressions/plan_file_fuzz/): each crashed or slipped through.
TEST(PlanFileTest, HostileDocumentsFailClearly) {
  // A YAML key that is a sequence threw YAML::TypedBadConversion out of the
  // parser (std::terminate).
  auto complex_key = ParsePlanYaml("? [complex, key]\n: value\ngrids: [{family: lstm}]\n");
  EXPECT_EQ(complex_key.status().code(), absl::StatusCode::kInvalidArgument);
  // Converting 1e30 to int64 was undefined behaviour.
  for (const char* json : {R"({"grids":[{"family":"lstm","batch":[1e30]}]})",
                           R"({"grids":[{"family":"lstm","params":{"layers":[-1e300]}}]})"}) {
    auto plan = ParsePlanJson(json);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr("integer")) << json;
  }
  // NaN and infinity passed the "non-negative" and "positive" checks.
  for (const char* yaml : {"max_minutes: .nan\ngrids: [{family: lstm}]\n",
                           "max_minutes: .inf\ngrids: [{family: lstm}]\n",
                           "timing: {target_repeat_ms: .inf}\ngrids: [{family: lstm}]\n",
                           "timing: {op_target_block_ms: .nan}\ngrids: [{family: lstm}]\n",
                           "timing: {target_median_error: -0.01}\ngrids: [{family: lstm}]\n",
                           "timing: {max_repeats: 0}\ngrids: [{family: lstm}]\n"}) {
    EXPECT_EQ(ParsePlanYaml(yaml).status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  }
  // Aliases expanding to 10^5 values are refused instead of exhausting memory.
  const std::string bomb =
      "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
      "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
      "e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n";
  auto bombed = ParsePlanYaml(bomb);
  EXPECT_EQ(bombed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bombed.status().message()), HasSubstr("values"));
  // Found by plan_file_fuzz in 11,208 runs: an anchor whose sequence holds
  // its own alias recursed until the stack overflowed.
  auto cycle = ParsePlanYaml("a: &a [1, a, *a, *a]\ngrids: [{family: lstm}]\n");
  EXPECT_EQ(cycle.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cycle.status().message()), HasSubstr("nested deeper"));
  // Quoting a deeply nested value in the message recursed without bound.
  const std::string deep = absl::StrCat(R"({"grids":[{"family":"lstm","batch":[)",
                                        std::string(200'000, '['), std::string(200'000, ']'),
                                        "]}]}");
  EXPECT_EQ(ParsePlanJson(deep).status().code(), absl::StatusCode::kInvalidArgument);
  // Non-UTF-8 text in a message made nlohmann::json::dump throw.
  auto binary = ParsePlanYaml("name: [\"\xff\"]\ngrids: [{family: lstm}]\n");
  EXPECT_EQ(binary.status().code(), absl::StatusCode::kInvalidArgument);
  // The size of a grid saturates instead of overflowing.
  Grid huge;
  huge.family = "gemm";
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    huge.params[name] = std::vector<int64_t>(100'000, 1);
  }
  EXPECT_EQ(huge.Size(), std::numeric_limits<int64_t>::max());
}

TEST(PlanFileTest, UnreadableFileIsNotFound) {
  absl::StatusOr<RunPlan> plan = LoadPlanFile("/nonexistent/plan.json");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(plan.status().message(), HasSubstr("/nonexistent/plan.json"));
}

TEST(ExpandPlanTest, ImpossibleSizesNameTheGrid) {
  absl::StatusOr<RunPlan> plan = ParsePlanJson(
      R"({"grids": [{"family": "gemm"}, {"family": "lstm", "params": {"layers": 0}}]})");
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(*plan);
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(specs.status().message(), HasSubstr("grid 1 (lstm)"));
  EXPECT_THAT(specs.status().message(), HasSubstr("layers"));

  plan = ParsePlanJson(R"({"grids": [{"family": "lstm", "params": {"depth": 3}}]})");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(ExpandPlan(*plan).ok());
}

TEST(ExpandPlanTest, DuplicatesAfterNormalisationAreDropped) {
  // h2d ignores precision and batch: four combinations, one workload each
  // for pinned and pageable.
  absl::StatusOr<RunPlan> plan = ParsePlanJson(
      R"({"grids": [{"family": "h2d", "params": {"pinned": [0, 1]},
                     "precision": ["fp32", "fp16"], "batch": [1, 2]}]})");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CountPlan(*plan).operations, 2);
}

}  // namespace
}  // namespace perfcast::profiler
