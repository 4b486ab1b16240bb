// The agent end to end on the CPU: the quick plan with LibTorch under a small
// budget, and the command line's answers to bad input.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/profile.h"
#include "profiler/fingerprint.h"
#include "profiler/plan.h"
#include "profiler/runner.h"
#include "profiler/torch_measurer.h"
#include "tests/environment_gap.h"

namespace perfcast::profiler {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void RemoveStore(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

TEST(AgentTest, QuickPlanOnCpuWritesAValidStore) {
  // Several checkouts may run this test at once in one temporary directory.
  const std::string path = TempPath(absl::StrCat("agent_quick_", getpid(), ".sqlite"));
  RemoveStore(path);
  DeviceOptions device{.device = "cpu", .threads = 1, .seed = 7};
  absl::StatusOr<models::Node> node = Fingerprint(device, "ci-cpu", /*measure_rates=*/true);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpu_count, 0);
  EXPECT_EQ(node->gpu.model, "cpu-1t");
  EXPECT_TRUE(node->measured.fp32_tflops.has_value());
  EXPECT_GT(*node->measured.cpu_single_thread_score, 0);
  EXPECT_GT(node->measured.dispatch_ops_per_s.value_or(0), 0);
  EXPECT_GT(node->measured.launch_latency_us.value_or(0), 0);

  absl::StatusOr<RunPlan> plan = BuiltinPlan("quick");
  ASSERT_TRUE(plan.ok());
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(*plan);
  ASSERT_TRUE(specs.ok());
  absl::StatusOr<std::unique_ptr<Measurer>> measurer = MakeTorchMeasurer(device, node->measured);
  ASSERT_TRUE(measurer.ok()) << measurer.status();
  int64_t measured = 0;
  {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenSqliteAgentStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    RunOptions options;
    options.budget = absl::Seconds(8);
    absl::StatusOr<RunSummary> summary =
        RunWorkloads(*specs, plan->timing, *node, **measurer, **store, options);
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_GT(summary->measured, 0);
    EXPECT_EQ(summary->measured + summary->skipped + summary->not_run, summary->planned);
    EXPECT_GT(summary->end_host.dispatch_ops_per_s.value_or(0), 0);
    measured = summary->measured;
  }
  absl::StatusOr<std::unique_ptr<db::Store>> reader = db::OpenStoreReadOnly(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  int64_t seen = 0;
  ASSERT_TRUE((*reader)
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    ++seen;
                    EXPECT_TRUE(models::ValidateProfile(p).ok()) << p.workload.Key();
                    EXPECT_EQ(p.node_name, "ci-cpu");
                    EXPECT_GT(p.throughput_per_s.value_or(0), 0);
                    EXPECT_EQ(p.method_version, models::kCurrentMethodVersion);
                    EXPECT_GT(p.conditions.dispatch_ops_per_s.value_or(0), 0);
                    EXPECT_GT(p.conditions.cpu_single_thread_score.value_or(0), 0);
                    // No GPU: no board power.
                    EXPECT_FALSE(p.conditions.board_power_w.has_value());
                    if (p.workload.kind == models::WorkloadKind::kModel) {
                      EXPECT_TRUE(p.phases.forward_ms.has_value());
                      // The generator's cost is a phase of its own.
                      EXPECT_GT(p.phases.data_load_ms.value_or(0), 0);
                      EXPECT_TRUE(p.epoch_s.has_value());
                      // Adaptive repeats stay within the plan's cap.
                      EXPECT_LE(p.repeats, std::max(plan->timing.repeats, plan->timing.max_repeats));
                    }
                    return true;
                  })
                  .ok());
  EXPECT_EQ(seen, measured);
  RemoveStore(path);
}

