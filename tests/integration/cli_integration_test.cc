// The real perfcastd and the real perfcast CLI, end to end over loopback.
#include <sqlite3.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

class CliIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(dir_.File("perfcast.db"));
    ASSERT_TRUE(server_->started());
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << text;
    return path;
  }

  // Number of data lines of a CSV export (header excluded).
  int ExportedRows(const std::vector<std::string>& filters = {}) {
    std::vector<std::string> args = {"export"};
    args.insert(args.end(), filters.begin(), filters.end());
    CommandResult r = server_->Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    return lines.empty() ? 0 : static_cast<int>(lines.size()) - 1;
  }

  static void ExpectOneLineError(const CommandResult& r, const std::string& fragment) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("perfcast: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

constexpr char kGoodCsv[] =
    "node,family,params,batch_size,precision,phase,mean_ms,median_ms,count\n"
    "n1,lstm,layers=2;hidden=128,64,bf16-amp,train,3.5,3.4,20\n"
    "n1,lstm,layers=4;hidden=128,64,bf16-amp,train,6.5,6.4,20\n"
    "n1,transformer,layers=2,8,fp32,inference,1.25,1.2,50\n";

TEST_F(CliIntegrationTest, RegistersNodesFromCatalogAndSpecFile) {
  CommandResult r = server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB",
                                  "--count", "8", "--label", "zone=a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("H100-SXM5-80GB"), std::string::npos);

  ExpectOneLineError(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "L4-24GB"}),
                     "ALREADY_EXISTS");
  ExpectOneLineError(server_->Cli({"nodes", "register", "--name", "n2", "--gpu", "H900"}),
                     "NOT_FOUND");

  const std::string spec = WriteFile(
      "mi300.json",
      R"({"name": "mi1", "count": 8, "gpu": {"model": "MI300X", "memory_gib": 192, "memory_bandwidth_gbs": 5300, "fp32_tflops": 163.4, "bf16_tflops": 1307}})");
  r = server_->Cli({"nodes", "register", "--spec", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectOneLineError(server_->Cli({"nodes", "register", "--spec", WriteFile("bad.json", "{nope")}),
                     "malformed JSON");

  r = server_->Cli({"--output", "json", "nodes", "get", "mi1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"bf16_tflops\":1307"), std::string::npos) << r.out;
  ExpectOneLineError(server_->Cli({"nodes", "get", "ghost"}), "NOT_FOUND");

  r = server_->Cli({"nodes", "list", "--label", "zone=a"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("n1"), std::string::npos);
  EXPECT_EQ(r.out.find("mi1"), std::string::npos);
}

// A node registered with its Python probe's per-op cost (what the agent
// stores for a node it ran on) keeps it; the Python loop is priced with it.
TEST_F(CliIntegrationTest, RegistersANodeWithItsPythonProbe) {
  CommandResult r = server_->Cli({"nodes", "register", "--name", "probed", "--gpu",
                                  "H200-SXM-141GB", "--count", "2", "--python-op-us", "7.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server_->Cli({"--output", "json", "nodes", "get", "probed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"python_op_us\":7.5"), std::string::npos) << r.out;
  r = server_->Cli({"nodes", "register", "--name", "bad", "--gpu", "H200-SXM-141GB",
                    "--python-op-us", "-1"});
  EXPECT_NE(r.exit_code, 0);
}

TEST_F(CliIntegrationTest, ImportStoresValidRecordsAndReportsRejectedOnes) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  const std::string csv = WriteFile(
      "mixed.csv", std::string(kGoodCsv) +
                       "n1,lstm,layers=3,64,fp32,train,-1,,\n"     // negative time
                       "n1,lstm,layers=3,64,fp32,train,nan,,\n"    // NaN time
                       "n1,lstm,layers=3\n"                        // truncated line
                       "n1,gpt9,,8,fp32,train,1.0,,\n"             // unknown family
                       "ghost,lstm,,8,fp32,train,1.0,,\n");        // unknown node
  CommandResult r = server_->Cli({"import", csv});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  for (const char* where : {"mixed.csv:5:", "mixed.csv:6:", "mixed.csv:7:", "mixed.csv:8:",
                            "mixed.csv:9:"}) {
    EXPECT_NE(r.err.find(where), std::string::npos) << where << "\n" << r.err;
  }
  EXPECT_EQ(ExportedRows(), 3);

  // The same file again stores nothing new.
  r = server_->Cli({"--output", "json", "import", csv});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("\"accepted\":0,\"duplicates\":3"), std::string::npos) << r.out;
  EXPECT_EQ(ExportedRows(), 3);
}

