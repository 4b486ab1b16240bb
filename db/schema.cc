#include "db/schema.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::db {

const std::vector<absl::string_view>& Migrations() {
  static const auto* const kMigrations = new std::vector<absl::string_view>{
      // v1: nodes with their hardware features, workloads, profiles.
      R"sql(
CREATE TABLE nodes (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  labels TEXT NOT NULL,
  gpu_count INTEGER NOT NULL,
  gpu_model TEXT NOT NULL,
  gpu_vendor_name TEXT NOT NULL,
  architecture TEXT NOT NULL,
  compute_capability TEXT NOT NULL,
  sm_count INTEGER NOT NULL,
  boost_clock_mhz REAL NOT NULL,
  memory_gib REAL NOT NULL,
  memory_bus_width_bits INTEGER NOT NULL,
  memory_bandwidth_gbs REAL NOT NULL,
  fp32_tflops REAL NOT NULL,
  tf32_tflops REAL NOT NULL,
  fp16_tflops REAL NOT NULL,
  bf16_tflops REAL NOT NULL,
  fp64_tflops REAL NOT NULL,
  l2_cache_mib REAL NOT NULL,
  interconnect TEXT NOT NULL,
  hostname TEXT NOT NULL,
  cpu_model TEXT NOT NULL,
  cpu_cores INTEGER NOT NULL,
  driver_version TEXT NOT NULL,
  cuda_version TEXT NOT NULL,
  torch_version TEXT NOT NULL,
  measured_bandwidth_gbs REAL,
  measured_fp32_tflops REAL,
  measured_tf32_tflops REAL,
  measured_fp16_tflops REAL,
  measured_bf16_tflops REAL,
  measured_fp64_tflops REAL,
  launch_latency_us REAL,
  h2d_pinned_gbs REAL,
  h2d_pageable_gbs REAL,
  cpu_single_thread_score REAL,
  registered_at_us INTEGER NOT NULL
) STRICT;
CREATE INDEX nodes_by_gpu_model ON nodes(gpu_model);

CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  family TEXT NOT NULL,
  batch_size INTEGER NOT NULL,
  precision TEXT NOT NULL,
  phase TEXT NOT NULL
) STRICT;
CREATE INDEX workloads_by_family ON workloads(family);

CREATE TABLE profiles (
  id INTEGER PRIMARY KEY,
  content_hash BLOB NOT NULL UNIQUE,
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  measured_at_us INTEGER NOT NULL,
  agent_version TEXT NOT NULL,
  iterations INTEGER NOT NULL,
  mean_ms REAL NOT NULL,
  median_ms REAL NOT NULL,
  p95_ms REAL NOT NULL,
  stddev_ms REAL NOT NULL,
  min_ms REAL NOT NULL,
  max_ms REAL NOT NULL,
  data_load_ms REAL,
  h2d_ms REAL,
  forward_ms REAL,
  backward_ms REAL,
  optimizer_ms REAL,
  repeats INTEGER NOT NULL,
  repeat_cv REAL,
  epoch_s REAL,
  throughput_per_s REAL,
  peak_memory_bytes REAL
) STRICT;
CREATE INDEX profiles_by_node ON profiles(node_id);
CREATE INDEX profiles_by_workload ON profiles(workload_id);
CREATE INDEX profiles_by_time ON profiles(measured_at_us);
)sql",
      // v2: fitted models, skipped agent configurations, the roofline view of
      // each profile, the node's idle power, and analytic workload columns.
      R"sql(
CREATE TABLE models (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  target TEXT NOT NULL,
  summary TEXT NOT NULL,
  cv_mape REAL NOT NULL,
  created_at_us INTEGER NOT NULL,
  payload TEXT NOT NULL,
  UNIQUE (name, version)
) STRICT;

CREATE TABLE skipped_runs (
  id INTEGER PRIMARY KEY,
  node_name TEXT NOT NULL,
  workload_key TEXT NOT NULL,
  reason TEXT NOT NULL,
  at_us INTEGER NOT NULL
) STRICT;

ALTER TABLE profiles ADD COLUMN achieved_tflops REAL;
ALTER TABLE profiles ADD COLUMN roofline_fraction REAL;
ALTER TABLE nodes ADD COLUMN tdp_watts REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN idle_power_watts REAL;
ALTER TABLE workloads ADD COLUMN parameters REAL;
ALTER TABLE workloads ADD COLUMN total_flops REAL;
ALTER TABLE workloads ADD COLUMN inner_modules INTEGER;
)sql",
      // v3: the measurement method of each profile and the host and GPU
      // conditions it ran under (models::RunConditions); the node's dispatch
      // rate. Rows stored before are method 1 without conditions.
      R"sql(