// An agent's node carries the catalog's own model name, or profiles of an L4
// it measured ("L4") would not be selected as L4-24GB nor get its spec sheet.
// The names are cudaDeviceProp::name as drivers report them (the agent's own
// table before the catalog held them).
TEST(FingerprintTest, CudaDeviceNamesBecomeCatalogModelsSpelledAsTheCatalogSpellsThem) {
  const std::pair<const char*, const char*> kReported[] = {
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"}, {"NVIDIA H100 PCIe", "H100-PCIE-80GB"},
      {"NVIDIA H100 NVL", "H100-NVL-94GB"},        {"NVIDIA H200", "H200-SXM-141GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"}, {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"}, {"NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"},
      {"NVIDIA A30", "A30-24GB"},                  {"NVIDIA A10", "A10-24GB"},
      {"NVIDIA L40S", "L40S-48GB"},                {"NVIDIA L4", "L4-24GB"},
      {"Tesla V100-SXM2-32GB", "V100-SXM2-32GB"},  {"Tesla V100-PCIE-32GB", "V100-PCIE-32GB"},
      {"Tesla T4", "T4-16GB"},                     {"Tesla P100-PCIE-16GB", "P100-PCIE-16GB"},
      {"Tesla P4", "P4-8GB"},                      {"NVIDIA H200 NVL", "H200NVL-141GB"},
      {"NVIDIA GH200 480GB", "GH200-96GB"},        {"Tesla V100-SXM2-16GB", "V100-SXM2-16GB"},
  };
  for (const auto& [cuda_name, model] : kReported) {
    EXPECT_EQ(CatalogModelName(cuda_name), model) << cuda_name;
    absl::StatusOr<models::GpuSpec> spec = models::GpuCatalog::BuiltIn().FindExact(model);
    ASSERT_TRUE(spec.ok()) << cuda_name << " -> " << model;
    EXPECT_EQ(spec->vendor_name, cuda_name);
  }
  // Not in the catalog: the device name itself, which a reader recognises
  // and `nodes register --spec` can complete.
  EXPECT_EQ(CatalogModelName("NVIDIA B300"), "NVIDIA B300");
}

int RunAgent(const std::string& args, std::string* output) {
  // ctest runs the cases of this file in parallel processes: one log each.
  static int calls = 0;
  const std::string log = TempPath(absl::StrCat("agent_cli_", getpid(), "_", ++calls, ".log"));
  const int status =
      std::system(absl::StrCat(PERFCAST_AGENT_PATH, " ", args, " >", log, " 2>&1").c_str());
  std::ifstream in(log);
  output->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The node's stored Python probe, and the probe each profile carries.
struct StoredProbe {
  models::Node node;
  std::vector<std::optional<double>> profiles;
};

StoredProbe ReadProbe(const std::string& path) {
  StoredProbe stored;
  absl::StatusOr<std::unique_ptr<db::Store>> reader = db::OpenStoreReadOnly(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return stored;
  EXPECT_TRUE(db::ForEachNode(**reader, {}, [&](models::Node& n) { stored.node = n; }).ok());
  EXPECT_TRUE((*reader)
                  ->ScanProfiles({},
                                 [&](const models::Profile& p) {
                                   stored.profiles.push_back(p.conditions.python_op_us);
                                   return true;
                                 })
                  .ok());
  return stored;
}

// A run stores the Python probe with its node and profiles where a python
// with torch answers (a fake one here), and runs without it ("not measured")
// where none does or the probe is off.
TEST(AgentCliTest, ARunStoresThePythonProbeAndGoesOnWithoutIt) {
  const std::string plan = TempPath(absl::StrCat("probe_plan_", getpid(), ".json"));
  std::ofstream(plan) << R"({"timing": {"warmup": 1, "repeats": 1, "target_repeat_ms": 5},)"
                      << R"( "grids": [{"family": "gemm", "params": {"m": 32, "n": 32, "k": 32}}]})";
  const std::string fake = TempPath(absl::StrCat("fake_python_", getpid()));
  std::ofstream(fake) << "#!/bin/sh\n[ \"$3\" = cpu ] || exit 1\n"
                      << R"(echo '{"python_version": "3.12.3", "torch_version": "2.11.0", )"
                      << R"("python_op_us": 8.25, "torchscript_op_us": 5.5, )"
                      << R"("loop_forward_us_per_launch": 9.5, "loop_backward_us_per_launch": 11, )"
                      << R"("loop_optimizer_us_per_launch": 14, )"
                      << R"("loop_inference_us_per_launch": 8, "loop_train_us_per_launch": 11.5}')"
                      << "\n";
  chmod(fake.c_str(), 0755);
  const std::string out = TempPath(absl::StrCat("probe_run_", getpid(), ".sqlite"));
  const std::string run = "run --device cpu --threads 1 --quiet --name ci-probe --plan-file " + plan;

  std::string output;
  RemoveStore(out);
  ASSERT_EQ(RunAgent(absl::StrCat(run, " --python ", fake, " --out ", out), &output), 0) << output;
  EXPECT_THAT(output, HasSubstr("8.25 us per op from Python, 5.50 us from TorchScript"));
  EXPECT_THAT(output, HasSubstr("9.50 us per kernel launch in forward, 11.00 in backward, 14.00 "
                                "in the optimizer, 11.50 training, 8.00 in inference"));
  StoredProbe probed = ReadProbe(out);
  EXPECT_EQ(probed.node.measured.python_op_us, 8.25);
  EXPECT_EQ(probed.node.measured.torchscript_op_us, 5.5);
  EXPECT_EQ(probed.node.host.python_version, "3.12.3");
  EXPECT_EQ(probed.node.host.python_torch_version, "2.11.0");
  ASSERT_EQ(probed.profiles.size(), 1u);
  EXPECT_EQ(probed.profiles[0], 8.25);

  for (const std::string& without : {std::string("--python /nonexistent/python3"),
                                     absl::StrCat("--no-python-probe --python ", fake)}) {
    RemoveStore(out);
    ASSERT_EQ(RunAgent(absl::StrCat(run, " ", without, " --out ", out), &output), 0) << output;
    EXPECT_THAT(output, HasSubstr("not measured")) << without;
    StoredProbe unprobed = ReadProbe(out);
    EXPECT_FALSE(unprobed.node.measured.python_op_us.has_value()) << without;
    ASSERT_EQ(unprobed.profiles.size(), 1u);
    EXPECT_FALSE(unprobed.profiles[0].has_value()) << without;
  }
  RemoveStore(out);
  std::remove(plan.c_str());
  std::remove(fake.c_str());
}

TEST(AgentCliTest, BadInputGivesOneLineAndNonZeroExit) {
  const std::string bad_family = TempPath("bad_family.json");
  {
    std::ofstream out(bad_family);
    out << R"({"grids": [{"family": "warp_drive"}]})";
  }
  const std::string impossible = TempPath("impossible.json");
  {
    std::ofstream out(impossible);
    out << R"({"grids": [{"family": "gemm", "params": {"m": -4}}]})";
  }
  const std::string out = TempPath("cli.sqlite");
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"run --plan-file " + bad_family + " --out " + out, "unknown family 'warp_drive'"},
      {"run --plan-file " + impossible + " --out " + out, "parameter 'm' = -4 is out of range"},
      {"run --plan-file /nonexistent/plan.yaml --out " + out, "cannot read plan file"},
      {"run --plan nope --out " + out, "unknown plan 'nope'"},
      {"plan --show nope", "unknown plan"},
  };
  for (const Case& c : cases) {
    std::string output;
    EXPECT_NE(RunAgent(c.args, &output), 0) << c.args;
    EXPECT_THAT(output, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(output, HasSubstr("perfcast-agent: ")) << c.args;
  }
  std::remove(bad_family.c_str());
  std::remove(impossible.c_str());
  RemoveStore(out);
}

TEST(AgentCliTest, CollectivesRunOneProcessPerRankOverGloo) {
  const std::string path = TempPath("collectives.sqlite");
  RemoveStore(path);
  std::string output;
  const int status = RunAgent(
      "collectives --gpus 2 --device cpu --threads 1 --sizes 4K,64K --name ci-ar --out " + path,
      &output);
  if (output.find("built without LibTorch's gloo backend") != std::string::npos) {
    SKIP_FOR_ENVIRONMENT_GAP() << "this LibTorch has no Gloo headers (libgloo-dev)";
  }
  ASSERT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("all-reduce over 2 processes (Gloo): 2 sizes measured"));
  absl::StatusOr<std::unique_ptr<db::Store>> reader = db::OpenStoreReadOnly(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<int64_t> sizes;
  ASSERT_TRUE((*reader)
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    EXPECT_EQ(p.workload.family, "allreduce");
                    EXPECT_EQ(p.workload.params.at("gpus"), 2);
                    EXPECT_EQ(p.node_name, "ci-ar");
                    EXPECT_GT(p.iteration.mean_ms, 0);
                    EXPECT_TRUE(models::ValidateProfile(p).ok());
                    sizes.push_back(p.workload.params.at("bytes"));
                    return true;
                  })
                  .ok());
  EXPECT_THAT(sizes, ::testing::UnorderedElementsAre(4096, 65536));
  RemoveStore(path);
}