// Every stored row exports, a time before 1970 included; the method version
// and run conditions survive import, export and re-import, and export can
// select one method.
TEST_F(CliIntegrationTest, ExportReturnsEveryStoredRowWithItsMethodAndConditions) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  const std::string csv = WriteFile(
      "methods.csv",
      "node,family,params,batch_size,mean_ms,measured_at_us,method_version,dispatch_ops_per_s,"
      "board_power_w\n"
      "n1,lstm,layers=2,64,3.5,-5000000,1,,\n"
      "n1,lstm,layers=3,64,4.5,1700000000000000,2,150000.5,612.25\n");
  CommandResult r = server_->Cli({"import", csv});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ExportedRows(), 2);
  EXPECT_EQ(ExportedRows({"--method-version", "2"}), 1);
  r = server_->Cli({"export", "--format", "jsonl", "--method-version", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"dispatch_ops_per_s\":150000.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"board_power_w\":612.25"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"method_version\":2"), std::string::npos) << r.out;
  // The export imports back as the same rows.
  r = server_->Cli({"export", "--out", dir_.File("export.csv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server_->Cli({"--output", "json", "import", dir_.File("export.csv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"accepted\":0,\"duplicates\":2"), std::string::npos) << r.out;
}

// perfcast compare reads two runs' files without a server.
TEST_F(CliIntegrationTest, CompareReportsTheDifferencesOfTwoRuns) {
  // Family, params, batch and median step of each configuration, as CSV rows.
  auto run = [&](const std::string& name, const std::vector<std::string>& rows) {
    std::string text = "gpu,family,params,batch_size,mean_ms,median_ms\n";
    for (const std::string& row : rows) absl::StrAppend(&text, "H200-SXM-141GB,", row, "\n");
    return WriteFile(name, text);
  };
  const std::string first = run("first.csv", {"lstm,layers=2,64,10,10", "lstm,layers=3,64,20,20",
                                              "cnn,layers=2,64,5,5", "cnn,layers=2,8,0.5,0.5"});
  const std::string second =
      run("second.csv", {"lstm,layers=2,64,10.2,10.2", "lstm,layers=3,64,19,19",
                         "cnn,layers=2,64,5.5,5.5", "cnn,layers=2,8,0.9,0.9"});
  CommandResult r = server_->Cli({"--output", "json", "compare", first, second, "--min-ms", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"below_min\":1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"group\":\"all\",\"median_abs_pct\":5"), std::string::npos) << r.out;
  r = server_->Cli({"compare", first, second});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("lstm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MEDIAN |DIFF|"), std::string::npos) << r.out;
  ExpectOneLineError(server_->Cli({"compare", first, run("other.csv", {"cnn,layers=9,64,5,5"})}),
                     "no configuration is in both runs");
}

TEST_F(CliIntegrationTest, FileLevelErrorsStoreNothing) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  const std::string good = WriteFile("good.csv", kGoodCsv);
  const std::string bad_header = WriteFile("header.csv", "node,family,size\nn1,lstm,3\n");
  // The good file streams first; the bad header must roll it back.
  ExpectOneLineError(server_->Cli({"import", good, bad_header}), "unknown column 'size'");
  EXPECT_EQ(ExportedRows(), 0);

  ExpectOneLineError(server_->Cli({"import", WriteFile("missing.csv", "node,family\nn1,lstm\n")}),
                     "required column");
  ExpectOneLineError(server_->Cli({"import", WriteFile("fake.sqlite", std::string(200, 'x'))}),
                     "DATA_LOSS");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.File("foreign.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  ExpectOneLineError(server_->Cli({"import", dir_.File("foreign.sqlite")}), "FAILED_PRECONDITION");
  ExpectOneLineError(server_->Cli({"import", WriteFile("x.txt", "hello")}), "--format");
  EXPECT_EQ(ExportedRows(), 0);
}

