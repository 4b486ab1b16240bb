#include "profiler/nvml.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfcast::profiler {
namespace {

using ::testing::HasSubstr;

TEST(NvmlTest, AMissingLibraryIsNotFound) {
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(nvml.status().message(), HasSubstr("NVML not available"));
}

TEST(NvmlTest, ALibraryWithoutNvmlIsUnavailable) {
  // The C library is always there and has none of NVML's entry points.
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open("libc.so.6");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(nvml.status().message(), HasSubstr("lacks NVML's entry points"));
}

TEST(NvmlTest, TheDefaultLibraryOpensOrFailsCleanly) {
  // A GPU machine opens it; elsewhere the library or the driver is missing.
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open();
  if (nvml.ok()) {
    absl::StatusOr<GpuSensor> gpu = (*nvml)->Device("", 0);
    EXPECT_TRUE(gpu.ok() || absl::IsNotFound(gpu.status())) << gpu.status();
  } else {
    EXPECT_TRUE(absl::IsNotFound(nvml.status()) || absl::IsUnavailable(nvml.status()))
        << nvml.status();
  }
}

TEST(BlockMonitorTest, WithoutASensorOnlyTimeAddsUp) {
  BlockMonitor monitor(nullptr);
  for (int i = 0; i < 2; ++i) {
    monitor.BeginBlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    monitor.EndBlock();
  }
  const GpuState state = monitor.State();
  EXPECT_GE(state.timed_s, 0.004);
  EXPECT_FALSE(state.board_power_w.has_value());
  EXPECT_FALSE(state.sm_clock_mhz.has_value());
  EXPECT_FALSE(state.temperature_c.has_value());
}

}  // namespace
}  // namespace perfcast::profiler
