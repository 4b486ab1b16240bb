#include "profiler/fingerprint.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "models/gpu_catalog.h"
#include "profiler/device.h"
#include "profiler/host_features.h"

#ifdef PERFCAST_AGENT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace perfcast::profiler {
namespace {

using models::Precision;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Hostname() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "localhost";
  return buffer.data();
}

std::string CpuModel() {
  for (absl::string_view line : absl::StrSplit(ReadFile("/proc/cpuinfo"), '\n')) {
    if (absl::StartsWith(line, "model name")) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
      return std::string(absl::StripAsciiWhitespace(kv.second));
    }
  }
  return "unknown";
}

double HostMemoryGib() {
  for (absl::string_view line : absl::StrSplit(ReadFile("/proc/meminfo"), '\n')) {
    if (absl::ConsumePrefix(&line, "MemTotal:")) {
      line = absl::StripAsciiWhitespace(line);
      absl::ConsumeSuffix(&line, " kB");
      double kib = 0;
      if (absl::SimpleAtod(line, &kib)) return kib / (1024.0 * 1024.0);
    }
  }
  return 0;
}

#ifdef PERFCAST_AGENT_CUDA
// The CUDA driver API, loaded at run time: CUDA 13 dropped the clock fields
// from cudaDeviceProp, and the driver library is always present where a GPU
// is, whereas linking the runtime of the right version is not guaranteed.
class CudaDriver {
 public:
  using DevicePointer = unsigned long long;  // NOLINT(runtime/int): CUdeviceptr

  CudaDriver() : handle_(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) return;
    init_ = reinterpret_cast<int (*)(unsigned)>(dlsym(handle_, "cuInit"));
    get_attribute_ =
        reinterpret_cast<int (*)(int*, int, int)>(dlsym(handle_, "cuDeviceGetAttribute"));
    driver_version_ = reinterpret_cast<int (*)(int*)>(dlsym(handle_, "cuDriverGetVersion"));
    memset_async_ = reinterpret_cast<int (*)(DevicePointer, unsigned char, size_t, void*)>(
        dlsym(handle_, "cuMemsetD8Async"));
    synchronize_ = reinterpret_cast<int (*)()>(dlsym(handle_, "cuCtxSynchronize"));
    if (init_ != nullptr) init_(0);
  }
  ~CudaDriver() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // CUdevice_attribute values are part of the driver ABI.
  static constexpr int kClockRateKhz = 13;
  static constexpr int kMemoryClockRateKhz = 36;
  static constexpr int kMemoryBusWidthBits = 37;
  static constexpr int kL2CacheBytes = 38;

  int Attribute(int attribute, int device) const {
    int value = 0;
    if (get_attribute_ == nullptr || get_attribute_(&value, attribute, device) != 0) return 0;
    return value;
  }
  // "13.0" for 13000; empty when unknown.
  std::string Version() const {
    int version = 0;
    if (driver_version_ == nullptr || driver_version_(&version) != 0) return "";
    return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
  }
  // Host microseconds per launch of a one-byte memset on the legacy default
  // stream through the driver API: the raw cost of a kernel launch, below
  // any framework. Empty when the driver refuses.
  std::optional<double> MemsetLaunchUs(void* device_pointer) const {
    if (memset_async_ == nullptr || synchronize_ == nullptr) return std::nullopt;
    const auto pointer = static_cast<DevicePointer>(reinterpret_cast<uintptr_t>(device_pointer));
    for (int i = 0; i < 100; ++i) {
      if (memset_async_(pointer, 0, 1, nullptr) != 0) return std::nullopt;
    }
    synchronize_();
    constexpr int kLaunches = 2000;
    std::vector<double> samples;
    for (int r = 0; r < 3; ++r) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kLaunches; ++i) memset_async_(pointer, 0, 1, nullptr);
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      synchronize_();
      samples.push_back(us / kLaunches);
    }
    std::sort(samples.begin(), samples.end());
    return samples[1];
  }

 private:
  void* handle_;
  int (*init_)(unsigned) = nullptr;
  int (*get_attribute_)(int*, int, int) = nullptr;
  int (*driver_version_)(int*) = nullptr;
  int (*memset_async_)(DevicePointer, unsigned char, size_t, void*) = nullptr;
  int (*synchronize_)() = nullptr;
};
#endif

