// The device the agent measures on: a CUDA GPU through LibTorch's CUDA API
// when the build has it, or the host CPU. Hides every CUDA-specific call
// behind one small interface so that the rest of the agent compiles and
// runs the same on a CPU-only LibTorch.
//
// Internal to perfcast_profiler (includes LibTorch). Not thread-safe: one
// measurement at a time owns the device.
#ifndef PERFCAST_PROFILER_DEVICE_H_
#define PERFCAST_PROFILER_DEVICE_H_

#include <torch/torch.h>

#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"
#include "profiler/device_options.h"

namespace perfcast::profiler {

class Device {
 public:
  // Opens the device. FailedPrecondition for "cuda" when this build has no
  // CUDA or no GPU is visible; InvalidArgument for an unknown name or a
  // negative thread count.
  static absl::StatusOr<Device> Open(const DeviceOptions& options);

  bool is_cuda() const { return is_cuda_; }
  torch::Device torch_device() const { return torch_device_; }
  // Host threads LibTorch uses for intra-op parallelism.
  int threads() const;

  // Blocks until all queued device work is done (no-op on the CPU, whose
  // LibTorch ops are synchronous).
  void Synchronize() const;

  // Peak device memory allocated by tensors since the last reset; nullopt
  // on the CPU, where LibTorch keeps no such statistic.
  void ResetPeakMemory() const;
  std::optional<double> PeakMemoryBytes() const;
  // Returns cached blocks to the driver: after an out-of-memory error, so
  // that the next configuration starts from a clean allocator.
  void ReleaseCachedMemory() const;

  // OK when `precision` runs here; Unimplemented with the reason otherwise
  // (TF32 and FP16 autocast need a CUDA GPU; TF32/BF16 need compute
  // capability 8.0).
  absl::Status Supports(models::Precision precision) const;

  // "major.minor" of a CUDA device; empty on the CPU.
  std::string compute_capability() const { return compute_capability_; }

 private:
  Device() = default;

  bool is_cuda_ = false;
  torch::Device torch_device_ = torch::kCPU;
  std::string compute_capability_;
};

// Marks on the device's timeline and the time between them: CUDA events on
// the current stream of a GPU (so marks cost no synchronisation), the
// steady clock on the CPU. Events are created once and reused across
// iterations.
class Timeline {
 public:
  explicit Timeline(const Device& device);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Forgets all marks (keeps the events for reuse).
  void Clear() { used_ = 0; }
  // Records a mark at the current point of the device's queue; returns its
  // index.
  int Mark();
  // Blocks until the device reaches mark `index`.
  void Wait(int index) const;
  // Milliseconds between two marks; both must have been reached (Wait on
  // the later one first).
  double ElapsedMs(int from, int to) const;

 private:
  struct Events;  // CUDA events; opaque so this header needs no CUDA headers
  const bool is_cuda_;
  std::unique_ptr<Events> events_;
  std::vector<std::chrono::steady_clock::time_point> clock_marks_;
  int used_ = 0;
};

// Runs `call` `calls` times back to back and returns the mean device time
// per call in milliseconds (one synchronisation at the end).
double TimePerCallMs(const Device& device, int calls, const std::function<void()>& call);

// Sets the matmul/convolution math mode a precision name means
// (models::Precision: TF32 matmuls for kTf32 only, TF32 convolutions for all
// but kStrictFp32, cudnn.benchmark on; its searches fall in the warm-up) and
// restores LibTorch's defaults on destruction.
class MathModeScope {
 public:
  explicit MathModeScope(models::Precision precision);
  ~MathModeScope();
  MathModeScope(const MathModeScope&) = delete;
  MathModeScope& operator=(const MathModeScope&) = delete;
};

// Enables automatic mixed precision (autocast) for the amp precisions on
// the device, no-op for the others; restores on destruction. Forward and
// loss run inside one; backward outside (as torch.autocast prescribes).
class AutocastScope {
 public:
  AutocastScope(const Device& device, models::Precision precision);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_ = false;
  bool is_cuda_ = false;
};

// The dtype operation micro-benchmarks run in: amp precisions run their
// math directly in 16 bits, as autocast would.
torch::Dtype OperationDtype(models::Precision precision);
// The dtype of model parameters and inputs: FP64 for kFp64, else FP32
// (amp keeps FP32 master weights).
torch::Dtype ModelDtype(models::Precision precision);

// Maps an exception from LibTorch to a status: ResourceExhausted for out of
// memory, Unimplemented for dtypes or kernels the backend lacks, Internal
// otherwise. Keeps only the first line of the message.
absl::Status StatusFromException(const std::exception& e);

// Runs `body`, turning any exception into a status with
// StatusFromException; after an out-of-memory error frees the device cache.
absl::Status RunGuarded(const Device& device, const std::function<absl::Status()>& body);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_DEVICE_H_
