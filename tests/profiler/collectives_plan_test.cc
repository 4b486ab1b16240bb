#include "profiler/collectives_plan.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "profiler/launcher.h"

namespace perfcast::profiler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MessageSizes, RangesListsAndSuffixes) {
  EXPECT_THAT(*ParseMessageSizes("4K:1M"),
              ElementsAre(4096, 16384, 65536, 262144, 1048576));
  EXPECT_THAT(*ParseMessageSizes("1M"), ElementsAre(1 << 20));
  EXPECT_THAT(*ParseMessageSizes("64k, 2G,4"), ElementsAre(65536, int64_t{2} << 30, 4));
  EXPECT_EQ(ParseMessageSizes("4K:1G")->size(), 10u);
  for (const char* bad : {"", "1M:4K", "3", "1T", "x", "4K:", "1:2:3", "-4K", "65G"}) {
    EXPECT_EQ(ParseMessageSizes(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MessageSizes, SpecsAreDescribableAllReduces) {
  const std::vector<models::WorkloadSpec> specs = AllReduceSpecs({4096, 1 << 20}, 8);
  ASSERT_EQ(specs.size(), 2u);
  for (const models::WorkloadSpec& spec : specs) {
    absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->operations.at(0).op_class, models::OpClass::kCollective);
    EXPECT_EQ(d->spec.params.at("gpus"), 8);
  }
  EXPECT_THAT(specs[1].Key(), HasSubstr("op/allreduce{bytes=1048576,gpus=8}/b1/fp32/inference"));
}

TEST(MessageSizes, CallsPerBlock) {
  EXPECT_EQ(CallsPerBlock(4096), 200);
  EXPECT_EQ(CallsPerBlock(int64_t{1} << 30), 5);
  EXPECT_EQ(CallsPerBlock(int64_t{1} << 26), 16);
}

TEST(Launcher, WorkerCommandLinesAndEnvironment) {
  EXPECT_THAT(WorkerArgs({"collectives", "--gpus", "4"}, {2, 4, 29999}),
              ElementsAre("collectives", "--gpus", "4", "--rank", "2", "--world", "4", "--port",
                          "29999"));
  EXPECT_THAT(WorkerEnvironment(), ElementsAre(std::pair<std::string, std::string>(
                                       "NCCL_NVLS_ENABLE", "0")));
  EXPECT_EQ(*GpuOfRank("", 3), "3");
  EXPECT_EQ(*GpuOfRank("4,5,6", 1), "5");
  EXPECT_EQ(GpuOfRank("4,5", 2).status().code(), absl::StatusCode::kOutOfRange);
  absl::StatusOr<int> port = FreeLocalPort();
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
}

TEST(Launcher, RunsEveryRankAndReportsTheFailingOne) {
  // /bin/sh -c 'exit $((rank == 1))' as a stand-in worker: its arguments are
  // the script, then "--rank R --world W --port P" as $0, $1, ...
  const std::string script = "[ \"$1\" != 1 ]";
  EXPECT_TRUE(LaunchWorkers("/bin/sh", {"-c", "[ \"$NCCL_NVLS_ENABLE\" = 0 ]"}, 3, false).ok());
  absl::Status failed = LaunchWorkers("/bin/sh", {"-c", script}, 3, false);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(failed.message()), HasSubstr("worker 1 of 3"));
  // One GPU each: a rank beyond CUDA_VISIBLE_DEVICES cannot start.
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  EXPECT_EQ(LaunchWorkers("/bin/sh", {"-c", "true"}, 2, true).code(),
            absl::StatusCode::kOutOfRange);
  unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace perfcast::profiler
