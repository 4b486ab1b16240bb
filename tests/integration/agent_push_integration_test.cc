// perfcast-agent measures this machine's CPU with the quick plan and pushes
// its store to a real perfcastd; the node and its profiles arrive there.
#include <string>

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

}  // namespace
}  // namespace perfcast::testing