TEST(AgentCliTest, MultiGpuCommandsRefuseBadInput) {
  std::string output;
  EXPECT_NE(RunAgent("collectives --gpus 1 --device cpu", &output), 0);
  EXPECT_THAT(output, HasSubstr("--gpus must be >= 2"));
  EXPECT_NE(RunAgent("collectives --gpus 2 --device cpu --sizes 1M:4K --out " +
                         TempPath("never.sqlite"),
                     &output),
            0);
  EXPECT_THAT(output, HasSubstr("ends below its start"));
  EXPECT_NE(RunAgent("ddp --gpus 2 --device cpu --workload 'model/lstm{layers=1}/b3/fp32/train/adam' --out " +
                         TempPath("never.jsonl"),
                     &output),
            0);
  EXPECT_THAT(output, HasSubstr("does not split over 2 GPUs"));
}

TEST(AgentCliTest, CudaWithoutGpuFails) {
  std::string output;
  EXPECT_NE(RunAgent("fingerprint --device cuda --no-measure", &output), 0);
  EXPECT_THAT(output, HasSubstr("--device cuda"));
}

TEST(AgentCliTest, ARunThatNeedsAMissingGpuWritesNothing) {
  const std::string out = TempPath("no_gpu.sqlite");
  RemoveStore(out);
  std::string output;
  EXPECT_NE(RunAgent("run --device cuda --plan quick --out " + out, &output), 0);
  EXPECT_THAT(output, HasSubstr("--device cuda"));
  EXPECT_FALSE(std::ifstream(out).good()) << "the store was created";
}

TEST(AgentCliTest, OverheadComparesAlternatingPairs) {
  std::string output;
  ASSERT_EQ(RunAgent("overhead --device cpu --threads 1 --families lstm,dlrm --batch 4 "
                     "--pairs 4 --block-ms 5",
                     &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr("overhead: 4 pairs: median ratio"));
  EXPECT_THAT(output, HasSubstr("model/lstm{"));
  EXPECT_THAT(output, HasSubstr("model/dlrm{"));
  EXPECT_NE(RunAgent("overhead --device cpu --families gemm --pairs 2", &output), 0);
  EXPECT_THAT(output, HasSubstr("family 'gemm'"));
}

TEST(AgentCliTest, PlanShowPrintsTheGridSize) {
  std::string output;
  ASSERT_EQ(RunAgent("plan --show default", &output), 0) << output;
  EXPECT_THAT(output, HasSubstr("total: 479 configurations (228 model, 251 operation)"));
}

}  // namespace
}  // namespace perfcast::profiler
