// Memory fit: the peak device memory of one training step or inference batch,
// predicted from the workload descriptor and calibrated on the peaks agents
// measured, and the verdict whether a workload fits on a GPU at all.
//
// The analytic terms are those of a PyTorch training loop: fp32 master
// weights (fp64 under fp64), their gradients, the optimizer's state (Adam and
// AdamW: two tensors per parameter, SGD with momentum: one), the 16-bit
// weight copies autocast keeps for backward under amp (training only: an
// inference pass frees each after use), the activations kept for backward
// (or the largest live outputs of an inference pass) and the input batch. The
// persistent tensors are certain and enter at face value; what lives only
// during the step is calibrated per model family and phase from measured
// peaks: peak − persistent ≈ c0 + c1·activations + c2·inputs + c3·(activations
// kept at 32 bits) + c4·(traffic of the largest operation: its temporaries and
// gradient buffers) + c5·(the same at 32 bits: cuDNN picks convolution
// algorithms with workspaces of several times their operands in fp32/tf32,
// measured 2.6 MB per sample for the CIFAR ResNets, none in bf16) +
// c6·(forward traffic: workspaces that scale with the pass), every c >= 0, a
// least-squares fit on relative error, cross-validated for its error band.
// The optimizer step can set the peak instead: by then backward has freed the
// activations and autocast its weight copies, but PyTorch's multi-tensor Adam
// (the agent's since method 4) allocates a square-root denominator for every
// parameter, so that step holds weights, gradients, both moments and one more
// copy of the parameters; a model with many parameters and a small batch
// peaks there. The prediction is the larger of the two peaks. c0
// holds the framework's fixed workspaces (cuBLAS, cuDNN, the loss: 63-75 MB
// on the H200).
// The measured peak is the caching allocator's peak of allocated bytes, which
// leaves out the CUDA context and the allocator's slack; a fit verdict adds
// both.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_MEMORY_H_
#define PERFCAST_PREDICTOR_MEMORY_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "predictor/dataset.h"

namespace perfcast::predictor {

// Device memory a CUDA context and LibTorch's kernels take before the first
// tensor is allocated (typically 0.3-0.6 GiB on recent drivers), and the
// share of the allocated peak that the caching allocator reserves on top
// (block rounding and fragmentation). Both sit outside the measured peak.
inline constexpr double kCudaContextBytes = 0.5 * (1 << 30);
inline constexpr double kAllocatorSlack = 0.05;

// The analytic terms of a step's peak, in bytes.
struct MemoryTerms {
  double weights = 0;          // master weights
  double gradients = 0;        // training only
  double optimizer_state = 0;  // training only
  double amp_copies = 0;       // autocast's cached 16-bit weights
  double activations = 0;      // kept for backward / live in inference
  double inputs = 0;           // the input batch on the device
  // Calibration features, not terms of the sum:
  double fp32_activations = 0;  // activations when they are kept at 32 bits
  double largest_op_bytes = 0;  // traffic of the largest operation
  double fp32_largest_op_bytes = 0;  // the same when the math is fp32/tf32
  double forward_bytes = 0;     // traffic of the forward pass
  // Allocated by the optimizer step while it runs (training only): foreach
  // Adam's denominators. Not a term of total(): see optimizer_peak().
  double optimizer_temporaries = 0;

