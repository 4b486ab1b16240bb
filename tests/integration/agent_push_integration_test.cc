// perfcast-agent measures this machine's CPU with the quick plan and pushes
// its store to a real perfcastd; the node and its profiles arrive there.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

TEST(AgentPushIntegrationTest, QuickPlanReachesTheServer) {
  TempDir dir;
  ServerProcess server(dir.File("perfcast.db"));
  ASSERT_TRUE(server.started());
  CommandResult run = RunCommand({PERFCAST_AGENT_PATH, "run", "--plan", "quick", "--device", "cpu",
                                  "--threads", "1", "--name", "ci-cpu", "--max-minutes", "0.5",
                                  "--quiet", "--out", dir.File("agent.sqlite"), "--server",
                                  server.address()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("pushed to"), std::string::npos) << run.err;

  CommandResult node = server.Cli({"nodes", "get", "ci-cpu"});
  ASSERT_EQ(node.exit_code, 0) << node.err;
  EXPECT_NE(node.out.find("agent"), std::string::npos) << node.out;
  CommandResult exported = server.Cli({"export", "--node", "ci-cpu"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::vector<std::string> lines = absl::StrSplit(exported.out, '\n', absl::SkipEmpty());
  EXPECT_GT(lines.size(), 5u);

  // Pushing the same store again adds nothing.
  CommandResult again = server.Cli({"--output", "json", "import", dir.File("agent.sqlite")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("\"accepted\":0"), std::string::npos) << again.out;
}

TEST(AgentPushIntegrationTest, PushCarriesTheToken) {
  TempDir dir;
  {
    std::ofstream(dir.File("tokens")) << "agent-push-token-77\n";
    // One tiny GEMM: the push, not the measurement, is under test.
    std::ofstream(dir.File("plan.json"))
        << R"({"timing": {"warmup": 1, "repeats": 1, "target_repeat_ms": 5},)"
        << R"( "grids": [{"family": "gemm", "params": {"m": 64, "n": 64, "k": 64, "batch": 1}}]})";
  }
  ServerProcess server(dir.File("perfcast.db"), {"--token_file=" + dir.File("tokens")});
  ASSERT_TRUE(server.started());
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {PERFCAST_AGENT_PATH, "run", "--plan-file", dir.File("plan.json"),
                                     "--device", "cpu", "--threads", "1", "--name", "ci-token",
                                     "--quiet", "--out", dir.File("agent.sqlite"), "--server",
                                     server.address()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv);
  };

  CommandResult refused = run({});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("UNAUTHENTICATED"), std::string::npos) << refused.err;
  CommandResult nodes = server.Cli({"--token", "agent-push-token-77", "nodes", "list"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("ci-token"), std::string::npos) << nodes.out;

  CommandResult pushed = run({"--token", "agent-push-token-77"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_NE(pushed.err.find("pushed to"), std::string::npos) << pushed.err;
  CommandResult node = server.Cli({"--token", "agent-push-token-77", "nodes", "get", "ci-token"});
  EXPECT_EQ(node.exit_code, 0) << node.err;
}

// The agent follows the CLI's conventions (issue 14): --version, unknown
// commands named, exit codes 0/1/2, and --push to $PERFCAST_SERVER.
TEST(AgentPushIntegrationTest, FollowsTheCliConventions) {
  CommandResult version = RunCommand({PERFCAST_AGENT_PATH, "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("perfcast-agent 0."), std::string::npos) << version.out;
  CommandResult unknown = RunCommand({PERFCAST_AGENT_PATH, "rn"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'rn'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("run"), std::string::npos) << unknown.err;
  EXPECT_EQ(RunCommand({PERFCAST_AGENT_PATH, "run", "--bogus"}).exit_code, 2);
  TempDir dir;
  EXPECT_EQ(RunCommand({PERFCAST_AGENT_PATH, "run", "--plan", "nope", "--out",
                        dir.File("never.sqlite")})
                .exit_code,
            1);

  std::ofstream(dir.File("plan.json"))
      << R"({"timing": {"warmup": 1, "repeats": 1, "target_repeat_ms": 5},)"
      << R"( "grids": [{"family": "gemm", "params": {"m": 64, "n": 64, "k": 64, "batch": 1}}]})";
  ServerProcess server(dir.File("perfcast.db"));
  ASSERT_TRUE(server.started());
  CommandResult pushed = RunCommand(
      {"/usr/bin/env", "PERFCAST_SERVER=" + server.address(), PERFCAST_AGENT_PATH, "run",
       "--plan-file", dir.File("plan.json"), "--device", "cpu", "--threads", "1", "--name",
       "ci-env", "--quiet", "--out", dir.File("agent.sqlite"), "--push"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_NE(pushed.err.find("pushed to " + server.address()), std::string::npos) << pushed.err;
  EXPECT_EQ(server.Cli({"nodes", "get", "ci-env"}).exit_code, 0);
}

}  // namespace
}  // namespace perfcast::testing
