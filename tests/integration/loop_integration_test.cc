// Issue 30, item 2, through the real perfcastd and CLI: the loop is part of
// the workload. A small model's training step in a Python loop is slower
// than the agent's C++ loop, the answer says how it priced the host work
// per operation, and an unknown loop is a usage error naming the choices.
// An imported run says which loop measured it, and a catalog GPU is priced
// with the probes of the registered nodes of that GPU model.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "models/profile.h"
#include "nlohmann/json.hpp"
#include "predictor/python_loop.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

// The node of data/h200-m10-default.sqlite: its fingerprint has a CPU score
// and no Python probe.
constexpr char kNode[] = "h200-sxm-10";

double Ms(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(: ([0-9.]+) ms per iteration)"))) return -1;
  return std::stod(m[1]);
}

// Writes an agent file at `path` holding the shipped node's hardware and
// host and one of its runs under each name of `probes`, each with that
// Python probe (us per operation), as agent runs that probed would.
// `with_cpu_score` false: the copies lose the CPU score (a node known by
// its probe alone).
void WriteProbedCopies(const std::string& path,
                       const std::vector<std::pair<std::string, double>>& probes,
                       bool with_cpu_score = true) {
  absl::StatusOr<std::unique_ptr<db::Store>> shipped =
      db::OpenStoreReadOnly(std::string(PERFCAST_DATA_DIR) + "/h200-m10-default.sqlite");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  absl::StatusOr<models::Node> node = (*shipped)->GetNode(kNode);
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_FALSE(node->measured.python_op_us.has_value());
  std::optional<models::Profile> profile;
  ASSERT_TRUE((*shipped)
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    profile = p;
                    return false;
                  })
                  .ok());
  ASSERT_TRUE(profile.has_value());
  absl::StatusOr<std::unique_ptr<db::Store>> agent = db::OpenSqliteAgentStore(path);
  ASSERT_TRUE(agent.ok()) << agent.status();
  for (const auto& [name, us] : probes) {
    models::Node copy = *node;
    copy.id = 0;
    copy.name = name;
    copy.measured.python_op_us = us;
    if (!with_cpu_score) copy.measured.cpu_single_thread_score.reset();
    copy.host.python_version = "3.12.3";
    ASSERT_TRUE((*agent)->RegisterNode(copy).ok());
  }
  // One transaction for the runs, after the nodes: it holds the writer.
  absl::StatusOr<std::unique_ptr<db::ImportTransaction>> import = (*agent)->BeginImport();
  ASSERT_TRUE(import.ok());
  int index = 0;
  for (const auto& [name, us] : probes) {
    models::Profile run = *profile;
    run.id = 0;
    run.node_name = name;
    run.conditions.python_op_us = us;
    run.content_hash = models::ComputeContentHash(run);
    ASSERT_TRUE((*import)->Add(index++, run).ok());
  }
  ASSERT_TRUE((*import)->Commit().ok());
}

// The factor of `fit --calibrate`'s note for `group`, or -1.
double CalibrationFactor(const std::string& out, const std::string& group) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(group + R"( on [0-9]+ measured runs?: the model's )"
                                                    R"(answers there times ([0-9.]+))"))) {
    return -1;
  }
  return std::stod(m[1]);
}

class LoopIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess(dir_->File("perfcast.db"));
    ASSERT_TRUE(server_->started());
    CommandResult r =
        server_->Cli({"import", std::string(PERFCAST_DATA_DIR) + "/h200-m10-default.sqlite"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = server_->Cli({"fit"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static std::vector<std::string> Lstm(const std::string& target_flag, const std::string& target,
                                       const std::string& loop) {
    return {"predict", "--family", "lstm", "--param", "layers=2", "--param", "hidden=128",
            "--batch", "64", "--precision", "fp32", "--phase", "train", target_flag, target,
            "--iterations", "1", "--loop", loop};
  }
  static TempDir* dir_;
  static ServerProcess* server_;
};
TempDir* LoopIntegration::dir_ = nullptr;
ServerProcess* LoopIntegration::server_ = nullptr;

TEST_F(LoopIntegration, PythonLoopOfASmallModelIsSlowerAndSaysWhy) {
  CommandResult cpp = server_->Cli(Lstm("--node", kNode, "cpp"));
  ASSERT_EQ(cpp.exit_code, 0) << cpp.err;
  CommandResult python = server_->Cli(Lstm("--node", kNode, "python"));
  ASSERT_EQ(python.exit_code, 0) << python.err;
  const double cpp_ms = Ms(cpp.out), python_ms = Ms(python.out);
  ASSERT_GT(cpp_ms, 0) << cpp.out;
  // A host-bound step: a Python loop's host work per operation outweighs
  // the C++ loop's.
  EXPECT_GT(python_ms, 1.2 * cpp_ms) << python.out;
  EXPECT_NE(python.out.find("loop python"), std::string::npos) << python.out;
  EXPECT_NE(python.out.find("no Python probe was measured on h200-sxm-10"), std::string::npos)
      << python.out;
  EXPECT_EQ(cpp.out.find("no Python probe"), std::string::npos) << cpp.out;
  // Python is the default.
  std::vector<std::string> plain = Lstm("--node", kNode, "python");
  plain.resize(plain.size() - 2);
  CommandResult defaulted = server_->Cli(plain);
  ASSERT_EQ(defaulted.exit_code, 0) << defaulted.err;
  EXPECT_EQ(Ms(defaulted.out), python_ms);
}

TEST_F(LoopIntegration, AnUnmeasuredHostIsAReferenceHostWithAWiderBand) {
  CommandResult python = server_->Cli(Lstm("--gpu", "H100-SXM5-80GB", "python"));
  ASSERT_EQ(python.exit_code, 0) << python.err;
  EXPECT_NE(python.out.find("reference host"), std::string::npos) << python.out;
}

// Issue 30 leftover: `--gpu NAME` (a catalog GPU, not a node) prices the
// Python loop with the probes stored for the registered nodes of that GPU
// model, their median with the band spanning them, once there are any.
TEST_F(LoopIntegration, ACatalogGpuPricesWithTheProbesOfItsNodes) {
  CommandResult before = server_->Cli(Lstm("--gpu", "H200-SXM-141GB", "python"));
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("of a reference host"), std::string::npos) << before.out;

  const std::string probed_file = dir_->File("fleet.sqlite");
  WriteProbedCopies(probed_file, {{"h200-a", 20}, {"h200-b", 40}, {"h200-c", 30}});
  if (HasFatalFailure()) return;
  CommandResult imported = server_->Cli({"import", probed_file});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  // A catalog GPU's node is read again after the server's node recheck (1 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  CommandResult after = server_->Cli(Lstm("--gpu", "H200-SXM-141GB", "python"));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const double factor = predictor::FittedPythonLoopTerms().probe_state_factor;
  EXPECT_NE(after.out.find(absl::StrFormat("%.1f us per operation from the probe (3 nodes of that "
                                           "GPU: the median, the band spanning them)",
                                           30 * factor)),
            std::string::npos)
      << after.out;
  EXPECT_NE(after.out.find("median of the agent's Python probes on 3 nodes of that GPU"),
            std::string::npos)
      << after.out;
  // Slower per operation than the reference host here, so a slower step.
  EXPECT_GT(Ms(after.out), Ms(before.out)) << before.out << after.out;
  std::vector<std::string> args = Lstm("--gpu", "H200-SXM-141GB", "python");
  args.insert(args.end(), {"--output", "json"});
  CommandResult json = server_->Cli(args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json loop = nlohmann::json::parse(json.out)["loop"];
  EXPECT_EQ(loop.value("per_op_source", ""), "probe") << json.out;
  EXPECT_EQ(loop.value("per_op_nodes", 0), 3) << json.out;
  EXPECT_NEAR(loop.value("per_op_us", 0.0), 30 * factor, 1e-9) << json.out;
  // Another GPU model's nodes do not count.
  CommandResult h100 = server_->Cli(Lstm("--gpu", "H100-SXM5-80GB", "python"));
  ASSERT_EQ(h100.exit_code, 0) << h100.err;
  EXPECT_NE(h100.out.find("of a reference host"), std::string::npos) << h100.out;
}

// A probed run: the shipped node's hardware and host under another name,
// whose agent run also stored the Python probe, is priced from its CPU score
// as the shipped node is (one probe reading samples one of two host levels),
// its answer saying what the probe read; the same node known by its probe
// alone is priced with the probe in a loop's state.
TEST_F(LoopIntegration, AProbedRunPricesThePythonLoopWithItsProbe) {
  const std::string probed_file = dir_->File("probed.sqlite");
  WriteProbedCopies(probed_file, {{"h200-probed", 30}});
  if (HasFatalFailure()) return;
  const std::string only_file = dir_->File("probe-only.sqlite");
  WriteProbedCopies(only_file, {{"h200-probe-only", 30}}, /*with_cpu_score=*/false);
  if (HasFatalFailure()) return;
  for (const std::string& file : {probed_file, only_file}) {
    CommandResult imported = server_->Cli({"import", file});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }

  CommandResult scored = server_->Cli(Lstm("--node", kNode, "python"));
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_NE(scored.out.find("us per operation estimated from the CPU score"), std::string::npos)
      << scored.out;
  CommandResult both = server_->Cli(Lstm("--node", "h200-probed", "python"));
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_NE(both.out.find("us per operation estimated from the CPU score"), std::string::npos)
      << both.out;
  EXPECT_NE(both.out.find("the agent's Python probe on h200-probed read 30.0 us"),
            std::string::npos)
      << both.out;
  CommandResult probed = server_->Cli(Lstm("--node", "h200-probe-only", "python"));
  ASSERT_EQ(probed.exit_code, 0) << probed.err;
  // The probe read a fresh process; the loop's process pays the state factor.
  const double factor = predictor::FittedPythonLoopTerms().probe_state_factor;
  EXPECT_NE(probed.out.find(absl::StrFormat("%.1f us per operation measured by the probe on "
                                            "h200-probe-only",
                                            30 * factor)),
            std::string::npos)
      << probed.out;
  EXPECT_NE(probed.out.find("measured by the agent's Python probe on h200-probe-only"),
            std::string::npos)
      << probed.out;
  // The probe's cost is above the estimate on this host-bound step.
  EXPECT_GT(Ms(probed.out), Ms(scored.out)) << probed.out << scored.out;
  // The C++ loop has no Python host work to price.
  CommandResult cpp = server_->Cli(Lstm("--node", "h200-probe-only", "cpp"));
  ASSERT_EQ(cpp.exit_code, 0) << cpp.err;
  EXPECT_EQ(cpp.out.find("probe"), std::string::npos) << cpp.out;
}

// Issue 30 leftover: an imported run says which loop measured it (`loop`,
// python by default); the column is stored and exported, `fit --calibrate`
// compares each run with the answer for its loop, and a bad value is
// rejected naming its line while the valid rows are stored.
TEST_F(LoopIntegration, ImportedRunsNameTheirLoopForTheFit) {
  constexpr char kRows[] =
      "H100-SXM5-80GB,lstm,layers=2;hidden=128,64,fp32,train,4.0\n"
      "H100-SXM5-80GB,lstm,layers=2;hidden=128,128,fp32,train,4.4\n"
      "H100-SXM5-80GB,lstm,layers=2;hidden=128,256,fp32,train,5.1\n";
  const std::string cpp_runs = dir_->File("cpp-runs.csv");
  std::ofstream(cpp_runs) << "gpu,family,params,batch_size,precision,phase,mean_ms,loop\n"
                          << absl::StrReplaceAll(kRows, {{"\n", ",cpp\n"}})
                          << "H100-SXM5-80GB,lstm,layers=2;hidden=128,512,fp32,train,7.0,java\n";
  CommandResult r = server_->Cli({"import", cpp_runs});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cpp-runs.csv:5: rejected: unknown loop 'java' (expected python or cpp)"),
            std::string::npos)
      << r.err;
  r = server_->Cli({"export", "--gpu", "H100-SXM5-80GB", "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<absl::string_view> around_cpp = absl::StrSplit(r.out, ",cpp,");
  EXPECT_EQ(around_cpp.size(), 4u) << r.out;
  r = server_->Cli({"fit", "--calibrate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double as_cpp = CalibrationFactor(r.out, "H100-SXM5-80GB/lstm/train");
  ASSERT_GT(as_cpp, 0) << r.out;

  // The same runs without the column are a Python loop's: the model's answer
  // for them is slower, so the runs correct it by less.
  TempDir other_dir;
  ServerProcess other(other_dir.File("perfcast.db"));
  ASSERT_TRUE(other.started());
  r = other.Cli({"import", std::string(PERFCAST_DATA_DIR) + "/h200-m10-default.sqlite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string python_runs = other_dir.File("python-runs.csv");
  std::ofstream(python_runs) << "gpu,family,params,batch_size,precision,phase,mean_ms\n" << kRows;
  r = other.Cli({"import", python_runs});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = other.Cli({"fit", "--calibrate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double as_python = CalibrationFactor(r.out, "H100-SXM5-80GB/lstm/train");
  ASSERT_GT(as_python, 0) << r.out;
  EXPECT_LT(as_python, as_cpp) << "cpp " << as_cpp << ", python " << as_python;
}

TEST_F(LoopIntegration, UnknownLoopIsAUsageErrorNamingTheChoices) {
  CommandResult r = server_->Cli(Lstm("--node", kNode, "java"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown loop 'java' (expected python or cpp)"), std::string::npos)
      << r.err;
}

TEST_F(LoopIntegration, BatchFileColumnAndSweepKey) {
  const std::string jobs = dir_->File("jobs.csv");
  std::ofstream(jobs) << "family,params,batch_size,loop,node,iterations\n"
                      << "lstm,layers=2;hidden=128,64,cpp," << kNode << ",1\n"
                      << "lstm,layers=2;hidden=128,64,python," << kNode << ",1\n"
                      << "lstm,layers=2;hidden=128,64,java," << kNode << ",1\n";
  CommandResult r = server_->Cli({"predict", "--batch-file", jobs, "-o", "csv"});
  EXPECT_NE(r.exit_code, 0);  // the third row
  EXPECT_NE(r.err.find("java"), std::string::npos) << r.err;

  r = server_->Cli({"predict", "--family", "lstm", "--param", "layers=2", "--param", "hidden=128",
                    "--batch", "64", "--node", kNode, "--iterations", "1", "--sweep",
                    "loop=cpp,python", "-o", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("python"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace perfcast::testing
