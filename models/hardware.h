// Hardware vocabulary: where a workload runs. A node is a machine with one
// kind of accelerator (or none: CPU nodes profile the host itself). Its
// features come from a vendor spec sheet (always) and from the agent's own
// measurements (when an agent ran there); the predictor prefers measured
// rates and falls back to spec rates scaled by learned efficiencies.
#ifndef PERFCAST_MODELS_HARDWARE_H_
#define PERFCAST_MODELS_HARDWARE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace perfcast::models {

// One accelerator model as its vendor's spec sheet describes it. Rates are
// dense (no structured sparsity). For a CPU "device", `architecture` is "cpu"
// and the rates describe the host processor.
struct GpuSpec {
  std::string model;               // catalog key, e.g. "H100-SXM5-80GB"
  std::string vendor_name;         // e.g. "NVIDIA H100 SXM5 80GB"
  std::string architecture;        // "volta", "ampere", "ada", "hopper", "cpu", ...
  std::string compute_capability;  // "9.0"
  int sm_count = 0;                // streaming multiprocessors (cores for a CPU)
  double boost_clock_mhz = 0;
  double memory_gib = 0;
  int memory_bus_width_bits = 0;
  double memory_bandwidth_gbs = 0;  // peak, GB/s (10^9 bytes)
  double fp32_tflops = 0;
  double tf32_tflops = 0;           // tensor-core TF32, dense
  double fp16_tflops = 0;           // tensor-core FP16, dense
  double bf16_tflops = 0;           // tensor-core BF16, dense
  double fp64_tflops = 0;
  double l2_cache_mib = 0;
  std::string interconnect;         // "NVLink 900 GB/s", "PCIe 5.0 x16"
  double tdp_watts = 0;
  // Links to other GPUs, per GPU and direction in GB/s; 0 means none or
  // unknown. The multi-GPU predictor prices collectives over them.
  double nvlink_gbs = 0;   // all of one GPU's NVLink links together
  int nvlink_gpus = 0;     // GPUs one NVLink domain joins at nvlink_gbs
                           // (8 behind NVSwitch, 2 for bridged pairs)
  double pcie_gbs = 0;     // the GPU's PCIe link to its host
  double network_gbs = 0;  // network between nodes, per GPU, in the
                           // reference server of this GPU (e.g. DGX)
  std::string vendor;      // "NVIDIA", "AMD"; empty when unknown
  double base_clock_mhz = 0;
  double fp8_tflops = 0;   // tensor-core FP8, dense (Hopper, Ada, Blackwell, CDNA3)
  double int8_tops = 0;    // tensor-core INT8, dense, tera-operations/s
  int pcie_generation = 0;  // of the GPU's host link: 3, 4, 5, 6

  friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// The host a device sits in, and the software stack the agent used.
struct HostSpec {
  std::string hostname;
  std::string cpu_model;
  int cpu_cores = 0;
  std::string driver_version;
  std::string cuda_version;
  std::string torch_version;
  // The interpreter and PyTorch the Python probe ran under (profiler/
  // python_probe.h); empty when it did not run.
  std::string python_version;
  std::string python_torch_version;

  friend bool operator==(const HostSpec&, const HostSpec&) = default;
};

// Rates the agent measured with micro-benchmarks on this node. Missing means
// not measured (a node registered from a spec sheet alone has none).
struct MeasuredRates {
  std::optional<double> memory_bandwidth_gbs;   // device copy bandwidth
  std::optional<double> fp32_tflops;            // matmul, per precision
  std::optional<double> tf32_tflops;
  std::optional<double> fp16_tflops;
  std::optional<double> bf16_tflops;
  std::optional<double> fp64_tflops;
  std::optional<double> launch_latency_us;      // empty kernel launch + sync amortised
  std::optional<double> h2d_pinned_gbs;         // host->device copy, pinned memory
  std::optional<double> h2d_pageable_gbs;       // host->device copy, pageable memory
  std::optional<double> cpu_single_thread_score;  // higher is faster; see profiler/
  std::optional<double> idle_power_watts;
  std::optional<double> dispatch_ops_per_s;     // LibTorch tiny ops queued without sync, /s
  // Host microseconds per tiny op queued without sync from a Python loop,
  // and from TorchScript's interpreter (C++) in the same probe: what a
  // user's Python loop pays per operation (profiler/python_probe.h).
  std::optional<double> python_op_us;
  std::optional<double> torchscript_op_us;
  // A GPU asked for by its catalog name, not a node: the Python probes
  // (python_op_us) stored for the registered nodes of that GPU model, one
  // per node. Not stored; the server fills it when it resolves the name.
  std::vector<double> python_op_us_of_gpu;

  friend bool operator==(const MeasuredRates&, const MeasuredRates&) = default;
};

// The most accelerators one node may declare. A node is one host; the
// largest single NVLink domains hold a few hundred GPUs, so anything above
// this is a typo or hostile input, not hardware.
inline constexpr int kMaxGpusPerNode = 1024;

// How a node entered the registry.
enum class NodeSource { kCatalog, kSpecFile, kAgent };

// A registered machine. `name` is unique in a store.
struct Node {
  int64_t id = 0;  // assigned by the store; 0 before registration
  std::string name;
  std::map<std::string, std::string> labels;
  int gpu_count = 1;  // 0 for a CPU-only node
  GpuSpec gpu;
  HostSpec host;
  MeasuredRates measured;
  NodeSource source = NodeSource::kCatalog;
  int64_t registered_at_us = 0;  // microseconds since the Unix epoch

  friend bool operator==(const Node&, const Node&) = default;
};

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_HARDWARE_H_