ALTER TABLE profiles ADD COLUMN method_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE profiles ADD COLUMN dispatch_ops_per_s REAL;
ALTER TABLE profiles ADD COLUMN launch_latency_us REAL;
ALTER TABLE profiles ADD COLUMN cpu_single_thread_score REAL;
ALTER TABLE profiles ADD COLUMN h2d_pinned_gbs REAL;
ALTER TABLE profiles ADD COLUMN h2d_pageable_gbs REAL;
ALTER TABLE profiles ADD COLUMN board_power_w REAL;
ALTER TABLE profiles ADD COLUMN sm_clock_mhz REAL;
ALTER TABLE profiles ADD COLUMN gpu_temperature_c REAL;
ALTER TABLE nodes ADD COLUMN dispatch_ops_per_s REAL;
)sql",
      // v4: the links between GPUs, for multi-GPU predictions.
      R"sql(
ALTER TABLE nodes ADD COLUMN nvlink_gbs REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN nvlink_gpus INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN pcie_gbs REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN network_gbs REAL NOT NULL DEFAULT 0;
)sql",
      // v5: profiles keep two indexes: the content hash's (duplicates) and
      // the node's (scans by node or GPU, deregistration). Each index costs
      // every imported row a B-tree insert, so dropping the workload and time
      // indexes made imports markedly faster (README.md, Storage).
      // Scans by family or time read the table in id order instead, which
      // their results keep anyway; the time index even slowed every scan
      // without bounds (the bounds default to all of time), which SQLite read
      // through it and then sorted back into id order.
      R"sql(
DROP INDEX IF EXISTS profiles_by_workload;
DROP INDEX IF EXISTS profiles_by_time;
)sql",
      // v6: the catalog's vendor, base clock, FP8 and INT8 rates, PCIe generation.
      R"sql(
ALTER TABLE nodes ADD COLUMN gpu_vendor TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN base_clock_mhz REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN fp8_tflops REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN int8_tops REAL NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN pcie_generation INTEGER NOT NULL DEFAULT 0;
)sql",
      // v7: the Python probe (profiler/python_probe.h): host microseconds per
      // operation dispatched from Python and from TorchScript, on the node and
      // with each profile, and the Python and PyTorch it ran under. Rows
      // stored before have none (not measured).
      R"sql(
ALTER TABLE nodes ADD COLUMN python_version TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN python_torch_version TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN python_op_us REAL;
ALTER TABLE nodes ADD COLUMN torchscript_op_us REAL;
ALTER TABLE profiles ADD COLUMN python_op_us REAL;
ALTER TABLE profiles ADD COLUMN torchscript_op_us REAL;
)sql",
      // v8: the loop that measured an imported profile ("python", "cpp");
      // empty for every row before (models::MeasuredLoop's default).
      R"sql(
ALTER TABLE profiles ADD COLUMN measured_loop TEXT NOT NULL DEFAULT '';
)sql",
  };
  return *kMigrations;
}

absl::StatusOr<int64_t> CheckStore(Connection& connection) {
  // Reading the header is the first thing that fails on a non-SQLite file.
  absl::StatusOr<int64_t> app = connection.QueryInt("PRAGMA application_id");
  if (!app.ok()) {
    return absl::DataLossError(absl::StrCat("not an SQLite database (", app.status().message(), ")"));
  }
  ASSIGN_OR_RETURN(int64_t version, connection.QueryInt("PRAGMA user_version"));
  ASSIGN_OR_RETURN(int64_t tables,
      connection.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"));
  if (*app == 0 && tables == 0 && version == 0) return 0;  // fresh file
  if (*app != kApplicationId && *app != kAgentApplicationId) {
    return absl::FailedPreconditionError(
        "the file is an SQLite database of another application (no perfcast schema)");
  }
  if (version > CurrentSchemaVersion()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the store has schema version ", version, " but this build knows only up to ",
        CurrentSchemaVersion(), "; upgrade perfcast"));
  }
  return version;
}

absl::Status Migrate(Connection& connection, int64_t target_version) {
  if (target_version < 0) target_version = CurrentSchemaVersion();
  ASSIGN_OR_RETURN(int64_t version, CheckStore(connection));
  for (int64_t v = version; v < target_version; ++v) {
    RETURN_IF_ERROR(InTransaction(connection, [&]() -> absl::Status {
      if (v == 0) {
        RETURN_IF_ERROR(connection.Execute(
            absl::StrCat("PRAGMA application_id = ", kApplicationId)));
      }
      if (absl::Status s = connection.Execute(Migrations()[v]); !s.ok()) {
        return absl::InternalError(
            absl::StrCat("migration to schema version ", v + 1, " failed: ", s.message()));
      }
      return connection.Execute(absl::StrCat("PRAGMA user_version = ", v + 1));
    }));
  }
  return absl::OkStatus();
}

}  // namespace perfcast::db
