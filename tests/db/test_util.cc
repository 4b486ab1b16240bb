#include "tests/db/test_util.h"

#include <atomic>
#include <random>

#include "gtest/gtest.h"

namespace perfcast::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::random_device random;
  path_ = std::filesystem::temp_directory_path() /
          ("perfcast-test-" + std::to_string(random()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

models::Node SampleNode(const std::string& name, const std::string& gpu_model) {
  models::Node node;
  node.name = name;
  node.labels = {{"zone", "lab"}, {"rack", "r1"}};
  node.gpu_count = 8;
  node.gpu.model = gpu_model;
  node.gpu.vendor_name = "NVIDIA " + gpu_model;
  node.gpu.architecture = "hopper";
  node.gpu.compute_capability = "9.0";
  node.gpu.sm_count = 132;
  node.gpu.boost_clock_mhz = 1980;
  node.gpu.memory_gib = 80;
  node.gpu.memory_bus_width_bits = 5120;
  node.gpu.memory_bandwidth_gbs = 3350;
  node.gpu.fp32_tflops = 67;
  node.gpu.tf32_tflops = 494.7;
  node.gpu.fp16_tflops = 989.4;
  node.gpu.bf16_tflops = 989.4;
  node.gpu.fp64_tflops = 34;
  node.gpu.l2_cache_mib = 50;
  node.gpu.interconnect = "NVLink 900 GB/s";
  node.gpu.tdp_watts = 700;
  node.gpu.nvlink_gbs = 450;
  node.gpu.nvlink_gpus = 8;
  node.gpu.pcie_gbs = 63;
  node.gpu.network_gbs = 50;
  node.host.hostname = name + ".example";
  node.host.cpu_model = "Xeon";
  node.host.cpu_cores = 16;
  node.measured.memory_bandwidth_gbs = 2900.5;
  node.measured.launch_latency_us = 4.25;
  node.source = models::NodeSource::kAgent;
  return node;
}

models::Profile SampleProfile(const std::string& node, int seed) {
  models::Profile p;
  p.node_name = node;
  p.workload.kind = models::WorkloadKind::kOperation;
  p.workload.family = "gemm";
  p.workload.params = {{"m", 256 * (1 + seed % 4)}, {"n", 512}, {"k", 1024}, {"batch", 1}};
  p.workload.phase = models::Phase::kInference;
  p.workload.precision = seed % 2 == 0 ? models::Precision::kBf16Amp : models::Precision::kFp32;
  const double base = 0.1 + 0.01 * seed;
  p.iteration = {.count = 50, .mean_ms = base, .median_ms = base, .p95_ms = base * 1.1,
                 .stddev_ms = base * 0.02, .min_ms = base * 0.95, .max_ms = base * 1.2};
  p.phases.forward_ms = base;
  p.measured_at_us = 1'760'000'000'000'000 + seed;
  p.agent_version = "test";
  p.throughput_per_s = 1000.0 / base;
  return p;
}

}  // namespace perfcast::testing
