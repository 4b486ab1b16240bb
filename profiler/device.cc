#include "profiler/device.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#ifdef PERFCAST_AGENT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace perfcast::profiler {

using models::Precision;

absl::StatusOr<Device> Device::Open(const DeviceOptions& options) {
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be non-negative, got ", options.threads));
  }
  if (options.device != "auto" && options.device != "cuda" && options.device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", options.device, "' (expected auto, cuda or cpu)"));
  }
  if (options.threads > 0) at::set_num_threads(options.threads);
  torch::manual_seed(options.seed);
  Device device;
  const bool want_cuda = options.device == "cuda";
  const bool have_cuda = torch::cuda::is_available();
#ifndef PERFCAST_AGENT_CUDA
  if (want_cuda) {
    return absl::FailedPreconditionError(
        "--device cuda: this perfcast-agent was built with a CPU-only LibTorch");
  }
#else
  if (want_cuda && !have_cuda) {
    return absl::FailedPreconditionError("--device cuda: no CUDA GPU is visible");
  }
  if (have_cuda && options.device != "cpu") {
    device.is_cuda_ = true;
    device.torch_device_ = torch::Device(torch::kCUDA, 0);
    const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
    device.compute_capability_ = absl::StrCat(props->major, ".", props->minor);
  }
#endif
  (void)have_cuda;
  return device;
}

int Device::threads() const { return at::get_num_threads(); }

void Device::Synchronize() const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) torch::cuda::synchronize();
#endif
}

void Device::ResetPeakMemory() const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(
        static_cast<c10::DeviceIndex>(torch_device_.index()));
  }
#endif
}

std::optional<double> Device::PeakMemoryBytes() const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        static_cast<c10::DeviceIndex>(torch_device_.index()));
    // Index 0 is StatType::AGGREGATE; the enum moved namespaces between
    // LibTorch releases, its value did not.
    return static_cast<double>(stats.allocated_bytes[0].peak);
  }
#endif
  return std::nullopt;
}

void Device::ReleaseCachedMemory() const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

absl::Status Device::Supports(Precision precision) const {
  if (precision == Precision::kFp8 || precision == Precision::kInt8) {
    return absl::UnimplementedError(absl::StrCat(
        models::PrecisionName(precision),
        " unsupported: the agent measures fp32, tf32, fp16-amp, bf16-amp and fp64; the "
        "predictor prices 8-bit work from the spec sheet"));
  }
  if (!is_cuda_) {
    if (precision == Precision::kTf32) {
      return absl::UnimplementedError("tf32 unsupported: needs a CUDA GPU");
    }
    if (precision == Precision::kFp16Amp) {
      return absl::UnimplementedError("fp16-amp unsupported on the CPU");
    }
    return absl::OkStatus();
  }
  const int major = std::stoi(compute_capability_);
  if ((precision == Precision::kTf32 || precision == Precision::kBf16Amp) && major < 8) {
    return absl::UnimplementedError(absl::StrCat(models::PrecisionName(precision),
                                                 " unsupported: needs compute capability 8.0, "
                                                 "device has ",
                                                 compute_capability_));
  }
  return absl::OkStatus();
}

// ---- Timeline ----

#ifdef PERFCAST_AGENT_CUDA
struct Timeline::Events {
  // A deque keeps references stable as it grows; CUDAEvent is move-only.
  std::deque<at::cuda::CUDAEvent> events;
};
#else
struct Timeline::Events {};
#endif

Timeline::Timeline(const Device& device)
    : is_cuda_(device.is_cuda()), events_(std::make_unique<Events>()) {}

Timeline::~Timeline() = default;

int Timeline::Mark() {
  const int index = used_++;
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) {
    // Timing must be enabled: CUDAEvent's default flags disable it.
    if (static_cast<int>(events_->events.size()) <= index) {
      events_->events.emplace_back(cudaEventDefault);
    }
    events_->events[index].record();
    return index;
  }
#endif
  if (static_cast<int>(clock_marks_.size()) <= index) clock_marks_.resize(index + 1);
  clock_marks_[index] = std::chrono::steady_clock::now();
  return index;
}

