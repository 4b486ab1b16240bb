// Operation micro-benchmarks: one LibTorch operation (a GEMM, a convolution,
// an LSTM, attention, an element-wise/normalisation op, an embedding lookup,
// an optimizer update or a host->device copy) at the shape and precision of
// an operation workload (models/descriptor.h lists the families), timed in
// blocks of back-to-back calls after a warm-up.
//
// Conventions follow the descriptors: phase train is the forward and the
// backward of the operation; GEMM, convolution and LSTM tensors are created
// in the precision itself, attention/element-wise/normalisation run under
// autocast (so normalisation and softmax compute in FP32 under amp), and
// embedding tables stay FP32.
//
// Internal to perfcast_profiler (includes LibTorch).
#ifndef PERFCAST_PROFILER_OP_BENCH_H_
#define PERFCAST_PROFILER_OP_BENCH_H_

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "profiler/device.h"
#include "profiler/measurer.h"
#include "profiler/nvml.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// Measures pass `pass` of a normalised operation workload: the pass's
// share of `timing.op_repeats` blocks of back-to-back calls. The profile's
// iteration statistics are over the blocks' per-call means (count = calls
// timed); throughput is calls per second at the median; achieved_tflops
// and roofline_fraction use the descriptor's FLOPs and `rates`; the GPU
// state comes from `sensor` (nullptr: none). Errors as Measurer::Measure;
// InvalidArgument for a model workload.
absl::StatusOr<Measurement> MeasureOperation(const Device& device,
                                             const models::WorkloadSpec& spec,
                                             const TimingPolicy& timing, int pass,
                                             const models::MeasuredRates& rates,
                                             const GpuSensor* sensor);

// The measured peak matmul rate for `precision`, if the fingerprint has it.
std::optional<double> PeakTflops(const models::MeasuredRates& rates, models::Precision precision);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_OP_BENCH_H_
