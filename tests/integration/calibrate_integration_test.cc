// Issue 30, item 4, as a new user meets it: `perfcast import myruns.csv`,
// then `perfcast fit`, then `perfcast predict`, through the real perfcastd and
// CLI. The agent's H200 profiles (data/) are the fit; the user's five
// measured ResNet training runs on an H100, a GPU the agent never ran on,
// are a CSV of their own.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

constexpr char kGpu[] = "H100-SXM5-80GB";

// The agent's H100 measurements (data/h100-m10-architectures.sqlite) as a
// user would write their own runs down: five of the family's sizes.
constexpr char kMyRuns[] =
    "gpu,family,params,batch_size,precision,phase,mean_ms\n"
    "H100-SXM5-80GB,resnet_imagenet,depth=18;image=224,256,bf16-amp,train,49.80\n"
    "H100-SXM5-80GB,resnet_imagenet,depth=18;image=224,64,fp32,train,26.86\n"
    "H100-SXM5-80GB,resnet_imagenet,depth=50;image=224,64,bf16-amp,train,32.98\n"
    "H100-SXM5-80GB,resnet_imagenet,depth=101;image=224,256,bf16-amp,train,172.59\n"
    "H100-SXM5-80GB,resnet_imagenet,depth=101;image=224,64,fp32,train,137.73\n";
// A run of another size the user did not give: ResNet-50 at batch 256.
constexpr double kHeldOutMs = 118.05;

struct Answer {
  double ms = -1, lo = -1, hi = -1;
  std::string method;
};

Answer Parse(const std::string& out) {
  Answer a;
  std::smatch m;
  if (std::regex_search(out, m,
                        std::regex(R"(: ([0-9.]+) ms per iteration \(([0-9.]+) \.\. ([0-9.]+)\), )"
                                   R"(level [0-9], ([a-z0-9+-]+),)"))) {
    a.ms = std::stod(m[1]);
    a.lo = std::stod(m[2]);
    a.hi = std::stod(m[3]);
    a.method = m[4];
  }
  return a;
}

TEST(CalibrateIntegration, ImportedRunsAreUsedAndCalibrateTheirGpuAndFamily) {
  TempDir dir;
  ServerProcess server(dir.File("perfcast.db"));
  ASSERT_TRUE(server.started());
  const std::string data = PERFCAST_DATA_DIR;
  CommandResult r = server.Cli({"import", data + "/h200-m10-default.sqlite",
                                data + "/h200-m12-architectures.sqlite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server.Cli({"fit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> predict = {
      "predict", "--torchvision", "resnet50", "--image", "224", "--batch", "256",
      "--precision", "bf16-amp", "--gpu", kGpu, "--iterations", "100"};
  r = server.Cli(predict);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Answer before = Parse(r.out);
  ASSERT_GT(before.ms, 0) << r.out;
  EXPECT_EQ(before.method.find("calibrated"), std::string::npos) << r.out;

  const std::string runs = dir.File("myruns.csv");
  std::ofstream(runs) << kMyRuns;
  r = server.Cli({"import", runs});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // The imported rows are used, not silently dropped beside the agent's
  // newer method, and the fit says so.
  r = server.Cli({"fit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: 5 imported profiles (not measured by an agent) used"),
            std::string::npos)
      << r.out;
  r = server.Cli({"fit", "--exclude-imported"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("5 imported profiles (not measured by an agent) left out"),
            std::string::npos)
      << r.out;

  r = server.Cli({"fit", "--calibrate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: calibrated H100-SXM5-80GB/resnet_imagenet/train on 5 measured runs"),
            std::string::npos)
      << r.out;
  r = server.Cli(predict);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Answer after = Parse(r.out);
  ASSERT_GT(after.ms, 0) << r.out;
  std::printf("ResNet-50 b256 bf16 on the H100, measured %.2f ms: %.2f (%.2f .. %.2f) -> "
              "%.2f (%.2f .. %.2f)\n",
              kHeldOutMs, before.ms, before.lo, before.hi, after.ms, after.lo, after.hi);
  EXPECT_EQ(after.method, "two-level+calibrated") << r.out;
  EXPECT_LT(std::abs(after.ms - kHeldOutMs), std::abs(before.ms - kHeldOutMs)) << r.out;
  EXPECT_LT(after.hi / after.lo, before.hi / before.lo) << r.out;
  EXPECT_LE(after.lo, kHeldOutMs) << r.out;
  EXPECT_GE(after.hi, kHeldOutMs) << r.out;

  // Another GPU and another family keep the model's own answer.
  r = server.Cli({"predict", "--torchvision", "resnet50", "--image", "224", "--batch", "256",
                  "--precision", "bf16-amp", "--gpu", "A100-SXM4-80GB", "--iterations", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Parse(r.out).method.find("calibrated"), std::string::npos) << r.out;

  // Nothing imported to calibrate on: the fit says so.
  r = server.Cli({"fit", "--calibrate", "--exclude-imported"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("calibrate: no imported whole-model profile"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace perfcast::testing
