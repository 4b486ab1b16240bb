// Profile vocabulary: one timed run of a workload on a node, as an agent
// measured it or as it was imported from elsewhere.
#ifndef PERFCAST_MODELS_PROFILE_H_
#define PERFCAST_MODELS_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "models/workload.h"

namespace perfcast::models {

// Statistics of per-iteration (model) or per-call (operation) time over the
// timed iterations of a run, warm-up excluded. Milliseconds.
struct TimingStats {
  int64_t count = 0;  // timed iterations
  double mean_ms = 0;
  double median_ms = 0;
  double p95_ms = 0;
  double stddev_ms = 0;
  double min_ms = 0;
  double max_ms = 0;

  friend bool operator==(const TimingStats&, const TimingStats&) = default;
};

// Mean time per iteration spent in each phase of a training step (or of an
// inference batch, which has no backward or optimizer phase). Milliseconds;
// missing where the run did not separate that phase.
struct PhaseBreakdown {
  std::optional<double> data_load_ms;  // producing the batch on the host
  std::optional<double> h2d_ms;        // host -> device copy
  std::optional<double> forward_ms;
  std::optional<double> backward_ms;
  std::optional<double> optimizer_ms;

  friend bool operator==(const PhaseBreakdown&, const PhaseBreakdown&) = default;
};

// Version of the measurement method that produced a profile. 1: per-step host
// sync with the synthetic data generated inside the step (data before this
// version); 2: steady state (prefetched pinned batches, no per-step sync, timed
// blocks, converged warm-up, >= 5 repeats over two passes); 3: method 2 with
// the proxies' Linear layers run as Python's nn.Linear runs them (bias in the
// GEMM, autocast casting it: FusedLinear in models/torch/layers.h): version 2
// timed a separate bias add after every Linear of rank-3 inputs, up to a
// quarter of a bf16 transformer step, so its profiles of the families with
// such layers (transformer, decoder with biases, bert, vit, lstm/cnn heads are
// rank 2 and unchanged) are slower than what users run; 4: method 3 with the
// optimizer step as PyTorch runs it on a GPU (multi-tensor "foreach" Adam,
// AdamW and SGD, models/torch/optimizers.h): version 3 updated one tensor at
// a time as LibTorch's C++ optimizers do, slower than PyTorch's default
// (docs/code-evidence.md, "The optimizer step"), and its optimizer allocated
// no per-parameter temporaries (memory peaks of many-parameter models differ).
// Inference and CPU profiles time what version 3 timed. 5: precision names
// mean what PyTorch does (models::Precision): fp32 lets cuDNN run convolutions
// in TF32, and cudnn.benchmark is on for every precision; up to version 4 the
// agent ran fp32 with TF32 nowhere (now strict-fp32) and benchmark off, so an
// agent's fp32 profile of version 4 or older is read as strict-fp32
// (MeasuredWorkload).
inline constexpr int kCurrentMethodVersion = 5;

// The host and GPU state a profile was measured under. Missing means not
// measured (older agents, no GPU, or a driver without NVML).
struct RunConditions {
  // LibTorch tiny ops queued without sync, /s: the median of the probes
  // right before this profile's timed blocks (agents from 2026-11-26 on:
  // the host moves within minutes), else the mean of the run's start and end.
  std::optional<double> dispatch_ops_per_s;
  std::optional<double> launch_latency_us;        // raw CUDA kernel launch latency (run mean)
  std::optional<double> cpu_single_thread_score;  // as MeasuredRates (run mean)
  std::optional<double> h2d_pinned_gbs;
  std::optional<double> h2d_pageable_gbs;
  std::optional<double> board_power_w;            // mean over this profile's timed blocks
  std::optional<double> sm_clock_mhz;             // mean over this profile's timed blocks
  std::optional<double> gpu_temperature_c;        // at the end of this profile's timed blocks
  std::optional<double> python_op_us;       // as MeasuredRates: the run's Python probe
  std::optional<double> torchscript_op_us;  // as MeasuredRates: the run's Python probe

  friend bool operator==(const RunConditions&, const RunConditions&) = default;
};

struct Profile {
  int64_t id = 0;          // assigned by the store
  std::string node_name;   // the node it ran on
  WorkloadSpec workload;
  TimingStats iteration;
  PhaseBreakdown phases;
  int repeats = 1;                     // independent repeats the stats pool
  std::optional<double> repeat_cv;     // stddev/mean of per-repeat mean times
  std::optional<double> epoch_s;       // time for one pass over the data set
  std::optional<double> throughput_per_s;  // samples (or calls) per second
  std::optional<double> peak_memory_bytes;
  std::optional<double> achieved_tflops;   // analytic FLOPs / mean time
  std::optional<double> roofline_fraction;  // achieved / measured peak rate
  int64_t measured_at_us = 0;  // microseconds since the Unix epoch
  std::string agent_version;   // "perfcast-agent 0.1.0", "csv-import", ...
  int method_version = 1;      // see kCurrentMethodVersion
  // The loop that measured it, as LoopName says it ("python", "cpp"), for a
  // run imported from elsewhere that says so; empty: MeasuredLoop's default.
  std::string loop;
  RunConditions conditions;
  std::string content_hash;    // 32 hex digits; see ComputeContentHash()

  friend bool operator==(const Profile&, const Profile&) = default;
};

// What an agent writes as a profile's agent_version, before its version:
// "perfcast-agent 0.1.0". Profiles imported from elsewhere (a CSV of a user's
// own runs, public measurements) carry another name ("file-import", ...).
inline constexpr char kAgentVersionPrefix[] = "perfcast-agent";

// Whether `profile` was measured by a perfcast agent (its agent_version says
// so) rather than imported from elsewhere: measurement methods order agent
// runs, while an imported run is a measurement of its own kind.
bool MeasuredByAgent(const Profile& profile);

// The loop whose step `profile` measured: its `loop` where set; else an
// agent's run is its C++ loop and a run imported from elsewhere (a user's
// own, the plain PyTorch loop's) a Python loop's. A prediction compared with
// a profile prices this loop.
Loop MeasuredLoop(const Profile& profile);

// The workload `profile` measured, in today's precision names: an agent's
// fp32 profile of method version 4 or older ran with TF32 nowhere and is
// strict-fp32; everything else is its workload as stored.
WorkloadSpec MeasuredWorkload(const Profile& profile);

// Checks what a stored profile must satisfy: a node, a valid workload key,
// finite non-negative times (at most 1e12 ms), count >= 1, median/p95
// consistent with min/max, names and versions of bounded length, a method
// version in [1, kCurrentMethodVersion], a loop that is empty, "python" or
// "cpp", a measurement time between 1900 and a
// day ahead of this machine's clock, run conditions finite, positive and
// bounded (a temperature in [-273.15, 1000] C). InvalidArgument names the
// first offending field.
absl::Status ValidateProfile(const Profile& profile);

// A 128-bit hash (hex) of everything that identifies the measured run: node,
// workload key, timing statistics, phases, timestamp, agent version, and the
// method version and run conditions where they are not the defaults (so a
// profile without them hashes as it did before they existed). The same run
// imported twice hashes the same; it ignores `id` and the hash.
std::string ComputeContentHash(const Profile& profile);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_PROFILE_H_