TEST_F(CliIntegrationTest, ExportRoundTripsThroughCsvAndJsonLines) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  ASSERT_EQ(server_->Cli({"import", WriteFile("good.csv", kGoodCsv)}).exit_code, 0);
  const std::string csv_out = dir_.File("out.csv");
  const std::string jsonl_out = dir_.File("out.jsonl");
  ASSERT_EQ(server_->Cli({"export", "--out", csv_out}).exit_code, 0);
  ASSERT_EQ(server_->Cli({"export", "--format", "jsonl", "--out", jsonl_out}).exit_code, 0);

  // A second server takes both exports: the first stores 3, the second is all duplicates.
  ServerProcess other(dir_.File("other.db"));
  ASSERT_TRUE(other.started());
  ASSERT_EQ(other.Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  CommandResult r = other.Cli({"--output", "json", "import", csv_out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"accepted\":3"), std::string::npos) << r.out;
  r = other.Cli({"--output", "json", "import", jsonl_out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"accepted\":0,\"duplicates\":3"), std::string::npos) << r.out;
  // The filters reach the store.
  EXPECT_EQ(ExportedRows({"--family", "lstm"}), 2);
  EXPECT_EQ(ExportedRows({"--phase", "inference"}), 1);
}

TEST_F(CliIntegrationTest, ImportsAnAgentStoreWithItsNode) {
  const std::string agent_file = dir_.File("agent.sqlite");
  {
    auto store = db::OpenSqliteAgentStore(agent_file);
    ASSERT_TRUE(store.ok());
    auto tx = (*store)->BeginImport();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE((*tx)->UpsertNode(SampleNode("gpu-node-7")).ok());
    for (int i = 0; i < 40; ++i) ASSERT_TRUE((*tx)->Add(i, SampleProfile("gpu-node-7", i)).ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  CommandResult r = server_->Cli({"--output", "json", "import", agent_file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"accepted\":40"), std::string::npos) << r.out;
  r = server_->Cli({"nodes", "get", "gpu-node-7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("agent"), std::string::npos) << r.out;
  EXPECT_EQ(ExportedRows({"--node", "gpu-node-7"}), 40);
}

TEST_F(CliIntegrationTest, RemovingANodeWithProfilesNeedsPurge) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  ASSERT_EQ(server_->Cli({"import", WriteFile("good.csv", kGoodCsv)}).exit_code, 0);
  ExpectOneLineError(server_->Cli({"nodes", "remove", "n1"}), "FAILED_PRECONDITION");
  EXPECT_EQ(ExportedRows(), 3);
  ASSERT_EQ(server_->Cli({"nodes", "remove", "n1", "--purge-profiles"}).exit_code, 0);
  EXPECT_EQ(ExportedRows(), 0);
  ExpectOneLineError(server_->Cli({"nodes", "remove", "n1"}), "NOT_FOUND");
}

TEST_F(CliIntegrationTest, UsageErrorsAndUnreachableServer) {
  CommandResult r = server_->Cli({"nodes", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunCommand({PERFCAST_CLI_PATH, "--server", "127.0.0.1:1", "--timeout", "2", "nodes", "list"});
  ExpectOneLineError(r, "UNAVAILABLE");
  r = RunCommand({PERFCAST_CLI_PATH, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("import"), std::string::npos);
}

TEST_F(CliIntegrationTest, ServerShutsDownCleanlyAndKeepsData) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);
  ASSERT_EQ(server_->Cli({"import", WriteFile("good.csv", kGoodCsv)}).exit_code, 0);
  int status = server_->Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  server_ = std::make_unique<ServerProcess>(dir_.File("perfcast.db"));
  ASSERT_TRUE(server_->started());
  EXPECT_EQ(ExportedRows(), 3);
}

}  // namespace
}  // namespace perfcast::testing
