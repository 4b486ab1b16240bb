// Issue 30, item 2, through the real perfcastd and CLI: the loop is part of
// the workload. A small model's training step in a Python loop is slower
// than the agent's C++ loop, the answer says how it priced the host work
// per operation, and an unknown loop is a usage error naming the choices.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "db/sqlite_store.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "models/profile.h"
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

// A probed run changes the answer's source: the shipped node's hardware and
// host under another name, whose agent run also stored the Python probe, is
// priced with what the probe measured; the shipped node, without one, with
// its CPU score's estimate.
TEST_F(LoopIntegration, AProbedRunPricesThePythonLoopWithItsProbe) {
  const std::string probed_file = dir_->File("probed.sqlite");
  {
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
    node->id = 0;
    node->name = "h200-probed";
    node->measured.python_op_us = 30;
    node->host.python_version = "3.12.3";
    profile->id = 0;
    profile->node_name = node->name;
    profile->conditions.python_op_us = 30;
    profile->content_hash = models::ComputeContentHash(*profile);
    absl::StatusOr<std::unique_ptr<db::Store>> agent = db::OpenSqliteAgentStore(probed_file);
    ASSERT_TRUE(agent.ok()) << agent.status();
    ASSERT_TRUE((*agent)->RegisterNode(*node).ok());
    absl::StatusOr<std::unique_ptr<db::ImportTransaction>> import = (*agent)->BeginImport();
    ASSERT_TRUE(import.ok());
    ASSERT_TRUE((*import)->Add(0, *profile).ok());
    ASSERT_TRUE((*import)->Commit().ok());
  }
  CommandResult imported = server_->Cli({"import", probed_file});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;

  CommandResult scored = server_->Cli(Lstm("--node", kNode, "python"));
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_NE(scored.out.find("us per operation estimated from the CPU score"), std::string::npos)
      << scored.out;
  CommandResult probed = server_->Cli(Lstm("--node", "h200-probed", "python"));
  ASSERT_EQ(probed.exit_code, 0) << probed.err;
  EXPECT_NE(probed.out.find("30.0 us per operation measured by the probe on h200-probed"),
            std::string::npos)
      << probed.out;
  EXPECT_NE(probed.out.find("measured by the agent's Python probe on h200-probed"),
            std::string::npos)
      << probed.out;
  // The probe's cost is above the estimate on this host-bound step.
  EXPECT_GT(Ms(probed.out), Ms(scored.out)) << probed.out << scored.out;
  // The C++ loop has no Python host work to price.
  CommandResult cpp = server_->Cli(Lstm("--node", "h200-probed", "cpp"));
  ASSERT_EQ(cpp.exit_code, 0) << cpp.err;
  EXPECT_EQ(cpp.out.find("probe"), std::string::npos) << cpp.out;
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
