#include "profiler/torch_measurer.h"

#include <utility>

#include "profiler/device.h"
#include "profiler/op_bench.h"
#ifdef PERFCAST_AGENT_PROXIES
#include "profiler/proxy_harness.h"
#endif

namespace perfcast::profiler {
namespace {

class TorchMeasurer : public Measurer {
 public:
  TorchMeasurer(Device device, const DeviceOptions& options, const models::MeasuredRates& rates)
      : device_(std::move(device)), options_(options), rates_(rates) {}

  absl::StatusOr<models::Profile> Measure(const models::WorkloadSpec& spec,
                                          const TimingPolicy& timing) override {
    if (spec.kind == models::WorkloadKind::kOperation) {
      return MeasureOperation(device_, spec, timing, rates_);
    }
#ifdef PERFCAST_AGENT_PROXIES
    return MeasureModel(device_, spec, timing, rates_, options_.seed);
#else
    return absl::UnimplementedError("this build has no proxy models (models/torch)");
#endif
  }

 private:
  Device device_;
  DeviceOptions options_;
  models::MeasuredRates rates_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Measurer>> MakeTorchMeasurer(const DeviceOptions& options,
                                                            const models::MeasuredRates& rates) {
  absl::StatusOr<Device> device = Device::Open(options);
  if (!device.ok()) return device.status();
  return std::make_unique<TorchMeasurer>(*std::move(device), options, rates);
}

}  // namespace perfcast::profiler
