#include "models/profile.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "models/content_hash.h"
#include "xxhash.h"

namespace perfcast::models {
namespace {

// Longer than any run could take (about 30 years): beyond it a time is a
// unit mix-up or hostile input, and it would swamp every fit.
constexpr double kMaxTimeMs = 1e12;
// Free-text fields are names and versions, not documents.
constexpr size_t kMaxNodeNameLength = 253;
constexpr size_t kMaxTextLength = 256;
// When a run may have been measured: not before 1900 and not more than a day
// ahead of this machine's clock (agents' clocks drift; a time past that is a
// unit mix-up, such as nanoseconds, or hostile input).
constexpr int64_t kEarliestMeasuredAtUs = -2'208'988'800'000'000;  // 1900-01-01
constexpr int64_t kClockSkewUs = int64_t{86'400} * 1'000'000;

int64_t LatestMeasuredAtUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         kClockSkewUs;
}

absl::Status CheckTime(absl::string_view field, double value) {
  if (!std::isfinite(value) || value < 0 || value > kMaxTimeMs) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must be a finite number of milliseconds in [0, ", kMaxTimeMs, "], got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckOptional(absl::string_view field, const std::optional<double>& value) {
  // Above any byte count, rate or time a run reports (1 EB, 1e18/s, ...).
  constexpr double kMaxValue = 1e18;
  if (!value.has_value()) return absl::OkStatus();
  if (!std::isfinite(*value) || *value < 0 || *value > kMaxValue) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must be finite, non-negative and at most ", kMaxValue, ", got ", *value));
  }
  return absl::OkStatus();
}

// Every run condition with its name, for validation and hashing.
std::array<std::pair<absl::string_view, const std::optional<double>*>, 10> ConditionFields(
    const RunConditions& c) {
  return {{{"dispatch_ops_per_s", &c.dispatch_ops_per_s},
           {"launch_latency_us", &c.launch_latency_us},
           {"cpu_single_thread_score", &c.cpu_single_thread_score},
           {"h2d_pinned_gbs", &c.h2d_pinned_gbs},
           {"h2d_pageable_gbs", &c.h2d_pageable_gbs},
           {"board_power_w", &c.board_power_w},
           {"sm_clock_mhz", &c.sm_clock_mhz},
           {"gpu_temperature_c", &c.gpu_temperature_c},
           {"python_op_us", &c.python_op_us},
           {"torchscript_op_us", &c.torchscript_op_us}}};
}

// Run conditions are rates, times and readings a machine reports: positive,
// and far below 1e18 (ops/s, GB/s, MHz, W). A temperature may be below zero,
// but not below absolute zero nor above what any chip survives.
absl::Status CheckConditions(const RunConditions& c) {
  constexpr double kMaxValue = 1e18;
  for (auto [field, value] : ConditionFields(c)) {
    if (value == &c.gpu_temperature_c) continue;
    // Written so that NaN fails too.
    if (value->has_value() && !(**value > 0 && **value <= kMaxValue)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " must be finite, positive and at most ", kMaxValue, ", got ", **value));
    }
  }
  constexpr double kAbsoluteZeroC = -273.15;
  constexpr double kMaxTemperatureC = 1000;
  if (c.gpu_temperature_c.has_value() &&
      !(*c.gpu_temperature_c >= kAbsoluteZeroC && *c.gpu_temperature_c <= kMaxTemperatureC)) {
    return absl::InvalidArgumentError(absl::StrCat("gpu_temperature_c must be in [",
                                                   kAbsoluteZeroC, ", ", kMaxTemperatureC,
                                                   "] C, got ", *c.gpu_temperature_c));
  }
  return absl::OkStatus();
}

// Appends a field to the hash input with an unambiguous framing.
void Put(std::string& out, absl::string_view text) {
  absl::StrAppend(&out, text.size(), ":", text, ";");
}
void Put(std::string& out, double value) {
  char bytes[sizeof(double)];
  std::memcpy(bytes, &value, sizeof value);
  out.append(bytes, sizeof bytes);
}
void Put(std::string& out, const std::optional<double>& value) {
  out.push_back(value.has_value() ? '1' : '0');
  if (value.has_value()) Put(out, *value);
}

}  // namespace

bool MeasuredByAgent(const Profile& profile) {
  return absl::StartsWith(profile.agent_version, kAgentVersionPrefix);
}

Loop MeasuredLoop(const Profile& profile) {
  if (profile.loop == LoopName(Loop::kCpp)) return Loop::kCpp;
  if (profile.loop == LoopName(Loop::kPython)) return Loop::kPython;
  return MeasuredByAgent(profile) ? Loop::kCpp : Loop::kPython;
}

WorkloadSpec MeasuredWorkload(const Profile& profile) {
  WorkloadSpec spec = profile.workload;
  if (spec.precision == Precision::kFp32 && profile.method_version <= 4 &&
      MeasuredByAgent(profile)) {
    spec.precision = Precision::kStrictFp32;
  }
  return spec;
}

