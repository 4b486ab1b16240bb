// The agent's Measurer: runs operation micro-benchmarks and whole proxy
// models with LibTorch on the device the options select.
#ifndef PERFCAST_PROFILER_TORCH_MEASURER_H_
#define PERFCAST_PROFILER_TORCH_MEASURER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "profiler/device_options.h"
#include "profiler/measurer.h"

namespace perfcast::profiler {

// `rates` (the node's measured rates) turn achieved FLOP rates into
// roofline fractions. Errors as Device::Open.
absl::StatusOr<std::unique_ptr<Measurer>> MakeTorchMeasurer(const DeviceOptions& options,
                                                            const models::MeasuredRates& rates);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_TORCH_MEASURER_H_