// Device-to-device (or RAM-to-RAM) copy: read + write traffic per second.
double MemoryBandwidthGbs(const Device& device) {
  const int64_t bytes = device.is_cuda() ? (int64_t{512} << 20) : (int64_t{64} << 20);
  auto options = torch::TensorOptions().dtype(torch::kUInt8).device(device.torch_device());
  torch::Tensor src = torch::ones({bytes}, options);
  torch::Tensor dst = torch::empty({bytes}, options);
  dst.copy_(src);  // warm-up: first touch, allocator
  const double ms = TimePerCallMs(device, device.is_cuda() ? 20 : 5, [&] { dst.copy_(src); });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

// Square matmul rate in TFLOP/s at a precision.
double MatmulTflops(const Device& device, Precision precision) {
  const int64_t n = device.is_cuda() ? 8192 : 512;
  MathModeScope math(precision);
  auto options =
      torch::TensorOptions().dtype(OperationDtype(precision)).device(device.torch_device());
  torch::Tensor a = torch::randn({n, n}, options);
  torch::Tensor b = torch::randn({n, n}, options);
  torch::Tensor c = torch::empty({n, n}, options);
  for (int i = 0; i < 3; ++i) torch::mm_out(c, a, b);
  const double ms = TimePerCallMs(device, 10, [&] { torch::mm_out(c, a, b); });
  return 2.0 * static_cast<double>(n * n * n) / (ms * 1e-3) / 1e12;
}

// Cost of one tiny operation issued back to back, device time included: on
// a CPU LibTorch's dispatch overhead.
double TinyOpLatencyUs(const Device& device) {
  torch::Tensor x = torch::zeros({1}, torch::TensorOptions().device(device.torch_device()));
  for (int i = 0; i < 100; ++i) x.add_(1);
  return 1e3 * TimePerCallMs(device, 2000, [&] { x.add_(1); });
}

// Raw kernel-launch cost: a driver-API launch on a GPU (the LibTorch tiny op
// where the driver refuses), the tiny op on a CPU.
double LaunchLatencyUs(const Device& device) {
#ifdef PERFCAST_AGENT_CUDA
  if (device.is_cuda()) {
    CudaDriver driver;
    torch::Tensor buffer = torch::zeros(
        {256}, torch::TensorOptions().dtype(torch::kUInt8).device(device.torch_device()));
    device.Synchronize();
    if (std::optional<double> us = driver.MemsetLaunchUs(buffer.data_ptr()); us.has_value()) {
      return *us;
    }
  }
#endif
  return TinyOpLatencyUs(device);
}

double HostToDeviceGbs(const Device& device, bool pinned) {
  const int64_t bytes = int64_t{256} << 20;
  torch::Tensor host = torch::ones({bytes}, torch::TensorOptions().dtype(torch::kUInt8));
  if (pinned) host = host.pin_memory();
  torch::Tensor dst = torch::empty(
      {bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device.torch_device()));
  dst.copy_(host);
  const double ms = TimePerCallMs(device, 5, [&] { dst.copy_(host, /*non_blocking=*/pinned); });
  return static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

void MeasureRates(const Device& device, models::MeasuredRates& rates) {
  rates.memory_bandwidth_gbs = MemoryBandwidthGbs(device);
  MeasureHostFeatures(device, rates);
  rates.fp32_tflops = MatmulTflops(device, Precision::kFp32);
  rates.fp64_tflops = MatmulTflops(device, Precision::kFp64);
  if (device.Supports(Precision::kTf32).ok()) {
    rates.tf32_tflops = MatmulTflops(device, Precision::kTf32);
  }
  if (device.is_cuda()) {
    rates.fp16_tflops = MatmulTflops(device, Precision::kFp16Amp);
    if (device.Supports(Precision::kBf16Amp).ok()) {
      rates.bf16_tflops = MatmulTflops(device, Precision::kBf16Amp);
    }
  }
}

#ifdef PERFCAST_AGENT_CUDA
// The GPU generation of a CUDA compute capability.
absl::string_view Architecture(int major, int minor) {
  switch (major) {
    case 6: return "pascal";
    case 7: return minor >= 5 ? "turing" : "volta";
    case 8: return minor >= 9 ? "ada" : "ampere";
    case 9: return "hopper";
    case 10:
    case 12: return "blackwell";
    default: return "unknown";
  }
}

// "580.65.06" from the kernel module, else the CUDA version the driver supports.
std::string DriverVersion(const CudaDriver& driver) {
  const std::string text = ReadFile("/proc/driver/nvidia/version");
  for (absl::string_view word : absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (!word.empty() && absl::ascii_isdigit(word[0]) && absl::StrContains(word, '.')) {
      return std::string(word);
    }
  }
  return absl::StrCat("cuda-", driver.Version());
}

void DescribeCudaDevice(const Device& device, models::Node& node) {
  const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
  const int index = device.torch_device().index();
  CudaDriver driver;
  models::GpuSpec& gpu = node.gpu;
  gpu.vendor_name = props->name;
  gpu.model = CatalogModelName(props->name);
  gpu.architecture = std::string(Architecture(props->major, props->minor));
  gpu.compute_capability = device.compute_capability();
  gpu.sm_count = props->multiProcessorCount;
  gpu.memory_gib = static_cast<double>(props->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  gpu.boost_clock_mhz = driver.Attribute(CudaDriver::kClockRateKhz, index) / 1e3;
  gpu.memory_bus_width_bits = driver.Attribute(CudaDriver::kMemoryBusWidthBits, index);
  gpu.l2_cache_mib = driver.Attribute(CudaDriver::kL2CacheBytes, index) / (1024.0 * 1024.0);
  // Double data rate: two transfers per memory clock.
  gpu.memory_bandwidth_gbs = 2.0 * driver.Attribute(CudaDriver::kMemoryClockRateKhz, index) *
                             1e3 * gpu.memory_bus_width_bits / 8.0 / 1e9;
  node.gpu_count = 1;
  node.host.driver_version = DriverVersion(driver);
  // The CUDA runtime LibTorch was built against.
  node.host.cuda_version =
      absl::StrCat(CUDART_VERSION / 1000, ".", (CUDART_VERSION % 1000) / 10);
}
#endif

}  // namespace

std::string CatalogModelName(absl::string_view cuda_device_name) {
  absl::StatusOr<models::GpuSpec> known =
      models::GpuCatalog::BuiltIn().FindByVendorName(cuda_device_name);
  return known.ok() ? known->model : std::string(cuda_device_name);
}

void MeasureHostFeatures(const Device& device, models::MeasuredRates& rates) {
  rates.dispatch_ops_per_s = DispatchOpsPerS(device, /*ops=*/5000, /*rounds=*/5);
  rates.launch_latency_us = LaunchLatencyUs(device);
  rates.cpu_single_thread_score = CpuSingleThreadScore();
  if (device.is_cuda()) {
    rates.h2d_pinned_gbs = HostToDeviceGbs(device, /*pinned=*/true);
    rates.h2d_pageable_gbs = HostToDeviceGbs(device, /*pinned=*/false);
  }
}

double DispatchOpsPerS(const Device& device, int ops, int rounds) {
  torch::Tensor x = torch::zeros({1}, torch::TensorOptions().device(device.torch_device()));
  for (int i = 0; i < 50; ++i) x.add_(1);
  device.Synchronize();
  std::vector<double> rates;
  for (int r = 0; r < std::max(1, rounds); ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < ops; ++i) x.add_(1);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    device.Synchronize();
    rates.push_back(ops / std::max(s, 1e-9));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

double CpuSingleThreadScore() {
  // xorshift64 with a data-dependent branch and multiply: integer ALU,
  // branch prediction and a dependency chain, no memory traffic.
  constexpr int64_t kOps = 50'000'000;
  uint64_t x = 88172645463325252ULL;
  uint64_t acc = 0;
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < kOps; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    acc += (x & 1) ? x * 3 : x >> 1;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  // Keeps the loop from being optimised away.
  if (acc == 42) std::printf(" ");
  return static_cast<double>(kOps) / seconds / 1e6;
}

absl::StatusOr<models::Node> Fingerprint(const DeviceOptions& options, absl::string_view name,
                                         bool measure_rates) {
  ASSIGN_OR_RETURN(Device device, Device::Open(options));
  models::Node node;
  node.source = models::NodeSource::kAgent;
  node.host.hostname = Hostname();
  node.host.cpu_model = CpuModel();
  node.host.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  node.host.torch_version = TORCH_VERSION;
  node.labels["device"] = device.is_cuda() ? "cuda" : "cpu";
  node.labels["threads"] = absl::StrCat(device.threads());
  RETURN_IF_ERROR(RunGuarded(device, [&]() -> absl::Status {
#ifdef PERFCAST_AGENT_CUDA
    if (device.is_cuda()) DescribeCudaDevice(device, node);
#endif
    if (!device.is_cuda()) {
      node.gpu_count = 0;
      node.gpu.model = absl::StrCat("cpu-", device.threads(), "t");
      node.gpu.vendor_name = node.host.cpu_model;
      node.gpu.architecture = "cpu";
      node.gpu.sm_count = device.threads();
      node.gpu.memory_gib = HostMemoryGib();
    }
    if (measure_rates) MeasureRates(device, node.measured);
    return absl::OkStatus();
  }));
  node.name = name.empty() ? absl::StrCat(node.host.hostname, "-", node.gpu.model) : std::string(name);
  node.registered_at_us = absl::ToUnixMicros(absl::Now());
  return node;
}

}  // namespace perfcast::profiler
