// Which device the agent measures on. Plain C++ so that the command line and
// tests can state it without LibTorch headers.
#ifndef PERFCAST_PROFILER_DEVICE_OPTIONS_H_
#define PERFCAST_PROFILER_DEVICE_OPTIONS_H_

#include <cstdint>
#include <string>

namespace perfcast::profiler {

struct DeviceOptions {
  std::string device = "auto";  // "auto" (CUDA if present), "cuda" or "cpu"
  int threads = 0;              // LibTorch intra-op threads; 0 keeps its default
  uint64_t seed = 1;            // for inputs, weights and synthetic data
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_DEVICE_OPTIONS_H_
