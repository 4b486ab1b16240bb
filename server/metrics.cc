#include "server/metrics.h"

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace perfcast::server {
namespace {

// From a cached Predict answer (tens of microseconds) to a large Fit or
// import (tens of seconds).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      50e-6,  100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
      100e-3, 250e-3, 500e-3, 1,      2.5,  5,      10,   30,    60};
  return *kBuckets;
}

// A client may name any method; beyond this many distinct ones the rest
// share one label value, so a misbehaving client cannot grow the series
// without bound.
constexpr size_t kMaxMethods = 64;
constexpr char kOtherMethod[] = "other";

prometheus::MetricFamily Gauge(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  return family;
}

void AddSample(prometheus::MetricFamily& family, double value,
               std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric sample;
  sample.label = std::move(labels);
  sample.gauge.value = value;
  family.metric.push_back(std::move(sample));
}

// Resident set size from /proc/self/statm (second field, in pages); absent
// where there is no procfs.
std::optional<double> ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total_pages = 0;
  int64_t resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return std::nullopt;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

// Gauges read from the store (and the process) when scraped. A failed read
// leaves its gauge out of that scrape rather than reporting a wrong zero.
class StoreGauges final : public prometheus::Collectable {
 public:
  StoreGauges(db::Store& store, absl::Duration max_age) : store_(store), max_age_(max_age) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const absl::Time now = absl::Now();
      if (now - read_at_ >= max_age_) {
        cached_ = ReadStore(now);
        read_at_ = now;
      }
      families = cached_;
    }
    if (std::optional<double> resident = ResidentBytes(); resident.has_value()) {
      families.push_back(
          Gauge("perfcast_process_resident_bytes", "Resident memory of the perfcastd process."));
      AddSample(families.back(), *resident);
    }
    return families;
  }

 private:
  std::vector<prometheus::MetricFamily> ReadStore(absl::Time now) const {
    std::vector<prometheus::MetricFamily> families;
    if (absl::StatusOr<int64_t> size = store_.ApproximateSizeBytes(); size.ok()) {
      families.push_back(Gauge("perfcast_store_size_bytes",
                               "Bytes the profile store occupies (database file and WAL)."));
      AddSample(families.back(), static_cast<double>(*size));
    }
    if (absl::StatusOr<int64_t> profiles = store_.CountProfiles({}); profiles.ok()) {
      families.push_back(Gauge("perfcast_profiles", "Profiles in the store."));
      AddSample(families.back(), static_cast<double>(*profiles));
    }
    if (std::optional<int64_t> nodes = CountNodes(); nodes.has_value()) {
      families.push_back(Gauge("perfcast_nodes", "Registered nodes."));
      AddSample(families.back(), static_cast<double>(*nodes));
    }
    if (absl::StatusOr<std::vector<db::StoredModel>> models = store_.ListModels(); models.ok()) {
      // The latest version of each series is the one that serves.
      absl::flat_hash_map<std::string, const db::StoredModel*> latest;
      for (const db::StoredModel& model : *models) {
        const db::StoredModel*& slot = latest[model.name];
        if (slot == nullptr || model.version > slot->version) slot = &model;
      }
      prometheus::MetricFamily age = Gauge(
          "perfcast_model_age_seconds", "Seconds since the serving version of a model was fitted.");
      prometheus::MetricFamily mape = Gauge(
          "perfcast_model_cv_mape",
          "Cross-validated mean absolute percentage error of the serving version of a model.");
      for (const auto& [name, model] : latest) {
        const double age_s =
            absl::ToDoubleSeconds(now - absl::FromUnixMicros(model->created_at_us));
        AddSample(age, age_s, {{"name", name}});
        AddSample(mape, model->cv_mape, {{"name", name}});
      }
      families.push_back(std::move(age));
      families.push_back(std::move(mape));
    }
    return families;
  }

  std::optional<int64_t> CountNodes() const {
    int64_t count = 0;
    if (!db::ForEachNode(store_, {}, [&](models::Node&) { ++count; }).ok()) return std::nullopt;
    return count;
  }

  db::Store& store_;
  const absl::Duration max_age_;
  mutable std::mutex mutex_;
  mutable absl::Time read_at_ = absl::InfinitePast();
  mutable std::vector<prometheus::MetricFamily> cached_;
};

