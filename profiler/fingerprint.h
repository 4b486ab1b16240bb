// The hardware fingerprint: what a node is (device properties, host, software
// versions) and how fast it measurably is (short micro-benchmarks of memory
// bandwidth, matmul rates per precision, kernel-launch latency, host->device
// copies and single-thread CPU speed). Takes a few seconds on a GPU.
#ifndef PERFCAST_PROFILER_FINGERPRINT_H_
#define PERFCAST_PROFILER_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"
#include "profiler/device_options.h"

namespace perfcast::profiler {

class Device;

// Describes this machine as a node named `name` (empty: "<hostname>-<model>").
// With `measure_rates`, also fills Node::measured. A CUDA node has
// gpu_count 1 and the catalog model name where the device name maps to one
// ("NVIDIA H100 80GB HBM3" -> "H100-SXM5-80GB"); a CPU node has gpu_count 0,
// model "cpu-<threads>t" and the host's rates. Errors as Device::Open.
absl::StatusOr<models::Node> Fingerprint(const DeviceOptions& options, absl::string_view name,
                                         bool measure_rates);

// The catalog model whose vendor_name is the CUDA device name
// (GpuCatalog::FindByVendorName), or the device name itself for a GPU the
// catalog does not hold: its spec-sheet fields then stay empty.
std::string CatalogModelName(absl::string_view cuda_device_name);

// A fixed, deterministic single-threaded integer workload; returns millions
// of its operations per second. Higher is faster; comparable across hosts.
double CpuSingleThreadScore();

// The framework's dispatch rate on `device`: `ops` tiny in-place ops queued
// through LibTorch without a synchronisation, per host second, timed after
// the device drained; the median of `rounds` rounds. On a GPU the host, not
// the device, is the limit: this is what decides the step time of small
// models, and it moves with the host (a virtual machine's cores are shared
// with other tenants: 1.3e5 to 1.9e5 ops/s within minutes on one H200
// machine), so the harnesses sample it right before their timed blocks.
double DispatchOpsPerS(const Device& device, int ops, int rounds);

// Tiny ops of the harnesses' host probe before timed blocks: a small share of
// a timed block (docs/code-evidence.md, "Host-bound steps"). Timed blocks end
// with the host waiting for the device, so the probe times the host alone.
inline constexpr int kHostProbeOps = 500;

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_FINGERPRINT_H_
