// The GPU's state through NVML (board power, SM clock, temperature), loaded
// at run time with dlopen("libnvidia-ml.so.1") so that the agent has no
// link-time dependency on the driver: a machine without NVML (a CPU node, a
// container without the driver's libraries) runs without these readings.
//
// Plain C++ (no LibTorch, no CUDA headers). Not thread-safe.
#ifndef PERFCAST_PROFILER_NVML_H_
#define PERFCAST_PROFILER_NVML_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfcast::profiler {

// The GPU's state over the timed blocks of one measurement; all empty on a
// CPU or without NVML.
struct GpuState {
  std::optional<double> board_power_w;  // mean over the timed blocks
  std::optional<double> sm_clock_mhz;   // mean of samples at block ends
  std::optional<double> temperature_c;  // at the end of the last block
  double timed_s = 0;                   // host seconds the blocks took
};

class Nvml;

// Readings of one GPU. Valid while the Nvml that made it lives. Each is
// empty when the driver does not expose it.
class GpuSensor {
 public:
  // Total energy since the driver loaded, joules (a counter: differences
  // over an interval give its mean power exactly).
  std::optional<double> EnergyJ() const;
  // Board power now (the driver's short average), watts.
  std::optional<double> PowerW() const;
  std::optional<double> SmClockMhz() const;
  std::optional<double> TemperatureC() const;

 private:
  friend class Nvml;
  GpuSensor(const Nvml* nvml, void* device) : nvml_(nvml), device_(device) {}
  const Nvml* nvml_;
  void* device_;  // nvmlDevice_t
};

// An initialised NVML; shuts it down and unloads the library on
// destruction.
class Nvml {
 public:
  static constexpr char kLibrary[] = "libnvidia-ml.so.1";

  // Loads `library` and initialises NVML. NotFound when the library cannot
  // be loaded; Unavailable when it lacks NVML's entry points or nvmlInit
  // fails (no driver, no GPU).
  static absl::StatusOr<std::unique_ptr<Nvml>> Open(const std::string& library = kLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The GPU with PCI bus id `pci_bus_id` ("0000:1a:00.0"), or the one of
  // NVML index `index` when the id is empty or unknown to NVML. NotFound
  // when there is no such GPU.
  absl::StatusOr<GpuSensor> Device(absl::string_view pci_bus_id, int index) const;

 private:
  friend class GpuSensor;
  struct Api;  // the entry points
  Nvml(void* handle, std::unique_ptr<Api> api);
  std::string Error(int code) const;

  void* handle_;  // from dlopen
  std::unique_ptr<Api> api_;
};

// Averages the GPU's state over timed blocks: the energy counter read at
// each block's start and end (the mean power of the blocks exactly),
// falling back to power samples at block ends where the counter is not
// supported; the SM clock sampled at block ends; the temperature after the
// last. With no sensor it only adds up the blocks' time.
class BlockMonitor {
 public:
  explicit BlockMonitor(const GpuSensor* sensor) : sensor_(sensor) {}

  // Call around each timed block, the end after the device finished it.
  void BeginBlock();
  void EndBlock();

  GpuState State() const;

 private:
  using Clock = std::chrono::steady_clock;
  const GpuSensor* sensor_;
  Clock::time_point block_start_;
  std::optional<double> energy_start_j_;
  double energy_j_ = 0, energy_s_ = 0;  // over blocks with both counter readings
  double power_sum_w_ = 0;
  int power_samples_ = 0;
  double clock_sum_mhz_ = 0;
  int clock_samples_ = 0;
  std::optional<double> temperature_c_;
  double timed_s_ = 0;
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_NVML_H_
