// perfcast memory: the device memory a training step (or inference batch)
// needs per GPU under a layout, part by part, and the GPUs it fits, worked
// out by the one layout memory model (predictor/layout_memory.h) with no
// fitted model and no server: its analytic terms at face value (the
// calibrated transient rest of a fitted model is what predict adds).
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_CLIENT_MEMORY_BREAKDOWN_H_
#define PERFCAST_CLIENT_MEMORY_BREAKDOWN_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/predictor.pb.h"
#include "predictor/layout.h"
#include "predictor/layout_memory.h"

namespace perfcast::client {

// One GPU's verdict.
struct GpuMemoryFit {
  std::string gpu;           // catalog name
  double device_bytes = 0;   // its memory
  bool fits = false;         // required <= device
  double free_bytes = 0;     // device - required; negative when it does not fit
  // When it does not fit: the flags of the nearest layout that does
  // ("--zero 3 --activation-checkpointing"), or "" when none tried fits.
  std::string nearest_change;
};

struct MemoryBreakdown {
  models::WorkloadSpec workload;  // as described (a config or torchvision name resolved)
  predictor::ParallelLayout layout;
  predictor::LayoutMemory memory;  // per GPU
  std::vector<GpuMemoryFit> gpus;  // in the order asked
};

// The memory per GPU of `request`'s workload and layout (its target and job
// are not read), and its verdict on each of `gpus` (GPUs of unknown memory
// size are left out). InvalidArgument or NotFound as the server's
// DescribeWorkload names them, InvalidArgument naming the flag for a layout
// predictor::ValidateLayout refuses.
absl::StatusOr<MemoryBreakdown> BreakDownMemory(const v1::PredictRequest& request,
                                                absl::Span<const models::GpuSpec> gpus);

// The breakdown as one document: workload, layout, every part in bytes,
// required_bytes, and per GPU its memory, verdict and free bytes.
nlohmann::json MemoryBreakdownJson(const MemoryBreakdown& breakdown);

// The breakdown for people: a table of the parts in GiB, then a table of the
// GPUs (fits, free headroom, or the nearest change that fits). Tables fit
// `width` columns (0: no limit).
void PrintMemoryBreakdown(const MemoryBreakdown& breakdown, size_t width, std::ostream& out);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_MEMORY_BREAKDOWN_H_
