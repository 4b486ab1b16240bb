// Board power of a running step, for the energy a job takes.
//
// Agents record the mean board power over each profile's timed blocks. Power
// divided by the GPU's spec TDP (its utilisation) travels across GPUs far
// better than watts do, so the model learns the median utilisation per model
// family and precision (falling back to the family, then to all profiles) and
// prices a GPU's draw as its TDP times that utilisation. Where nothing was
// measured, a default utilisation stands in, and the estimate says so.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_POWER_H_
#define PERFCAST_PREDICTOR_POWER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/types/span.h"
#include "models/hardware.h"
#include "models/workload.h"

namespace perfcast::predictor {

// A training step rarely holds a GPU at its TDP; large dense steps run at
// 0.7-0.9 of it and small ones far below. The default is an assumption, used
// only where no profile measured power.
inline constexpr double kDefaultUtilisation = 0.7;

// One measured step: the board power while it ran on a GPU of known TDP.
struct PowerSample {
  std::string family;
  std::string precision;  // models::PrecisionName
  double tdp_watts = 0;
  double board_power_w = 0;
};

struct PowerCalibration {
  std::string scope;  // "lstm/bf16-amp", "lstm" or "*"
  double utilisation = 0;  // median board power / TDP
  double p10 = 0;          // 10th and 90th percentiles of utilisation
  double p90 = 0;
  int64_t rows = 0;

  friend bool operator==(const PowerCalibration&, const PowerCalibration&) = default;
};

struct PowerModel {
  std::map<std::string, PowerCalibration> calibrations;  // keyed by scope

  bool empty() const { return calibrations.empty(); }
  friend bool operator==(const PowerModel&, const PowerModel&) = default;
};

// Learns utilisations from samples with a positive TDP and power (others
// are skipped); a scope needs kMinPowerRows samples.
inline constexpr int64_t kMinPowerRows = 5;
PowerModel FitPower(absl::Span<const PowerSample> samples);

struct PowerEstimate {
  double watts = 0;        // per GPU
  double utilisation = 0;  // of TDP
  bool measured = false;   // from a learned utilisation, not the default
  // For people: "measured: median 0.62 of TDP over 48 lstm/bf16-amp
  // profiles" or "spec TDP x default utilisation 0.70 (no power measured)".
  std::string source;
};

// Zero watts (with a source saying why) when the GPU's TDP is unknown.
PowerEstimate EstimatePower(const PowerModel& model, const models::WorkloadSpec& spec,
                            const models::GpuSpec& gpu);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_POWER_H_