  double persistent() const { return weights + gradients + optimizer_state + amp_copies; }
  // What the optimizer step holds: autocast's copies are gone by then.
  double optimizer_peak() const {
    return weights + gradients + optimizer_state + optimizer_temporaries;
  }
  double transient() const { return activations + inputs; }
  double total() const { return persistent() + transient(); }
};

// Optimizer state tensors per parameter: 2 for adam/adamw, 1 for sgd
// (momentum), 0 for inference and for training without an update ("none").
int OptimizerStates(const models::WorkloadSpec& spec);
// Tensors per parameter the optimizer step allocates while it runs: 1 for
// adam/adamw (foreach denominators), 0 otherwise (SGD updates in place).
int OptimizerTemporaries(const models::WorkloadSpec& spec);

MemoryTerms AnalyticMemory(const models::WorkloadDescriptor& descriptor);

// The calibrated features, in the order of MemoryCalibration::coefficients.
inline constexpr int kMemoryFeatures = 7;

// One calibration: of a family in a phase ("lstm/train"), or pooled over all
// families of a phase ("*/train") for families without their own.
struct MemoryCalibration {
  std::string scope;
  std::vector<double> coefficients;  // kMemoryFeatures, bytes per feature unit
  int64_t rows = 0;
  double fit_mape = 0;  // in-sample
  double cv_mape = 0;   // cross-validated: 5 folds over workloads (fewer for few workloads)
  double cv_max_error = 0;  // largest held-out |relative error|
  // Held-out relative error (predicted − measured)/measured at 10% and 90%.
  double error_p10 = 0;
  double error_p90 = 0;

  // The peak allocated bytes: persistent terms plus the calibrated rest, or
  // the optimizer step's peak where that is larger.
  double Predict(const MemoryTerms& terms) const;
  friend bool operator==(const MemoryCalibration&, const MemoryCalibration&) = default;
};

struct MemoryModel {
  // Keyed by scope: "lstm/train", "*/inference", ...
  std::map<std::string, MemoryCalibration> calibrations;

  bool empty() const { return calibrations.empty(); }
  friend bool operator==(const MemoryModel&, const MemoryModel&) = default;
};

// Fits one calibration per family and phase with at least kMinMemoryRows
// measured peaks of at least kMinMemoryWorkloads distinct workloads on model
// profiles, and one per phase over all families. The architectures plan
// measures two or three sizes per family, so a family's own calibration,
// even from two workloads, extrapolates to a larger size better than the
// pooled one (docs/code-evidence.md, "Memory calibrations"). The
// fit is the best non-negative least squares over the feature subsets whose
// columns are independent: a feature that is zero or collinear in a small
// group drops out rather than failing the group. Profiles without a peak,
// and operation profiles, are skipped. Never fails: with too few rows the
// model is empty and predictions analytic.
inline constexpr int64_t kMinMemoryRows = 4;
inline constexpr int64_t kMinMemoryWorkloads = 2;
MemoryModel FitMemory(absl::Span<const DescribedProfile> profiles);

struct MemoryEstimate {
  MemoryTerms terms;
  double peak_bytes = 0;  // allocated peak, as agents measure it
  double low_bytes = 0;   // 10th..90th percentile band from the CV errors
  double high_bytes = 0;
  // peak + allocator slack + CUDA context: what the device must hold.
  double required_bytes = 0;
  // "calibrated:<family>/<phase>", "calibrated:*/<phase>" (pooled) or
  // "analytic" (no calibration: persistent + transient terms at face value).
  std::string method;
};

MemoryEstimate EstimateMemory(const MemoryModel& model,
                              const models::WorkloadDescriptor& descriptor);

// What EstimateMemory reads of a workload, worked out once: a server prices
// one workload many times, and the terms walk every operation.
struct MemoryInputs {
  MemoryTerms terms;  // AnalyticMemory
  // The calibrations EstimateMemory looks for, in its order, and the
  // method each names: "<family>/<phase>", then "*/<phase>".
  std::array<std::string, 2> scopes;
  std::array<std::string, 2> methods;  // "calibrated:<scope>"
};
MemoryInputs MemoryInputsOf(const models::WorkloadDescriptor& descriptor);
// EstimateMemory(model, descriptor), from `inputs` = MemoryInputsOf(descriptor).
MemoryEstimate EstimateMemory(const MemoryModel& model, const MemoryInputs& inputs);

// Whether `estimate` fits on `gpu`: required_bytes <= the GPU's memory.
// A GPU of unknown memory size (0) is assumed to fit.
struct MemoryVerdict {
  bool fits = true;
  double device_bytes = 0;
  double required_bytes = 0;
  std::string reason;  // why not, for people: "needs 131.2 GiB, L4-24GB has 24.0 GiB"
};
MemoryVerdict CheckMemoryFit(const MemoryEstimate& estimate, const models::GpuSpec& gpu);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_MEMORY_H_
