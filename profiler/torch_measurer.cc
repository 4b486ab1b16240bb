#include "profiler/torch_measurer.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "profiler/device.h"
#include "profiler/host_features.h"
#include "profiler/nvml.h"
#include "profiler/op_bench.h"
#ifdef PERFCAST_AGENT_PROXIES
#include "profiler/proxy_harness.h"
#endif
#ifdef PERFCAST_AGENT_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace perfcast::profiler {
namespace {

class TorchMeasurer : public Measurer {
 public:
  TorchMeasurer(Device device, const DeviceOptions& options, const models::MeasuredRates& rates,
                std::unique_ptr<Nvml> nvml, std::optional<GpuSensor> sensor)
      : device_(std::move(device)),
        options_(options),
        rates_(rates),
        nvml_(std::move(nvml)),
        sensor_(sensor) {}

  absl::StatusOr<Measurement> Measure(const models::WorkloadSpec& spec, const TimingPolicy& timing,
                                      int pass) override {
    const GpuSensor* sensor = sensor_.has_value() ? &*sensor_ : nullptr;
    if (spec.kind == models::WorkloadKind::kOperation) {
      return MeasureOperation(device_, spec, timing, pass, rates_, sensor);
    }
#ifdef PERFCAST_AGENT_PROXIES
    return MeasureModel(device_, spec, timing, pass, rates_, options_.seed, sensor);
#else
    return absl::UnimplementedError("this build has no proxy models (models/torch)");
#endif
  }

  absl::StatusOr<models::MeasuredRates> MeasureHost() override {
    models::MeasuredRates rates;
    RETURN_IF_ERROR(RunGuarded(device_, [&]() -> absl::Status {
      MeasureHostFeatures(device_, rates);
      return absl::OkStatus();
    }));
    return rates;
  }

 private:
  Device device_;
  DeviceOptions options_;
  models::MeasuredRates rates_;
  std::unique_ptr<Nvml> nvml_;        // outlives sensor_
  std::optional<GpuSensor> sensor_;  // the measured GPU; empty without NVML
};

// "0000:1a:00.0" of the current CUDA device; empty on a CPU build.
std::string PciBusId(const Device& device) {
#ifdef PERFCAST_AGENT_CUDA
  if (device.is_cuda()) {
    const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
    return absl::StrFormat("%04x:%02x:%02x.0", props->pciDomainID, props->pciBusID,
                           props->pciDeviceID);
  }
#endif
  (void)device;
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<Measurer>> MakeTorchMeasurer(
    const DeviceOptions& options, const models::MeasuredRates& rates,
    const TorchMeasurerOptions& measurer_options, std::string* note) {
  ASSIGN_OR_RETURN(Device device, Device::Open(options));
  std::unique_ptr<Nvml> nvml;
  std::optional<GpuSensor> sensor;
  if (device.is_cuda()) {
    absl::StatusOr<std::unique_ptr<Nvml>> opened = Nvml::Open(measurer_options.nvml_library);
    absl::Status problem = opened.status();
    if (opened.ok()) {
      absl::StatusOr<GpuSensor> gpu = (*opened)->Device(PciBusId(device), 0);
      if (gpu.ok()) {
        nvml = *std::move(opened);
        sensor = *gpu;
      } else {
        problem = gpu.status();
      }
    }
    if (!problem.ok() && note != nullptr) {
      *note = absl::StrCat("no GPU power, clock or temperature readings (", problem.message(),
                           ")");
    }
  }
  return std::make_unique<TorchMeasurer>(std::move(device), options, rates, std::move(nvml),
                                         sensor);
}

}  // namespace perfcast::profiler
