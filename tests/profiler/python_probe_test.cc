// The Python probe without Python's torch: its output parsed, and the
// process that runs it against fake interpreters (shell scripts standing in
// for a python with torch, one without, one that hangs) and the machine's
// own python3.
#include "profiler/python_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/environment_gap.h"

namespace perfcast::profiler {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// An executable shell script in the test's temporary directory, removed at
// the end of the test.
class FakePython {
 public:
  FakePython(const std::string& name, const std::string& body)
      : path_(absl::StrCat(::testing::TempDir(), "/", name, "_", getpid())) {
    std::ofstream(path_) << "#!/bin/sh\n" << body << "\n";
    chmod(path_.c_str(), 0755);
  }
  ~FakePython() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr char kOutput[] =
    R"({"python_version": "3.12.3", "torch_version": "2.11.0+cu130", "device": "cuda", )"
    R"("python_op_us": 8.25, "torchscript_op_us": 5.5, "ops": 500, "rounds": 9})";

TEST(ParsePythonProbeOutputTest, ReadsTheLastLine) {
  absl::StatusOr<PythonProbe> probe =
      ParsePythonProbeOutput(absl::StrCat("a warning torch printed\n", kOutput, "\n\n"));
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ(probe->python_version, "3.12.3");
  EXPECT_EQ(probe->torch_version, "2.11.0+cu130");
  EXPECT_DOUBLE_EQ(probe->python_op_us, 8.25);
  EXPECT_THAT(probe->torchscript_op_us, Optional(5.5));
}

TEST(ParsePythonProbeOutputTest, TorchScriptMayBeMissing) {
  absl::StatusOr<PythonProbe> probe =
      ParsePythonProbeOutput(R"({"python_op_us": 9, "torchscript_op_us": null})");
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_FALSE(probe->torchscript_op_us.has_value());
}

TEST(ParsePythonProbeOutputTest, ReadsTheTinyModelsLoopPerLaunch) {
  absl::StatusOr<PythonProbe> probe = ParsePythonProbeOutput(
      R"({"python_op_us": 6.8, "torchscript_op_us": 5.9, "loop_forward_us_per_launch": 9.5, )"
      R"("loop_backward_us_per_launch": 11.25, "loop_optimizer_us_per_launch": 14, )"
      R"("loop_inference_us_per_launch": 8.5, "loop_train_us_per_launch": 11.5, )"
      R"("loop_forward_launches": 19, "loop_launch_unit": "kernels"})");
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_TRUE(probe->loop.has_value());
  EXPECT_DOUBLE_EQ(probe->loop->forward_us, 9.5);
  EXPECT_DOUBLE_EQ(probe->loop->backward_us, 11.25);
  EXPECT_DOUBLE_EQ(probe->loop->optimizer_us, 14);
  EXPECT_DOUBLE_EQ(probe->loop->inference_us, 8.5);
  EXPECT_DOUBLE_EQ(probe->loop->train_us, 11.5);
}

// The loop keys are an addition: a script without them, or one that could
// not count launches (null), still gives the per-op cost.
TEST(ParsePythonProbeOutputTest, TheLoopIsEmptyUnlessEveryKeyIsAMeasurement) {
  absl::StatusOr<PythonProbe> probe = ParsePythonProbeOutput(kOutput);
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_FALSE(probe->loop.has_value());
  // One line each: the parser reads the last line of the script's output.
  for (const char* partial :
       {R"({"python_op_us": 7, "loop_forward_us_per_launch": 9, )"
        R"("loop_backward_us_per_launch": 9, "loop_optimizer_us_per_launch": 9, )"
        R"("loop_inference_us_per_launch": 9})",
        R"({"python_op_us": 7, "loop_forward_us_per_launch": 9, )"
        R"("loop_backward_us_per_launch": 9, "loop_optimizer_us_per_launch": null, )"
        R"("loop_inference_us_per_launch": 9, "loop_train_us_per_launch": 9})",
        R"({"python_op_us": 7, "loop_forward_us_per_launch": 9, )"
        R"("loop_backward_us_per_launch": -1, "loop_optimizer_us_per_launch": 9, )"
        R"("loop_inference_us_per_launch": 9, "loop_train_us_per_launch": 9})"}) {
    probe = ParsePythonProbeOutput(partial);
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_DOUBLE_EQ(probe->python_op_us, 7);
    EXPECT_FALSE(probe->loop.has_value()) << partial;
  }
}

TEST(ParsePythonProbeOutputTest, RefusesWhatIsNotAMeasurement) {
  for (const char* bad : {"", "Traceback (most recent call last):", R"({"python_op_us": 0})",
                          R"({"python_op_us": -3})", R"({"torchscript_op_us": 5})",
                          R"({"python_op_us": "fast"})",
                          R"({"python_op_us": 8, "torchscript_op_us": -1})", "[8.1]"}) {
    absl::StatusOr<PythonProbe> probe = ParsePythonProbeOutput(bad);
    EXPECT_EQ(probe.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RunPythonProbeTest, NoInterpreterIsNotMeasured) {
  absl::StatusOr<PythonProbe> probe =
      RunPythonProbe({.pythons = {"/nonexistent/python3", "perfcast-no-such-python"}});
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(probe.status().message(), HasSubstr("not measured"));
  EXPECT_THAT(probe.status().message(), HasSubstr("perfcast-no-such-python"));
}

TEST(RunPythonProbeTest, APythonWithoutTorchIsNotMeasured) {
  FakePython no_torch("no_torch", "echo \"no torch: No module named 'torch'\" >&2; exit 3");
  absl::StatusOr<PythonProbe> probe = RunPythonProbe({.pythons = {no_torch.path()}});
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(probe.status().message(), HasSubstr("No module named 'torch'"));
}

TEST(RunPythonProbeTest, TheFirstPythonWithTorchMeasures) {
  FakePython no_torch("no_torch_first", "exit 3");
  // The fake checks what the agent hands it: the script file and the device.
  FakePython with_torch(
      "with_torch",
      absl::StrCat("grep -q dispatch_rates \"$1\" && [ \"$2 $3\" = '--device cpu' ] || exit 1\n",
                   "echo '", kOutput, "'"));
  absl::StatusOr<PythonProbe> probe = RunPythonProbe(
      {.pythons = {"/nonexistent/python3", no_torch.path(), with_torch.path()}, .device = "cpu"});
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ(probe->python, with_torch.path());
  EXPECT_DOUBLE_EQ(probe->python_op_us, 8.25);
}

TEST(RunPythonProbeTest, AFailingProbeSaysWhy) {
  FakePython crashing("crashing", "echo 'RuntimeError: CUDA error: no kernel image' >&2; exit 1");
  absl::StatusOr<PythonProbe> probe = RunPythonProbe({.pythons = {crashing.path()}});
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(probe.status().message(), HasSubstr("exit status 1 (RuntimeError: CUDA error"));
}

TEST(RunPythonProbeTest, AHangingProbeIsKilledAtItsTimeout) {
  FakePython hanging("hanging", "exec sleep 30");
  absl::StatusOr<PythonProbe> probe =
      RunPythonProbe({.pythons = {hanging.path()}, .timeout = absl::Milliseconds(200)});
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(probe.status().message(), HasSubstr("timed out"));
}

// The shipped script under the machine's own python3: "not measured" where it
// has no torch (CI), a measurement where it has.
TEST(RunPythonProbeTest, TheShippedScriptRunsUnderPython3) {
  if (std::system("python3 -c pass >/dev/null 2>&1") != 0) {
    SKIP_FOR_ENVIRONMENT_GAP() << "no python3";
  }
  absl::StatusOr<PythonProbe> probe = RunPythonProbe({.pythons = {"python3"}, .device = "cpu"});
  if (std::system("python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    EXPECT_EQ(probe.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(probe.status().message(), HasSubstr("no torch"));
  } else {
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_GT(probe->python_op_us, 0);
    EXPECT_FALSE(probe->torch_version.empty());
    EXPECT_TRUE(probe->loop.has_value());
  }
}

TEST(ApplyPythonProbeTest, StoresCostsAndVersionsOnTheNode) {
  models::Node node;
  ApplyPythonProbe({.python = "python3", .python_version = "3.12.3", .torch_version = "2.11.0",
                    .python_op_us = 8.25, .torchscript_op_us = 5.5},
                   node);
  EXPECT_THAT(node.measured.python_op_us, Optional(8.25));
  EXPECT_THAT(node.measured.torchscript_op_us, Optional(5.5));
  EXPECT_EQ(node.host.python_version, "3.12.3");
  EXPECT_EQ(node.host.python_torch_version, "2.11.0");
}

}  // namespace
}  // namespace perfcast::profiler
