// The agent's Measurer: runs operation micro-benchmarks and whole proxy
// models with LibTorch on the device the options select, reads the GPU's
// state through NVML where the driver has it, and re-measures the host's
// features on request.
#ifndef PERFCAST_PROFILER_TORCH_MEASURER_H_
#define PERFCAST_PROFILER_TORCH_MEASURER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "profiler/device_options.h"
#include "profiler/measurer.h"

namespace perfcast::profiler {

struct TorchMeasurerOptions {
  // The NVML library to load on a GPU (tests point it elsewhere).
  std::string nvml_library = "libnvidia-ml.so.1";
};

// `rates` (the node's measured rates) turn achieved FLOP rates into
// roofline fractions. On a GPU without NVML, `*note` (if given) receives a
// one-line explanation and the measurer records no GPU state. Errors as
// Device::Open.
absl::StatusOr<std::unique_ptr<Measurer>> MakeTorchMeasurer(
    const DeviceOptions& options, const models::MeasuredRates& rates,
    const TorchMeasurerOptions& measurer_options = {}, std::string* note = nullptr);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_TORCH_MEASURER_H_
