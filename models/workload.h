// Workload vocabulary: what runs. A workload is either a whole proxy model
// (a family such as "lstm" with its architecture parameters) or a single
// operation (an operation class such as "gemm" with its shape). Both are
// plain values, cheap to copy, with a canonical text key that identifies them
// in the store and in content hashes.
#ifndef PERFCAST_MODELS_WORKLOAD_H_
#define PERFCAST_MODELS_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace perfcast::models {

// Numeric precision a workload runs in, as PyTorch runs it with cudnn.benchmark
// on. kFp32 is PyTorch's default: matmuls in strict FP32, convolutions in TF32
// through cuDNN on Ampere and newer (torch.backends.cudnn.allow_tf32 is True,
// torch.backends.cuda.matmul.allow_tf32 False); kTf32 runs matmuls and
// convolutions in TF32 (set_float32_matmul_precision("high")); kStrictFp32
// uses TF32 nowhere. On GPUs without TF32 all three run strict FP32. Amp
// precisions keep FP32 master weights and autocast matrix work to 16 bits.
// kFp8 runs matrix work in FP8
// and the rest as bf16-amp does (Transformer Engine, torchao float8): a
// training and inference precision of Hopper, Blackwell and AMD MI300. kInt8
// runs matrix work in INT8 and the rest in 16 bits: inference only. New
// values go last: rate tables are indexed by this order.
enum class Precision { kFp32, kTf32, kFp16Amp, kBf16Amp, kFp64, kFp8, kInt8, kStrictFp32 };
inline constexpr int kPrecisionCount = 8;

// Whether `precision` keeps FP32 master weights and runs matrix work in
// fewer bits (fp16-amp, bf16-amp, fp8, int8).
bool IsMixedPrecision(Precision precision);

// Training step (forward + backward + optimizer) or inference batch (forward).
enum class Phase { kTrain, kInference };

// Whether a workload is a whole model run or one operation micro-benchmark.
enum class WorkloadKind { kModel, kOperation };

// The training or inference loop that runs a workload (DESIGN.md, "Whose
// loop"): kPython is an eager PyTorch loop written in Python, what users run;
// kCpp is the agent's own LibTorch loop, which every profile measures. A
// Python loop pays the interpreter's host work per dispatched operation
// (predictor/python_loop.h). Not part of a WorkloadSpec: the same work
// measured by either loop is the same profile key.
enum class Loop { kPython, kCpp };

// Stable lower-case names used in files, flags and the API:
// "fp32", "tf32", "fp16-amp", "bf16-amp", "fp64", "fp8", "int8",
// "strict-fp32"; "train", "inference".
absl::string_view PrecisionName(Precision precision);
absl::string_view PhaseName(Phase phase);
absl::string_view WorkloadKindName(WorkloadKind kind);
// "python", "cpp".
absl::string_view LoopName(Loop loop);
// Parse the names above (case-insensitive; "fp16"/"bf16" are accepted for the
// amp variants). InvalidArgument names the accepted values on failure.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
absl::StatusOr<Phase> ParsePhase(absl::string_view name);
absl::StatusOr<WorkloadKind> ParseWorkloadKind(absl::string_view name);
absl::StatusOr<Loop> ParseLoop(absl::string_view name);

// A workload as a user or an agent states it. Architecture parameters are
// integers keyed by name ("layers", "hidden", "seq_len", ...); which names a
// family takes is defined by its descriptor (see descriptor.h).
struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kModel;
  std::string family;                       // "lstm", "transformer", "gemm", ...
  std::map<std::string, int64_t> params;    // ordered: the key is canonical
  int64_t batch_size = 1;
  Precision precision = Precision::kFp32;
  Phase phase = Phase::kTrain;
  std::string optimizer = "adam";           // adam, adamw, sgd, none (no step); inference: ignored

  // Canonical text form, e.g.
  // "model/lstm{hidden=512,layers=4}/b256/bf16-amp/train/adam".
  // Two specs have the same key exactly when they describe the same work.
  std::string Key() const;

  friend bool operator==(const WorkloadSpec&, const WorkloadSpec&) = default;
};

// Parses the output of WorkloadSpec::Key(). InvalidArgument on malformed text.
absl::StatusOr<WorkloadSpec> ParseWorkloadKey(absl::string_view key);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_WORKLOAD_H_
