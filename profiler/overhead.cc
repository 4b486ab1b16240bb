#include "profiler/overhead.h"

#ifdef PERFCAST_AGENT_PROXIES
#include "profiler/proxy_harness.h"
#endif

namespace perfcast::profiler {

#ifndef PERFCAST_AGENT_PROXIES
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device,
                                               const OverheadOptions& options) {
  return absl::UnimplementedError("this build has no proxy models (models/torch)");
}
#endif

}  // namespace perfcast::profiler
