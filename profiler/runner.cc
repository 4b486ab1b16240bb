#include "profiler/runner.h"

#include <exception>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "models/profile.h"

namespace perfcast::profiler {
namespace {

absl::Status UpsertNode(db::Store& store, const models::Node& node) {
  absl::StatusOr<std::unique_ptr<db::ImportTransaction>> import = store.BeginImport();
  if (!import.ok()) return import.status();
  if (absl::Status s = (*import)->UpsertNode(node); !s.ok()) return s;
  return (*import)->Commit().status();
}

// Exceptions from deep inside a framework carry multi-line backtraces; the
// first line is the message.
std::string FirstLine(absl::string_view text) {
  return std::string(*absl::StrSplit(text, '\n').begin());
}

absl::StatusOr<models::Profile> MeasureGuarded(Measurer& measurer,
                                               const models::WorkloadSpec& spec,
                                               const TimingPolicy& timing) {
  try {
    return measurer.Measure(spec, timing);
  } catch (const std::exception& e) {
    return absl::InternalError(FirstLine(e.what()));
  }
}

class Progress {
 public:
  Progress(const RunOptions& options, int64_t total) : options_(options), total_(total) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (options_.progress != nullptr && options_.progress_bar) *options_.progress << "\n";
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

}  // namespace

absl::StatusOr<RunSummary> RunWorkloads(const std::vector<models::WorkloadSpec>& specs,
                                        const TimingPolicy& timing, const models::Node& node,
                                        Measurer& measurer, db::Store& store,
                                        const RunOptions& options) {
  const absl::Time start = options.now();
  RunSummary summary;
  summary.planned = static_cast<int64_t>(specs.size());
  if (absl::Status s = UpsertNode(store, node); !s.ok()) return s;

  Progress progress(options, summary.planned);
  for (size_t i = 0; i < specs.size(); ++i) {
    const models::WorkloadSpec& spec = specs[i];
    if (options.now() - start >= options.budget) {
      summary.budget_exhausted = true;
      summary.not_run = summary.planned - static_cast<int64_t>(i);
      break;
    }
    absl::StatusOr<models::Profile> profile = MeasureGuarded(measurer, spec, timing);
    std::string skip_reason;
    if (profile.ok()) {
      profile->node_name = node.name;
      profile->workload = spec;
      profile->measured_at_us = absl::ToUnixMicros(absl::Now());
      profile->agent_version = kAgentVersion;
      profile->content_hash = models::ComputeContentHash(*profile);
      absl::StatusOr<std::unique_ptr<db::ImportTransaction>> import = store.BeginImport();
      if (!import.ok()) return import.status();
      if (absl::Status s = (*import)->Add(0, *profile); !s.ok()) return s;
      absl::StatusOr<db::ImportSummary> committed = (*import)->Commit();
      if (!committed.ok()) return committed.status();
      if (!committed->rejected.empty()) {
        skip_reason = absl::StrCat("rejected by the store: ", committed->rejected[0].reason);
      } else {
        summary.measured += committed->accepted;
        summary.duplicates += committed->duplicates;
        progress.Report(static_cast<int64_t>(i) + 1, spec,
                        absl::StrFormat("%.3f ms (median %.3f, n=%d, cv %.1f%%)",
                                        profile->iteration.mean_ms, profile->iteration.median_ms,
                                        profile->iteration.count,
                                        100 * profile->repeat_cv.value_or(0)));
      }
    } else {
      skip_reason = std::string(profile.status().message());
    }
    if (!skip_reason.empty()) {
      if (absl::Status s = store.RecordSkipped(db::SkippedRun{
              .node_name = node.name,
              .workload_key = spec.Key(),
              .reason = skip_reason,
              .at_us = absl::ToUnixMicros(absl::Now()),
          });
          !s.ok()) {
        return s;
      }
      ++summary.skipped;
      progress.Report(static_cast<int64_t>(i) + 1, spec, absl::StrCat("skipped: ", skip_reason));
    }
  }
  summary.elapsed_s = absl::ToDoubleSeconds(options.now() - start);
  return summary;
}

}  // namespace perfcast::profiler