absl::Status ValidateProfile(const Profile& profile) {
  if (profile.node_name.empty()) return absl::InvalidArgumentError("profile has no node");
  if (profile.node_name.size() > kMaxNodeNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("node name is too long (",
                                                   profile.node_name.size(), " bytes, at most ",
                                                   kMaxNodeNameLength, ")"));
  }
  if (profile.agent_version.size() > kMaxTextLength ||
      profile.workload.family.size() > kMaxTextLength ||
      profile.workload.optimizer.size() > kMaxTextLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "agent version, family and optimizer must be at most ", kMaxTextLength, " bytes"));
  }
  if (profile.workload.family.empty()) {
    return absl::InvalidArgumentError("profile workload has no family");
  }
  if (!profile.loop.empty() && profile.loop != LoopName(Loop::kPython) &&
      profile.loop != LoopName(Loop::kCpp)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loop must be python or cpp (or empty: the importer's default), got '",
        absl::CEscape(profile.loop.substr(0, 64)), "'"));
  }
  if (profile.workload.batch_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size must be positive, got ", profile.workload.batch_size));
  }
  for (const auto& [name, value] : profile.workload.params) {
    if (value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", name, " must be non-negative, got ", value));
    }
  }
  const TimingStats& t = profile.iteration;
  if (t.count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("iteration count must be at least 1, got ", t.count));
  }
  for (auto [field, value] : {std::pair<absl::string_view, double>{"mean_ms", t.mean_ms},
                              {"median_ms", t.median_ms},
                              {"p95_ms", t.p95_ms},
                              {"stddev_ms", t.stddev_ms},
                              {"min_ms", t.min_ms},
                              {"max_ms", t.max_ms}}) {
    RETURN_IF_ERROR(CheckTime(field, value));
  }
  if (t.mean_ms <= 0) return absl::InvalidArgumentError("mean_ms must be positive");
  if (t.max_ms < t.min_ms || t.mean_ms < t.min_ms || t.mean_ms > t.max_ms ||
      t.median_ms < t.min_ms || t.median_ms > t.max_ms) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "inconsistent timing statistics: min %g, mean %g, median %g, max %g", t.min_ms,
        t.mean_ms, t.median_ms, t.max_ms));
  }
  const PhaseBreakdown& p = profile.phases;
  for (auto [field, value] :
       {std::pair<absl::string_view, const std::optional<double>&>{"data_load_ms", p.data_load_ms},
        {"h2d_ms", p.h2d_ms},
        {"forward_ms", p.forward_ms},
        {"backward_ms", p.backward_ms},
        {"optimizer_ms", p.optimizer_ms},
        {"repeat_cv", profile.repeat_cv},
        {"epoch_s", profile.epoch_s},
        {"throughput_per_s", profile.throughput_per_s},
        {"peak_memory_bytes", profile.peak_memory_bytes},
        {"achieved_tflops", profile.achieved_tflops},
        {"roofline_fraction", profile.roofline_fraction}}) {
    RETURN_IF_ERROR(CheckOptional(field, value));
  }
  if (profile.measured_at_us < kEarliestMeasuredAtUs ||
      profile.measured_at_us > LatestMeasuredAtUs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "measured_at_us must be microseconds since the Unix epoch between 1900 and a day from "
        "now, got ",
        profile.measured_at_us));
  }
  if (profile.repeats < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats must be at least 1, got ", profile.repeats));
  }
  if (profile.method_version < 1 || profile.method_version > kCurrentMethodVersion) {
    return absl::InvalidArgumentError(absl::StrCat("method_version must be in [1, ",
                                                   kCurrentMethodVersion, "], got ",
                                                   profile.method_version));
  }
  return CheckConditions(profile.conditions);
}

std::string ComputeContentHash(const Profile& profile) {
  const ContentHashBytes bytes = ComputeContentHashBytes(profile, profile.workload.Key());
  return absl::BytesToHexString(absl::string_view(bytes.data(), bytes.size()));
}

ContentHashBytes ComputeContentHashBytes(const Profile& profile, absl::string_view workload_key) {
  std::string in;
  in.reserve(256);
  Put(in, profile.node_name);
  Put(in, workload_key);
  const TimingStats& t = profile.iteration;
  Put(in, static_cast<double>(t.count));
  for (double v : {t.mean_ms, t.median_ms, t.p95_ms, t.stddev_ms, t.min_ms, t.max_ms}) Put(in, v);
  const PhaseBreakdown& p = profile.phases;
  for (const auto* v : {&p.data_load_ms, &p.h2d_ms, &p.forward_ms, &p.backward_ms,
                        &p.optimizer_ms}) {
    Put(in, *v);
  }
  Put(in, static_cast<double>(profile.repeats));
  Put(in, static_cast<double>(profile.measured_at_us));
  Put(in, profile.agent_version);
  // Fields added later join only when set, each behind its own name, so
  // every profile stored before they existed keeps its hash (and re-imports
  // as a duplicate) while two runs that differ in them never collide.
  if (profile.method_version != 1) {
    Put(in, "method_version");
    Put(in, static_cast<double>(profile.method_version));
  }
  if (!profile.loop.empty()) {
    Put(in, "loop");
    Put(in, profile.loop);
  }
  for (auto [name, value] : ConditionFields(profile.conditions)) {
    if (!value->has_value()) continue;
    Put(in, name);
    Put(in, **value);
  }
  const XXH128_hash_t h = XXH3_128bits(in.data(), in.size());
  ContentHashBytes bytes;
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<char>(h.high64 >> (56 - 8 * i));
    bytes[8 + i] = static_cast<char>(h.low64 >> (56 - 8 * i));
  }
  return bytes;
}

}  // namespace perfcast::models
