// From a number to a decision, through the real perfcastd and CLI on the
// profiles measured on the H100 and the H200 (data/): recommend, memory fit
// in predict, what-if sweeps, and both HTML reports checked in a real
// headless browser.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/db/test_util.h"
#include "tests/environment_gap.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

class DecideIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess(dir_->File("perfcast.db"));
    ASSERT_TRUE(server_->started());
    const std::string data = PERFCAST_DATA_DIR;
    CommandResult r = server_->Cli({"import", data + "/h100.sqlite", data + "/h200.sqlite"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = server_->Cli({"fit"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = server_->Cli({"nodes", "register", "--name", "l4-box", "--gpu", "L4-24GB", "--count", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }

  static std::vector<std::string> Job(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--family", "transformer", "--param", "layers=6",
                                     "--param", "hidden=512", "--param", "heads=8",
                                     "--batch", "32", "--precision", "bf16-amp",
                                     "--samples", "200000", "--epochs", "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static CommandResult Recommend(std::vector<std::string> extra) {
    std::vector<std::string> args = {"recommend"};
    for (std::string& a : Job(std::move(extra))) args.push_back(std::move(a));
    return server_->Cli(args);
  }

  static TempDir* dir_;
  static ServerProcess* server_;
};
TempDir* DecideIntegrationTest::dir_ = nullptr;
ServerProcess* DecideIntegrationTest::server_ = nullptr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(DecideIntegrationTest, RecommendRanksEveryCatalogGpuAndNode) {
  CommandResult r = Recommend({"--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json answer = nlohmann::json::parse(r.out);
  const nlohmann::json& candidates = answer["candidates"];
  // 15 catalog GPUs, plus the registered nodes (two agents' and l4-box).
  ASSERT_GE(candidates.size(), 18u) << r.out;
  EXPECT_EQ(answer["rank_by"], "cost");
  // ceil(200000 / 32) x 3, an int64 as a JSON number as every -o json prints it.
  EXPECT_EQ(answer["iterations"], 18750);
  EXPECT_TRUE(answer.contains("budget_usd")) << "zero fields are printed too";
  double previous_cost = 0;
  bool saw_node = false, saw_measured_rates = false;
  int without_bf16 = 0;
  for (const nlohmann::json& c : candidates) {
    // GPUs before Ampere have no bf16 path: listed with why, never ranked.
    if (c["reason"].get<std::string>().find("has no bf16") != std::string::npos) {
      EXPECT_FALSE(c.value("recommended", false)) << c.dump();
      ++without_bf16;
      continue;
    }
    ASSERT_TRUE(c.value("recommended", false)) << c.dump();  // no deadline, no budget, fits
    EXPECT_GT(c["job_seconds_high"].get<double>(), c["job_seconds_low"].get<double>());
    if (c.value("priced", false)) {
      EXPECT_GE(c["cost_usd"].get<double>(), previous_cost) << "ranked by cost";
      previous_cost = c["cost_usd"].get<double>();
      EXPECT_FALSE(c["price"]["source"].get<std::string>().empty());
    }
    EXPECT_GT(c["energy_kwh"].get<double>(), 0);
    EXPECT_FALSE(c["power_source"].get<std::string>().empty());
    EXPECT_TRUE(c["memory"].value("fits", false));
    saw_node |= c.value("registered_node", false) && c["target"] == "l4-box";
    saw_measured_rates |= c["rate_source"] == "measured";
  }
  EXPECT_TRUE(saw_node);
  EXPECT_TRUE(saw_measured_rates);
  // P4, P100, V100 (three) and T4.
  EXPECT_EQ(without_bf16, 6);

  // A deadline between the fastest and slowest candidate splits them; each
  // excluded one says why, and the table says how many made it.
  std::vector<double> highs;
  for (const nlohmann::json& c : candidates) {
    if (c.value("predicted", false)) highs.push_back(c["job_seconds_high"].get<double>());
  }
  std::sort(highs.begin(), highs.end());
  const double deadline = highs[highs.size() / 2];
  r = Recommend({"--deadline", std::to_string(deadline), "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int recommended = 0, missed = 0;
  const nlohmann::json split = nlohmann::json::parse(r.out);
  for (const nlohmann::json& c : split["candidates"]) {
    if (c.value("recommended", false)) {
      ++recommended;
      EXPECT_LE(c["job_seconds_high"].get<double>(), deadline);
      EXPECT_TRUE(c.value("meets_deadline", false));
    } else if (c.value("predicted", false)) {
      ++missed;
      EXPECT_EQ(c.value("excluded_by", ""), "deadline") << c.dump();
      EXPECT_NE(c["reason"].get<std::string>().find("misses the deadline"), std::string::npos);
    }
  }
  EXPECT_GT(recommended, 0);
  EXPECT_GT(missed, 0);

  // Two GPUs are data parallelism: each runs half the batch and the
  // gradients are all-reduced, so the job is faster than on one GPU but not
  // twice as fast, and no cheaper.
  r = Recommend({"--gpu-count", "1", "--gpu-count", "2", "--gpu", "L4-24GB", "--catalog-only",
                 "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, nlohmann::json> by_count;
  const nlohmann::json counted = nlohmann::json::parse(r.out);
  for (const nlohmann::json& c : counted["candidates"]) {
    by_count[c["gpu_count"].get<int>()] = c;
  }
  ASSERT_EQ(by_count.size(), 2u) << r.out;
  ASSERT_TRUE(by_count[2].value("recommended", false)) << by_count[2].dump();
  const double one = by_count[1]["job_seconds"].get<double>();
  const double two = by_count[2]["job_seconds"].get<double>();
  EXPECT_LT(two, one);
  EXPECT_GT(two, one / 2);
  EXPECT_GE(by_count[2]["cost_usd"].get<double>(), by_count[1]["cost_usd"].get<double>());
  EXPECT_LT(by_count[2]["memory"]["peak_bytes"].get<double>(),
            by_count[1]["memory"]["peak_bytes"].get<double>());

  // A budget of one cent, the table form with its report.
  const std::string report = dir_->File("recommend.html");
  r = Recommend({"--budget", "0.01", "--gpu-count", "1", "--gpu-count", "2", "--gpu", "L4-24GB",
                 "--gpu", "H100-SXM5-80GB", "--catalog-only", "--report", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("budget: 90th-percentile cost"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no-prediction"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("l4-box"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 of 4 candidates recommended"), std::string::npos) << r.out;
  EXPECT_NE(Slurp(report).find("<svg"), std::string::npos);
  EXPECT_NE(Slurp(report + ".json").find("\"candidates\""), std::string::npos);
}

// The example: Llama-2-7B (its Hugging Face config.json) trained in
// bf16 with AdamW at sequence 2048 is refused on a 24 GB L4 by predict (no
// time), and by recommend on every GPU it does not fit; where it fits (the
// H200) it is answered.
TEST_F(DecideIntegrationTest, MemoryFitRefusesWhatDoesNotFit) {
  const std::string config = std::string(PERFCAST_HF_CONFIGS) + "/llama-2-7b.json";
  const std::vector<std::string> big = {"--hf-config", config,     "--seq-len",   "2048",
                                        "--batch",     "1",        "--precision", "bf16-amp",
                                        "--optimizer", "adamw",    "--iterations", "1000"};
  std::vector<std::string> args = {"predict", "--gpu", "L4-24GB"};
  args.insert(args.end(), big.begin(), big.end());
  CommandResult r = server_->Cli(args);
  EXPECT_EQ(r.exit_code, 3);  // does not fit
  EXPECT_NE(r.err.find("FAILED_PRECONDITION"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not fit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("L4-24GB"), std::string::npos) << r.err;

  args = {"predict", "--gpu", "H200-SXM-141GB", "--output", "json"};
  args.insert(args.end(), big.begin(), big.end());
  r = server_->Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json answered = nlohmann::json::parse(r.out);
  EXPECT_GT(answered["iteration_ms"].get<double>(), 0) << r.out;
  EXPECT_TRUE(answered["memory"].value("fits", false)) << r.out;
  // 6.7e9 parameters: fp32 weights, gradients and AdamW's two moments are
  // 16 bytes each, autocast's bf16 copies 2 more, before any activation.
  EXPECT_GT(answered["memory"]["peak_bytes"].get<double>(), 18 * 6.7e9) << r.out;

  // Small enough workloads say how much memory they need.
  r = server_->Cli({"predict", "--gpu", "L4-24GB", "--family", "lstm", "--batch", "64",
                    "--iterations", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibrated:lstm/train"), std::string::npos) << r.out;

  args = {"recommend", "--output", "json"};
  args.insert(args.end(), big.begin(), big.end());
  r = server_->Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json refused = nlohmann::json::parse(r.out);
  ASSERT_GE(refused["candidates"].size(), 15u);
  // 121 GB of weights, gradients, AdamW states and bf16 copies before
  // activations: only GPUs of 141 GB and more hold it.
  const std::set<std::string> holds_it = {"H200-SXM-141GB", "H200NVL-141GB", "B200-SXM-180GB",
                                          "B100-SXM-180GB", "GB200-186GB",   "MI300X-192GB",
                                          "MI325X-256GB"};
  for (const nlohmann::json& c : refused["candidates"]) {
    if (holds_it.contains(c["gpu_model"].get<std::string>())) {
      EXPECT_TRUE(c.value("recommended", false)) << c.dump();
      continue;
    }
    EXPECT_EQ(c.value("excluded_by", ""), "memory") << c.dump();
    EXPECT_FALSE(c.value("predicted", false));
    EXPECT_NE(c["reason"].get<std::string>().find("does not fit"), std::string::npos);
  }
}

TEST_F(DecideIntegrationTest, SweepPricesTheWholeGrid) {
  CommandResult r = server_->Cli({"predict", "--family", "lstm", "--iterations", "100",
                                  "--sweep", "batch=16,32,64", "--sweep",
                                  "gpu=L4-24GB,H100-SXM5-80GB", "--sweep", "param.layers=2,4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 13) << r.out;  // header + 12
  EXPECT_NE(r.out.find("param.layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PEAK MEMORY"), std::string::npos) << r.out;

  // A swept GPU that is a typo of a catalog name is named before anything is
  // sent (a name like no catalog GPU's may be a registered node's model).
  r = server_->Cli({"predict", "--family", "lstm", "--iterations", "100", "--output", "json",
                    "--sweep", "batch=16,32", "--sweep", "gpu=L4-24GB,L5-24GB"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("L5-24GB"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  // A point the server refuses fails alone: a batch too large for the model.
  r = server_->Cli({"predict", "--family", "lstm", "--iterations", "100", "--output", "json",
                    "--sweep", "batch=16,99999999999", "--sweep", "gpu=L4-24GB,H100-SXM5-80GB"});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // two of four points failed
  std::istringstream lines(r.out);
  std::string line;
  int ok = 0, failed = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json point = nlohmann::json::parse(line);
    ASSERT_TRUE(point.contains("sweep")) << line;
    const nlohmann::json& prediction = point["result"]["prediction"];
    if (prediction.is_null()) {
      ++failed;
      continue;
    }
    ++ok;
    EXPECT_EQ(prediction["iterations"], 100) << line;  // a number, as predict -o json
    EXPECT_EQ(point["result"]["code"], 0) << line;
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(failed, 2);
}

// Issue 33 item 4: recommend searches every valid layout of each GPU count,
// drops what does not fit, and names the layout of each row; its best per
// count is the best of every layout it priced.
TEST_F(DecideIntegrationTest, RecommendSearchesLayoutsOverGpuCounts) {
  CommandResult r = Recommend({"--gpu-count", "1-8", "--gpu", "H100-SXM5-80GB", "--catalog-only",
                               "--rank-by", "time", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json best = nlohmann::json::parse(r.out);
  std::map<int, nlohmann::json> by_count;
  for (const nlohmann::json& c : best["candidates"]) {
    EXPECT_TRUE(by_count.emplace(c["gpu_count"].get<int>(), c).second) << c.dump();
  }
  ASSERT_EQ(by_count.size(), 8u) << r.out;
  // Six layers, 8 heads, a batch of 32: no layout runs on 7 GPUs.
  EXPECT_EQ(by_count[7].value("excluded_by", ""), "no-prediction") << by_count[7].dump();
  EXPECT_NE(by_count[7].value("reason", "").find("divide the global batch size 32"),
            std::string::npos)
      << by_count[7].dump();
  for (int count : {1, 2, 3, 4, 5, 6, 8}) {
    const nlohmann::json& c = by_count[count];
    ASSERT_TRUE(c.value("recommended", false)) << c.dump();
    const nlohmann::json& layout = c["layout"];
    EXPECT_EQ(layout.value("data_parallel", 1) * layout.value("tensor_parallel", 1) *
                  layout.value("pipeline_parallel", 1),
              count)
        << c.dump();
    EXPECT_TRUE(absl::StartsWith(c.value("layout_name", ""), "dp")) << c.dump();
  }
  // Three GPUs are pipeline stages: 8 heads do not split three ways.
  EXPECT_EQ(by_count[3]["layout"].value("pipeline_parallel", 1), 3) << by_count[3].dump();

  // Every layout: each count's best is the first of its layouts, and none
  // of those is faster.
  r = Recommend({"--gpu-count", "1-8", "--gpu", "H100-SXM5-80GB", "--catalog-only",
                 "--rank-by", "time", "--all-layouts", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json all = nlohmann::json::parse(r.out);
  std::map<int, int> layouts_of;
  std::set<std::string> names;
  for (const nlohmann::json& c : all["candidates"]) {
    const int count = c["gpu_count"].get<int>();
    ++layouts_of[count];
    if (!c.value("predicted", false)) continue;
    EXPECT_TRUE(names.insert(absl::StrCat(count, c.value("layout_name", ""))).second)
        << "twice: " << c.dump();
    EXPECT_GE(c["job_seconds"].get<double>(), by_count[count]["job_seconds"].get<double>())
        << c.dump();
  }
  EXPECT_GT(all["candidates"].size(), 50u);
  EXPECT_GT(layouts_of[8], layouts_of[1]);

  // The table: one row per GPU model, its layout named; --top 3 its three best.
  r = Recommend({"--gpu-count", "1-8", "--gpu", "H100-SXM5-80GB", "--gpu", "L4-24GB",
                 "--catalog-only", "--rank-by", "time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows_of = [](const std::string& out, const std::string& gpu) {
    int rows = 0;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      rows += absl::StrContains(line, gpu + " ") && absl::StrContains(line, " dp");
    }
    return rows;
  };
  EXPECT_EQ(rows_of(r.out, "H100-SXM5-80GB"), 1) << r.out;
  EXPECT_EQ(rows_of(r.out, "L4-24GB"), 1) << r.out;
  EXPECT_NE(r.out.find("LAYOUT"), std::string::npos) << r.out;
  r = Recommend({"--gpu-count", "1,2,4,8", "--gpu", "H100-SXM5-80GB", "--catalog-only",
                 "--top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows_of(r.out, "H100-SXM5-80GB"), 3) << r.out;

  // Bad counts: one line, INVALID_ARGUMENT, exit 1.
  for (const char* bad : {"0", "1-0", "eight", "1-2000"}) {
    r = Recommend({"--gpu-count", bad});
    EXPECT_EQ(r.exit_code, 1) << bad << r.out << r.err;
    EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << bad << r.err;
    EXPECT_NE(r.err.find("--gpu-count"), std::string::npos) << bad << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << bad << r.err;
  }
}

TEST_F(DecideIntegrationTest, BadRecommendationsGetClearErrors) {
  auto expect = [](const CommandResult& r, int code, const std::string& text) {
    EXPECT_EQ(r.exit_code, code) << r.out << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  };
  expect(Recommend({"--deadline", "soon"}), 2, "--deadline 'soon'");
  expect(Recommend({"--gpu", "NoSuchGPU"}), 1, "NOT_FOUND");
  expect(Recommend({"--node", "ghost"}), 1, "NOT_FOUND");
  expect(Recommend({"--gpu-count", "0"}), 1, "INVALID_ARGUMENT");
  expect(Recommend({"--catalog-only", "--nodes-only"}), 2, "exclude each other");
  expect(server_->Cli({"recommend", "--family", "lstm", "--batch", "8"}), 1, "INVALID_ARGUMENT");
  const std::string prices = dir_->File("prices.csv");
  std::ofstream(prices) << "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source\n"
                           "L4-24GB,free,a,b,2026-01,list,x\n";
  expect(Recommend({"--prices", prices}), 1, "prices.csv:2: usd_per_gpu_hour 'free'");
  std::ofstream(prices) << "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source\n"
                           "L4-24GB,0.10,Acme,reserved,2026-11-01,contract,our contract\n";
  CommandResult r = Recommend({"--prices", prices, "--gpu", "L4-24GB", "--catalog-only",
                               "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json c = nlohmann::json::parse(r.out)["candidates"][0];
  EXPECT_EQ(c["price"]["kind"], "contract");
  EXPECT_DOUBLE_EQ(c["price"]["usd_per_gpu_hour"].get<double>(), 0.10);
}

// Both reports of a real run, rendered by headless Chromium: every chart
// present and drawn, the page not blank (tests/client/check_report_in_browser.py).
TEST_F(DecideIntegrationTest, ReportsRenderInABrowser) {
  const std::string evaluation = dir_->File("evaluation.html");
  CommandResult r = server_->Cli({"evaluate", "--split", "gpu", "--report", evaluation});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = Slurp(evaluation);
  EXPECT_EQ(html.find("\"points\""), std::string::npos);  // the data is beside the page
  EXPECT_NE(Slurp(evaluation + ".json").find("\"points\""), std::string::npos);
  const std::string recommendation = dir_->File("recommendation.html");
  r = Recommend({"--deadline", "2h", "--report", recommendation});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = RunCommand({"/usr/bin/env", "python3", PERFCAST_BROWSER_CHECK, dir_->File("shots"),
                  evaluation + ":8", recommendation + ":1"});
  if (r.exit_code == 77) SKIP_FOR_ENVIRONMENT_GAP() << "no chromium: " << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// Issue 29 item 6: each recommend row says how far its GPU is from the
// GPUs the model learned from (here the H100 and H200, both hopper), as
// predict's distance: line does.
TEST_F(DecideIntegrationTest, RecommendRowsSayHowFarEachGpuIs) {
  CommandResult r = Recommend({"--gpu", "H100-SXM5-80GB", "--gpu", "L4-24GB", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json answer = nlohmann::json::parse(r.out);
  bool saw_h100 = false, saw_l4 = false;
  for (const nlohmann::json& c : answer["candidates"]) {
    if (!c.value("predicted", false)) continue;
    const nlohmann::json& distance = c["distance"];
    if (c["gpu_model"] == "H100-SXM5-80GB") {
      saw_h100 = true;
      EXPECT_EQ(distance["architecture_seen"], "seen") << c.dump();
    } else if (c["gpu_model"] == "L4-24GB") {
      saw_l4 = true;
      EXPECT_EQ(distance["architecture"], "ada") << c.dump();
      EXPECT_EQ(distance["architecture_seen"], "new") << c.dump();
      EXPECT_NE(distance["summary"].get<std::string>().find("new architecture (ada)"),
                std::string::npos)
          << c.dump();
    }
  }
  EXPECT_TRUE(saw_h100 && saw_l4) << r.out;
  r = Recommend({"--gpu", "H100-SXM5-80GB", "--gpu", "L4-24GB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("DISTANCE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new: architecture ada"), std::string::npos) << r.out;
}

// Issue 31: recommend reads at a glance. Nodes of one GPU model are one row
// (their median and spread), each row in one unit of time with the chart;
// predict and its sweeps say what the job costs, and old prices are named.
TEST_F(DecideIntegrationTest, RecommendShowsARowPerGpuModelWithItsCost) {
  for (const char* name : {"h200-a", "h200-b", "h200-c"}) {
    ASSERT_EQ(server_->Cli({"nodes", "register", "--name", name, "--gpu", "H200"}).exit_code, 0);
  }
  const std::string report = dir_->File("glance.html");
  CommandResult r = Recommend({"--gpu", "H200-SXM-141GB", "--gpu", "L4-24GB", "--report", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> h200_rows;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (absl::StrContains(line, "H200-SXM-141GB ")) h200_rows.emplace_back(line);
  }
  ASSERT_EQ(h200_rows.size(), 1u) << r.out;
  // The agent's node and the three registered from the catalog.
  EXPECT_NE(h200_rows[0].find("4 nodes (median: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: prices older than six months"), std::string::npos) << r.out;
  // One unit for the column and the chart's axis.
  const size_t column = r.out.find("JOB TIME ");
  ASSERT_NE(column, std::string::npos) << r.out;
  const std::string unit = r.out.substr(column + 9, r.out.find(' ', column + 9) - column - 9);
  EXPECT_NE(Slurp(report).find("predicted job time, " + unit + " (log)"), std::string::npos)
      << unit;
  EXPECT_NE(Slurp(report).find("job time, " + unit + " (10th..90th)"), std::string::npos) << unit;
  r = Recommend({"--gpu", "H200-SXM-141GB", "--per-node"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"h200-a", "h200-b", "h200-c"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  }

  r = server_->Cli({"predict", "--gpu", "H200", "--family", "lstm", "--batch", "64",
                    "--iterations", "1000", "--data-parallel", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cost: $"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x 2 GPUs"), std::string::npos) << r.out;
  r = server_->Cli({"predict", "--gpu", "H200", "--family", "lstm", "--batch", "64",
                    "--iterations", "1000", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["cost"]["usd"].get<double>(), 0) << r.out;

  // Sweeps over torchvision models and GPU counts, with a cost per point.
  r = server_->Cli({"predict", "--gpu", "H200", "--batch", "64", "--iterations", "100",
                    "--sweep", "torchvision=resnet18,resnet50", "--sweep", "gpu-count=1,2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("COST USD"), std::string::npos) << r.out;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), 5u) << r.out;
  r = server_->Cli({"predict", "--gpu", "H200", "--batch", "64", "--iterations", "100",
                    "--torchvision", "resnet18", "--sweep", "tensor-parallel=0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace perfcast::testing