// The series of one method, created on its first call and kept: looking
// them up through Family::Add would build a histogram per call.
struct Metrics::MethodSeries {
  std::string method;  // the label value ("other" past kMaxMethods)
  prometheus::Histogram* duration = nullptr;
  prometheus::Gauge* in_flight = nullptr;
  absl::flat_hash_map<std::string, prometheus::Counter*> requests_by_code;
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("perfcast_rpc_requests_total")
                    .Help("RPCs handled, by full method name and final status code.")
                    .Register(*registry_)),
      durations_(prometheus::BuildHistogram()
                     .Name("perfcast_rpc_duration_seconds")
                     .Help("Time from a call's arrival to its status, by method.")
                     .Register(*registry_)),
      in_flight_(prometheus::BuildGauge()
                     .Name("perfcast_rpc_in_flight")
                     .Help("RPCs being handled now, by method.")
                     .Register(*registry_)),
      imports_(prometheus::BuildCounter()
                   .Name("perfcast_import_profiles_total")
                   .Help("Profiles received by committed imports: stored (new), duplicate "
                         "(already stored) or rejected (invalid).")
                   .Register(*registry_)),
      import_stored_(imports_.Add({{"result", "stored"}})),
      import_duplicate_(imports_.Add({{"result", "duplicate"}})),
      import_rejected_(imports_.Add({{"result", "rejected"}})) {}

Metrics::~Metrics() { exposer_.reset(); }

absl::Status Metrics::StartExposer(const std::string& address) {
  if (exposer_ != nullptr) return absl::FailedPreconditionError("the metrics exposer is running");
  try {
    // Each connection holds a worker thread until its request arrives or
    // the request timeout passes: with civetweb's defaults (2 threads in
    // prometheus-cpp, 30 s) two clients that connect and send nothing blind
    // the endpoint. Scrapes are small and quick; a stalled one is dropped
    // soon, and enough threads stay free for scrapes while a few clients
    // reconnect and idle (kExposerThreads).
    auto exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", absl::StrCat(kExposerThreads),
        "request_timeout_ms", absl::StrCat(absl::ToInt64Milliseconds(kExposerRequestTimeout))});
    std::vector<int> ports = exposer->GetListeningPorts();
    if (ports.empty() || ports.front() <= 0) {
      return absl::UnavailableError(absl::StrCat("metrics: no port bound for ", address));
    }
    exposer->RegisterCollectable(registry_);
    if (store_gauges_ != nullptr) exposer->RegisterCollectable(store_gauges_);
    exposer_port_ = ports.front();
    exposer_ = std::move(exposer);
  } catch (const std::exception& e) {  // civetweb reports a failed bind by throwing
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, ": ", e.what()));
  }
  return absl::OkStatus();
}

void Metrics::WatchStore(db::Store& store, absl::Duration max_age) {
  store_gauges_ = std::make_shared<StoreGauges>(store, max_age);
  if (exposer_ != nullptr) exposer_->RegisterCollectable(store_gauges_);
}

Metrics::MethodSeries& Metrics::SeriesLocked(absl::string_view method) {
  auto it = methods_.find(method);
  if (it != methods_.end()) return *it->second;
  if (methods_.size() >= kMaxMethods) method = kOtherMethod;
  std::unique_ptr<MethodSeries>& series = methods_[method];
  if (series == nullptr) {
    series = std::make_unique<MethodSeries>();
    series->method = std::string(method);
    series->duration = &durations_.Add({{"method", series->method}}, DurationBuckets());
    series->in_flight = &in_flight_.Add({{"method", series->method}});
  }
  return *series;
}

void Metrics::RpcStarted(absl::string_view method) {
  std::lock_guard<std::mutex> lock(mutex_);
  SeriesLocked(method).in_flight->Increment();
}

void Metrics::RpcFinished(absl::string_view method, absl::string_view code,
                          absl::Duration elapsed) {
  std::lock_guard<std::mutex> lock(mutex_);
  MethodSeries& series = SeriesLocked(method);
  series.in_flight->Decrement();
  series.duration->Observe(absl::ToDoubleSeconds(elapsed));
  prometheus::Counter*& requests = series.requests_by_code[code];
  if (requests == nullptr) {
    requests = &requests_.Add({{"method", series.method}, {"code", std::string(code)}});
  }
  requests->Increment();
}

void Metrics::ImportCommitted(int64_t stored, int64_t duplicates, int64_t rejected) {
  import_stored_.Increment(static_cast<double>(stored));
  import_duplicate_.Increment(static_cast<double>(duplicates));
  import_rejected_.Increment(static_cast<double>(rejected));
}

std::string Metrics::Render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  if (store_gauges_ != nullptr) {
    std::vector<prometheus::MetricFamily> store = store_gauges_->Collect();
    families.insert(families.end(), std::make_move_iterator(store.begin()),
                    std::make_move_iterator(store.end()));
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  return text.str();
}

}  // namespace perfcast::server
