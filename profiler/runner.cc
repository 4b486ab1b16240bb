#include "profiler/runner.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "models/profile.h"
#include "profiler/stats.h"

namespace perfcast::profiler {
namespace {

absl::Status UpsertNode(db::Store& store, const models::Node& node) {
  ASSIGN_OR_RETURN(std::unique_ptr<db::ImportTransaction> import, store.BeginImport());
  RETURN_IF_ERROR(import->UpsertNode(node));
  return import->Commit().status();
}

// Exceptions from deep inside a framework carry multi-line backtraces; the
// first line is the message.
std::string FirstLine(absl::string_view text) {
  return std::string(*absl::StrSplit(text, '\n').begin());
}

absl::StatusOr<Measurement> MeasureGuarded(Measurer& measurer, const models::WorkloadSpec& spec,
                                           const TimingPolicy& timing, int pass) {
  try {
    return measurer.Measure(spec, timing, pass);
  } catch (const std::exception& e) {
    return absl::InternalError(FirstLine(e.what()));
  }
}

absl::StatusOr<models::MeasuredRates> MeasureHostGuarded(Measurer& measurer) {
  try {
    return measurer.MeasureHost();
  } catch (const std::exception& e) {
    return absl::InternalError(FirstLine(e.what()));
  }
}

// The fields of MeasuredRates that describe the host rather than the GPU.
constexpr std::optional<double> models::MeasuredRates::*kHostFeatures[] = {
    &models::MeasuredRates::dispatch_ops_per_s, &models::MeasuredRates::launch_latency_us,
    &models::MeasuredRates::cpu_single_thread_score, &models::MeasuredRates::h2d_pinned_gbs,
    &models::MeasuredRates::h2d_pageable_gbs};
constexpr const char* kHostFeatureNames[] = {"dispatch rate", "launch latency",
                                             "single-thread CPU score", "pinned h2d bandwidth",
                                             "pageable h2d bandwidth"};
// Changes of a host feature between the run's start and end beyond this are
// noted; between the passes, of the median configuration.
constexpr double kHostDriftTolerance = 0.10;
constexpr double kPassDriftTolerance = 0.03;

std::optional<double> MeanOf(absl::Span<const models::MeasuredRates> samples,
                             std::optional<double> models::MeasuredRates::*field) {
  double sum = 0;
  int n = 0;
  for (const models::MeasuredRates& sample : samples) {
    if (!(sample.*field).has_value()) continue;
    sum += *(sample.*field);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// Rescales a rate (per second) measured at `from_ms` per step to `to_ms`.
void Rescale(std::optional<double>& rate, double from_ms, double to_ms) {
  if (rate.has_value() && to_ms > 0) *rate *= from_ms / to_ms;
}

class Progress {
 public:
  Progress(const RunOptions& options, int64_t total) : options_(options), total_(total) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (options_.progress != nullptr && options_.progress_bar) *options_.progress << "\n";
  }

  // A configuration's earlier pass; its "[i/N]" line follows when it is
  // stored (tools read those lines as the promise that it is).
  void Pass(int pass, int passes, const models::WorkloadSpec& spec, absl::string_view outcome) {
    if (options_.progress == nullptr || options_.progress_bar) return;
    *options_.progress << absl::StrFormat("  pass %d/%d %s: %s\n", pass + 1, passes, spec.Key(),
                                          outcome)
                       << std::flush;
  }

  void Report(int64_t done, const models::WorkloadSpec& spec, absl::string_view outcome) {
    if (options_.progress == nullptr) return;
    std::ostream& out = *options_.progress;
    if (options_.progress_bar) {
      constexpr int kWidth = 30;
      const int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done / total_);
      out << absl::StrFormat("\r[%s%s] %d/%d %-60.60s", std::string(filled, '#'),
                             std::string(kWidth - filled, '.'), done, total_, spec.Key())
          << std::flush;
    } else {
      out << absl::StrFormat("[%d/%d] %s: %s\n", done, total_, spec.Key(), outcome)
          << std::flush;
    }
  }

 private:
  const RunOptions& options_;
  const int64_t total_;
};

// One configuration's passes so far.
struct Pending {
  std::vector<Measurement> passes;
  bool failed = false;   // its first pass failed: recorded as skipped
  bool written = false;  // its profile is in the store (or rejected)
};

}  // namespace

models::Profile PoolPasses(absl::Span<const Measurement> passes) {
  models::Profile profile = passes.front().profile;
  std::vector<double> blocks;
  int64_t steps = 0;
  for (const Measurement& m : passes) {
    blocks.insert(blocks.end(), m.block_ms.begin(), m.block_ms.end());
    steps += m.steps;
    if (!profile.phases.forward_ms.has_value() && m.profile.phases.forward_ms.has_value()) {
      profile.phases = m.profile.phases;
    }
    if (m.profile.peak_memory_bytes.has_value()) {
      profile.peak_memory_bytes =
          std::max(profile.peak_memory_bytes.value_or(0), *m.profile.peak_memory_bytes);
    }
  }
  const double first_median = passes.front().profile.iteration.median_ms;
  profile.iteration = Summarize(blocks);
  profile.iteration.count = std::max<int64_t>(steps, profile.iteration.count);
  profile.repeats = static_cast<int>(blocks.size());
  profile.repeat_cv = CoefficientOfVariation(blocks);
  const double median = profile.iteration.median_ms;
  Rescale(profile.throughput_per_s, first_median, median);
  Rescale(profile.achieved_tflops, first_median, median);
  Rescale(profile.roofline_fraction, first_median, median);
  if (profile.epoch_s.has_value() && first_median > 0) *profile.epoch_s *= median / first_median;

  // GPU state: time-weighted over the passes that have it.
  auto weighted = [&](std::optional<double> GpuState::*field) -> std::optional<double> {
    double sum = 0, weight = 0;
    for (const Measurement& m : passes) {
      if (!(m.gpu.*field).has_value()) continue;
      const double w = std::max(m.gpu.timed_s, 1e-9);
      sum += *(m.gpu.*field) * w;
      weight += w;
    }
    if (weight == 0) return std::nullopt;
    return sum / weight;
  };
  profile.conditions.board_power_w = weighted(&GpuState::board_power_w);
  profile.conditions.sm_clock_mhz = weighted(&GpuState::sm_clock_mhz);
  // The host state the steps ran under: the median of the probes taken
  // right before this configuration's blocks, over all passes.
  std::vector<double> probes;
  for (const Measurement& m : passes) {
    probes.insert(probes.end(), m.dispatch_ops_per_s.begin(), m.dispatch_ops_per_s.end());
  }
  if (!probes.empty()) profile.conditions.dispatch_ops_per_s = Quantile(probes, 0.5);
  profile.conditions.gpu_temperature_c = std::nullopt;
  for (const Measurement& m : passes) {
    if (m.gpu.temperature_c.has_value()) profile.conditions.gpu_temperature_c = m.gpu.temperature_c;
  }
  return profile;
}

void SetHostConditions(absl::Span<const models::MeasuredRates> samples,
                       models::RunConditions& conditions) {
  if (!conditions.dispatch_ops_per_s.has_value()) {
    conditions.dispatch_ops_per_s = MeanOf(samples, &models::MeasuredRates::dispatch_ops_per_s);
  }
  conditions.launch_latency_us = MeanOf(samples, &models::MeasuredRates::launch_latency_us);
  conditions.cpu_single_thread_score =
      MeanOf(samples, &models::MeasuredRates::cpu_single_thread_score);
  conditions.h2d_pinned_gbs = MeanOf(samples, &models::MeasuredRates::h2d_pinned_gbs);
  conditions.h2d_pageable_gbs = MeanOf(samples, &models::MeasuredRates::h2d_pageable_gbs);
  conditions.python_op_us = MeanOf(samples, &models::MeasuredRates::python_op_us);
  conditions.torchscript_op_us = MeanOf(samples, &models::MeasuredRates::torchscript_op_us);
}

absl::StatusOr<RunSummary> RunWorkloads(const std::vector<models::WorkloadSpec>& specs,
                                        const TimingPolicy& timing, const models::Node& node,
                                        Measurer& measurer, db::Store& store,
                                        const RunOptions& options) {
  const absl::Time start = options.now();
  RunSummary summary;
  summary.planned = static_cast<int64_t>(specs.size());
  RETURN_IF_ERROR(UpsertNode(store, node));

  const int passes = std::max(1, timing.passes);
  std::vector<models::MeasuredRates> host_samples = {node.measured};
  std::vector<Pending> pending(specs.size());
  int64_t done = 0;  // configurations finished (written, skipped or failed)
  Progress progress(options, summary.planned);

  auto record_skipped = [&](size_t i, const std::string& reason) -> absl::Status {
    ++summary.skipped;
    ++done;
    progress.Report(done, specs[i], absl::StrCat("skipped: ", reason));
    return store.RecordSkipped(db::SkippedRun{
        .node_name = node.name,
        .workload_key = specs[i].Key(),
        .reason = reason,
        .at_us = absl::ToUnixMicros(absl::Now()),
    });
  };
  // Pools and writes configuration i from the passes it has.
  auto write = [&](size_t i) -> absl::Status {
    Pending& p = pending[i];
    p.written = true;
    models::Profile profile = PoolPasses(p.passes);
    profile.node_name = node.name;
    profile.workload = specs[i];
    profile.measured_at_us = absl::ToUnixMicros(absl::Now());
    profile.agent_version = kAgentVersion;
    profile.method_version = models::kCurrentMethodVersion;
    SetHostConditions(host_samples, profile.conditions);
    profile.content_hash = models::ComputeContentHash(profile);
    ASSIGN_OR_RETURN(std::unique_ptr<db::ImportTransaction> import, store.BeginImport());
    RETURN_IF_ERROR(import->Add(0, profile));
    ASSIGN_OR_RETURN(db::ImportSummary committed, import->Commit());
    if (!committed.rejected.empty()) {
      return record_skipped(i, absl::StrCat("rejected by the store: ",
                                            committed.rejected[0].reason));
    }
    summary.measured += committed.accepted;
    summary.duplicates += committed.duplicates;
    if (static_cast<int>(p.passes.size()) < passes) ++summary.partial;
    ++done;
    progress.Report(done, specs[i],
                    absl::StrFormat("%.3f ms (median of %d blocks, %d passes, cv %.1f%%)",
                                    profile.iteration.median_ms, profile.repeats,
                                    p.passes.size(), 100 * profile.repeat_cv.value_or(0)));
    return absl::OkStatus();
  };

  for (int pass = 0; pass < passes && !summary.budget_exhausted; ++pass) {
    if (pass > 0) {
      absl::StatusOr<models::MeasuredRates> host = MeasureHostGuarded(measurer);
      if (host.ok()) host_samples.push_back(*host);
    }
    for (size_t k = 0; k < specs.size(); ++k) {
      // Even passes in plan order, odd ones reversed: the configuration
      // measured last in one pass is measured first in the next.
      const size_t i = pass % 2 == 0 ? k : specs.size() - 1 - k;
      Pending& p = pending[i];
      if (p.failed || p.written || static_cast<int>(p.passes.size()) != pass) continue;
      if (options.now() - start >= options.budget) {
        summary.budget_exhausted = true;
        break;
      }
      absl::StatusOr<Measurement> measured = MeasureGuarded(measurer, specs[i], timing, pass);
      if (!measured.ok()) {
        if (pass == 0) {
          p.failed = true;
          if (absl::Status s = record_skipped(i, std::string(measured.status().message()));
              !s.ok()) {
            return s;
          }
        } else {
          summary.notes.push_back(absl::StrCat(specs[i].Key(), ": pass ", pass + 1,
                                               " failed (", measured.status().message(),
                                               "); stored with ", p.passes.size(), " passes"));
          RETURN_IF_ERROR(write(i));
        }
        continue;
      }
      p.passes.push_back(*std::move(measured));
      if (pass == passes - 1) {
        RETURN_IF_ERROR(write(i));
        continue;
      }
      const Measurement& m = p.passes.back();
      progress.Pass(pass, passes, specs[i],
                    absl::StrFormat("%.3f ms (median of %d blocks)",
                                    m.profile.iteration.median_ms, m.block_ms.size()));
    }
  }
  // What the budget cut: configurations with some passes are written with
  // those; the rest were not run.
  for (size_t i = 0; i < specs.size(); ++i) {
    Pending& p = pending[i];
    if (p.failed || p.written) continue;
    if (p.passes.empty()) {
      ++summary.not_run;
      continue;
    }
    RETURN_IF_ERROR(write(i));
  }

  // Drift between the passes: the median ratio of a configuration's last
  // pass to its first.
  std::vector<double> ratios;
  for (const Pending& p : pending) {
    if (p.passes.size() < 2) continue;
    const double first = p.passes.front().profile.iteration.median_ms;
    const double last = p.passes.back().profile.iteration.median_ms;
    if (first > 0 && last > 0) ratios.push_back(last / first);
  }
  if (!ratios.empty()) {
    const double drift = Quantile(ratios, 0.5) - 1;
    if (std::abs(drift) > kPassDriftTolerance) {
      summary.notes.push_back(absl::StrFormat(
          "drift: the median configuration was %.1f%% %s in pass %d than in pass 1 (%d "
          "configurations); the stored spread includes it",
          100 * std::abs(drift), drift > 0 ? "slower" : "faster", passes, ratios.size()));
    }
  }
  // The host at the end: stored on the node (means of start and end) and
  // compared with the start.
  absl::StatusOr<models::MeasuredRates> end = MeasureHostGuarded(measurer);
  if (end.ok()) {
    summary.end_host = *end;
    models::Node updated = node;
    for (size_t f = 0; f < std::size(kHostFeatures); ++f) {
      const auto field = kHostFeatures[f];
      const std::optional<double> before = node.measured.*field, after = (*end).*field;
      if (!before.has_value() || !after.has_value()) continue;
      updated.measured.*field = (*before + *after) / 2;
      if (*before > 0 && std::abs(*after / *before - 1) > kHostDriftTolerance) {
        summary.notes.push_back(absl::StrFormat("drift: %s changed from %.4g at the start to %.4g "
                                                "at the end of the run",
                                                kHostFeatureNames[f], *before, *after));
      }
    }
    RETURN_IF_ERROR(UpsertNode(store, updated));
  } else if (!absl::IsUnimplemented(end.status())) {
    summary.notes.push_back(
        absl::StrCat("the host could not be measured at the end: ", end.status().message()));
  }
  summary.elapsed_s = absl::ToDoubleSeconds(options.now() - start);
  return summary;
}

}  // namespace perfcast::profiler
