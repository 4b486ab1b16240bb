// Whether a GPU runs a precision natively, and what PyTorch runs where it does
// not: a price at a rate the GPU lacks must never pass for full speed.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_MODELS_PRECISION_SUPPORT_H_
#define PERFCAST_MODELS_PRECISION_SUPPORT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/workload.h"

namespace perfcast::models {

// Checks `spec`'s precision and phase against `node`'s GPU (its spec sheet
// and measured rates). OK with no note where the GPU has a native path; OK
// with a note where PyTorch runs something else at a rate the price uses
// (tf32 on a GPU without TF32 runs as fp32); InvalidArgument for int8
// training; FailedPrecondition, naming the GPU and why, for fp8 off Hopper,
// Blackwell and AMD CDNA3 (MI300), and for a 16- or 8-bit precision the GPU
// has no tensor-core rate for (bf16 on V100 and T4, fp16 on P4, int8 on V100).
// CPU nodes are not checked.
absl::StatusOr<std::optional<std::string>> CheckPrecision(const Node& node,
                                                          const WorkloadSpec& spec);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_PRECISION_SUPPORT_H_