void Timeline::Wait(int index) const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) events_->events[index].synchronize();
#endif
  (void)index;
}

double Timeline::ElapsedMs(int from, int to) const {
#ifdef PERFCAST_AGENT_CUDA
  if (is_cuda_) return events_->events[from].elapsed_time(events_->events[to]);
#endif
  return std::chrono::duration<double, std::milli>(clock_marks_[to] - clock_marks_[from]).count();
}

double TimePerCallMs(const Device& device, int calls, const std::function<void()>& call) {
  Timeline timeline(device);
  const int start = timeline.Mark();
  for (int i = 0; i < calls; ++i) call();
  const int end = timeline.Mark();
  timeline.Wait(end);
  return timeline.ElapsedMs(start, end) / calls;
}

// ---- Math modes ----

MathModeScope::MathModeScope(Precision precision) {
  // What each precision name means (models::Precision), set as a PyTorch
  // script sets it: matmuls in TF32 only for tf32, cuDNN's TF32 off only for
  // strict-fp32, and cudnn.benchmark on, as most training scripts have it.
  at::globalContext().setFloat32MatmulPrecision(precision == Precision::kTf32 ? "high"
                                                                              : "highest");
  at::globalContext().setAllowTF32CuDNN(precision != Precision::kStrictFp32);
  at::globalContext().setBenchmarkCuDNN(true);
}

MathModeScope::~MathModeScope() {
  // LibTorch's defaults.
  at::globalContext().setFloat32MatmulPrecision("highest");
  at::globalContext().setAllowTF32CuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

namespace {

// LibTorch 2.4 replaced the per-backend autocast switches with ones keyed
// by device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
void SetAutocast(bool is_cuda, bool enabled, at::ScalarType dtype) {
  const at::DeviceType type = is_cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
}
#else
void SetAutocast(bool is_cuda, bool enabled, at::ScalarType dtype) {
  if (is_cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
}
#endif

}  // namespace

AutocastScope::AutocastScope(const Device& device, Precision precision)
    : is_cuda_(device.is_cuda()) {
  if (precision != Precision::kFp16Amp && precision != Precision::kBf16Amp) return;
  enabled_ = true;
  SetAutocast(is_cuda_, true,
              precision == Precision::kFp16Amp ? at::ScalarType::Half : at::ScalarType::BFloat16);
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  SetAutocast(is_cuda_, false,
              is_cuda_ ? at::ScalarType::Half : at::ScalarType::BFloat16);
  // Autocast caches casted weights for the duration of the region.
  at::autocast::clear_cache();
}

torch::Dtype OperationDtype(Precision precision) {
  switch (precision) {
    case Precision::kFp64:
      return torch::kFloat64;
    case Precision::kFp16Amp:
      return torch::kFloat16;
    case Precision::kBf16Amp:
      return torch::kBFloat16;
    default:
      return torch::kFloat32;
  }
}

torch::Dtype ModelDtype(Precision precision) {
  return precision == Precision::kFp64 ? torch::kFloat64 : torch::kFloat32;
}

absl::Status StatusFromException(const std::exception& e) {
  // c10::Error::what() appends a backtrace; the message proper comes first.
  const std::string message(*absl::StrSplit(e.what(), '\n').begin());
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
      absl::StrContains(message, "out of memory")) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory: ", message));
  }
  if (absl::StrContains(message, "not implemented for") ||
      absl::StrContains(message, "not supported")) {
    return absl::UnimplementedError(message);
  }
  return absl::InternalError(message);
}

absl::Status RunGuarded(const Device& device, const std::function<absl::Status()>& body) {
  absl::Status status;
  try {
    status = body();
  } catch (const std::exception& e) {
    status = StatusFromException(e);
  }
  if (absl::IsResourceExhausted(status)) {
    // The failed configuration's tensors are gone with its stack frames;
    // hand the cached blocks back so the next one does not inherit them.
    try {
      device.Synchronize();
    } catch (const std::exception&) {
      // A sticky device error surfaces on the next configuration.
    }
    device.ReleaseCachedMemory();
  }
  return status;
}

}  // namespace perfcast::profiler
