// perfcastd's operator metrics in the Prometheus text format: what every RPC
// did (count per method and status code, latency, calls in flight), what
// imports stored, how big the store is and how old the served models are.
// An HTTP exposer on its own port (separate from gRPC, so that scraping needs
// neither TLS client setup nor gRPC) answers GET /metrics.
//
// The metric names are an API that dashboards and alerts depend on:
//   perfcast_rpc_requests_total{method,code}      counter
//   perfcast_rpc_duration_seconds{method}         histogram, 50 us .. 60 s
//   perfcast_rpc_in_flight{method}                gauge
//   perfcast_import_profiles_total{result}        counter: stored|duplicate|rejected
//   perfcast_store_size_bytes                     gauge  } computed on scrape from
//   perfcast_profiles, perfcast_nodes             gauge  } the store, at most once
//   perfcast_model_age_seconds{name}              gauge  } per refresh interval
//   perfcast_model_cv_mape{name}                  gauge  }
//   perfcast_process_resident_bytes               gauge
// `method` is the full gRPC method ("/perfcast.v1.Predictor/Predict"), `code`
// the status code's name ("OK", "NOT_FOUND").
//
// Thread-safe: RPC threads record while the exposer's threads scrape.
#ifndef PERFCAST_SERVER_METRICS_H_
#define PERFCAST_SERVER_METRICS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/store.h"

namespace prometheus {
class Counter;
class Exposer;
template <typename T>
class Family;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace perfcast::server {

class StoreGauges;

class Metrics {
 public:
  // The exposer's HTTP worker threads, and how long one waits for a
  // client's request (or for it to read the answer) before dropping it. A
  // connection holds a thread until then, so idle connections delay a scrape
  // by the timeout for each round of threads they fill; a scraper sends its
  // request as it connects.
  static constexpr int kExposerThreads = 32;
  static constexpr absl::Duration kExposerRequestTimeout = absl::Seconds(1);

  Metrics();
  // Stops the exposer first, so no scrape runs while the metrics go away.
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Starts answering GET /metrics over HTTP on `address` ("host:port"; port 0
  // picks a free one, see exposer_port()). Unavailable if the address cannot
  // be bound; FailedPrecondition if already serving.
  absl::Status StartExposer(const std::string& address);
  // The bound port of the exposer; 0 if it is not serving.
  int exposer_port() const { return exposer_port_; }

  // Reports the store's size, profile, node and model gauges, read from
  // `store` when scraped and cached for `max_age` (a scrape every few seconds
  // must not become a table scan every few seconds). `store` must outlive
  // this object. Call at most once.
  void WatchStore(db::Store& store, absl::Duration max_age = absl::Seconds(5));

  // An RPC of `method` began; pair with RpcFinished.
  void RpcStarted(absl::string_view method);
  // An RPC of `method` ended with `code` (a status code's name) after `elapsed`.
  void RpcFinished(absl::string_view method, absl::string_view code, absl::Duration elapsed);

  // An import committed: `stored` new profiles, `duplicates` already stored,
  // `rejected` invalid ones.
  void ImportCommitted(int64_t stored, int64_t duplicates, int64_t rejected);

  // Everything in the Prometheus text exposition format, as GET /metrics
  // answers it (the store gauges included).
  std::string Render() const;

 private:
  struct MethodSeries;
  MethodSeries& SeriesLocked(absl::string_view method);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Gauge>& in_flight_;
  prometheus::Family<prometheus::Counter>& imports_;
  prometheus::Counter& import_stored_;
  prometheus::Counter& import_duplicate_;
  prometheus::Counter& import_rejected_;
  std::mutex mutex_;  // guards methods_
  absl::flat_hash_map<std::string, std::unique_ptr<MethodSeries>> methods_;
  std::shared_ptr<StoreGauges> store_gauges_;
  // Declared last: destroyed first, while what it serves still exists.
  std::unique_ptr<prometheus::Exposer> exposer_;
  int exposer_port_ = 0;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_METRICS_H_
