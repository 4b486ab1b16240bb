#include "profiler/nvml.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace perfcast::profiler {
namespace {

// NVML's ABI: nvmlReturn_t is an int (0: success), nvmlDevice_t an opaque
// pointer, the enums below plain ints.
constexpr int kSuccess = 0;
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

template <typename F>
F Symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

struct Nvml::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*by_index)(unsigned, void**) = nullptr;
  int (*by_pci_bus_id)(const char*, void**) = nullptr;
  int (*total_energy)(void*, unsigned long long*) = nullptr;  // NOLINT(runtime/int): NVML's type
  int (*power_usage)(void*, unsigned*) = nullptr;
  int (*clock_info)(void*, int, unsigned*) = nullptr;
  int (*temperature)(void*, int, unsigned*) = nullptr;
};

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(
        absl::StrCat("NVML not available: ", error != nullptr ? error : library));
  }
  auto api = std::make_unique<Api>();
  api->init = Symbol<int (*)()>(handle, "nvmlInit_v2");
  api->shutdown = Symbol<int (*)()>(handle, "nvmlShutdown");
  api->error_string = Symbol<const char* (*)(int)>(handle, "nvmlErrorString");
  api->by_index = Symbol<int (*)(unsigned, void**)>(handle, "nvmlDeviceGetHandleByIndex_v2");
  api->by_pci_bus_id =
      Symbol<int (*)(const char*, void**)>(handle, "nvmlDeviceGetHandleByPciBusId_v2");
  api->total_energy = Symbol<int (*)(void*, unsigned long long*)>(  // NOLINT(runtime/int)
      handle, "nvmlDeviceGetTotalEnergyConsumption");
  api->power_usage = Symbol<int (*)(void*, unsigned*)>(handle, "nvmlDeviceGetPowerUsage");
  api->clock_info = Symbol<int (*)(void*, int, unsigned*)>(handle, "nvmlDeviceGetClockInfo");
  api->temperature = Symbol<int (*)(void*, int, unsigned*)>(handle, "nvmlDeviceGetTemperature");
  if (api->init == nullptr || api->shutdown == nullptr || api->by_index == nullptr) {
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat(library, " lacks NVML's entry points"));
  }
  if (const int code = api->init(); code != kSuccess) {
    std::string message = absl::StrCat("NVML error ", code);
    if (api->error_string != nullptr && api->error_string(code) != nullptr) {
      message = api->error_string(code);
    }
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat("nvmlInit failed: ", message));
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, std::move(api)));
}

Nvml::Nvml(void* handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(handle_);
}

std::string Nvml::Error(int code) const {
  if (api_->error_string != nullptr && api_->error_string(code) != nullptr) {
    return api_->error_string(code);
  }
  return absl::StrCat("NVML error ", code);
}

absl::StatusOr<GpuSensor> Nvml::Device(absl::string_view pci_bus_id, int index) const {
  void* device = nullptr;
  int code = 0;
  if (!pci_bus_id.empty() && api_->by_pci_bus_id != nullptr) {
    code = api_->by_pci_bus_id(std::string(pci_bus_id).c_str(), &device);
  }
  if (pci_bus_id.empty() || code != kSuccess) {
    // Also where NVML spells the bus id differently from CUDA.
    code = api_->by_index(static_cast<unsigned>(index), &device);
  }
  if (code != kSuccess) {
    return absl::NotFoundError(absl::StrCat("NVML has no GPU ",
                                            pci_bus_id.empty() ? absl::StrCat(index)
                                                               : std::string(pci_bus_id),
                                            ": ", Error(code)));
  }
  return GpuSensor(this, device);
}

std::optional<double> GpuSensor::EnergyJ() const {
  unsigned long long mj = 0;  // NOLINT(runtime/int)
  if (nvml_->api_->total_energy == nullptr ||
      nvml_->api_->total_energy(device_, &mj) != kSuccess) {
    return std::nullopt;
  }
  return static_cast<double>(mj) / 1e3;
}

std::optional<double> GpuSensor::PowerW() const {
  unsigned mw = 0;
  if (nvml_->api_->power_usage == nullptr || nvml_->api_->power_usage(device_, &mw) != kSuccess) {
    return std::nullopt;
  }
  return mw / 1e3;
}

std::optional<double> GpuSensor::SmClockMhz() const {
  unsigned mhz = 0;
  if (nvml_->api_->clock_info == nullptr ||
      nvml_->api_->clock_info(device_, kClockSm, &mhz) != kSuccess) {
    return std::nullopt;
  }
  return mhz;
}

std::optional<double> GpuSensor::TemperatureC() const {
  unsigned celsius = 0;
  if (nvml_->api_->temperature == nullptr ||
      nvml_->api_->temperature(device_, kTemperatureGpu, &celsius) != kSuccess) {
    return std::nullopt;
  }
  return celsius;
}

void BlockMonitor::BeginBlock() {
  if (sensor_ != nullptr) energy_start_j_ = sensor_->EnergyJ();
  block_start_ = Clock::now();
}

void BlockMonitor::EndBlock() {
  const Clock::time_point end = Clock::now();
  const double seconds = std::chrono::duration<double>(end - block_start_).count();
  timed_s_ += seconds;
  if (sensor_ == nullptr) return;
  if (energy_start_j_.has_value()) {
    if (std::optional<double> energy = sensor_->EnergyJ();
        energy.has_value() && *energy >= *energy_start_j_) {
      energy_j_ += *energy - *energy_start_j_;
      energy_s_ += seconds;
    }
  }
  if (std::optional<double> power = sensor_->PowerW(); power.has_value()) {
    power_sum_w_ += *power;
    ++power_samples_;
  }
  if (std::optional<double> clock = sensor_->SmClockMhz(); clock.has_value()) {
    clock_sum_mhz_ += *clock;
    ++clock_samples_;
  }
  temperature_c_ = sensor_->TemperatureC();
}

GpuState BlockMonitor::State() const {
  GpuState state;
  state.timed_s = timed_s_;
  // The counter has millijoule resolution: it needs blocks of some length.
  if (energy_s_ > 0.01 && energy_j_ > 0) {
    state.board_power_w = energy_j_ / energy_s_;
  } else if (power_samples_ > 0) {
    state.board_power_w = power_sum_w_ / power_samples_;
  }
  if (clock_samples_ > 0) state.sm_clock_mhz = clock_sum_mhz_ / clock_samples_;
  state.temperature_c = temperature_c_;
  return state;
}

}  // namespace perfcast::profiler
