// The latest fitted model of each name, parsed once and shared.
//
// Predict must cost little more than the RPC itself, so a model is read and
// parsed from the store once and then served from memory. A fit through
// this process is visible at once (Put); a fit by another process sharing
// the store is seen within `recheck`, the longest a cached entry is trusted
// without asking the store for its latest version.
//
// Thread-safe.
#ifndef PERFCAST_SERVING_MODEL_CACHE_H_
#define PERFCAST_SERVING_MODEL_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "predictor/model.h"

namespace perfcast::serving {

// The name a request with no model name means.
inline constexpr char kDefaultModelName[] = "default";
// `requested`, or kDefaultModelName when empty.
std::string ModelName(absl::string_view requested);

// A stored model with its parsed payload; immutable once built.
struct LoadedModel {
  db::StoredModel meta;  // payload cleared
  predictor::PredictorModel model;
};

// Where the caches read the time; tests pass a fake clock.
using Clock = std::function<absl::Time()>;

class ModelCache {
 public:
  // `store` must outlive the cache.
  ModelCache(db::Store& store, absl::Duration recheck, Clock clock = absl::Now)
      : store_(store), recheck_(recheck), clock_(std::move(clock)) {}
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;

  // The latest version of model `name` (as given: no default applied).
  // NotFound ("run perfcast fit first") when none was ever fitted; DataLoss
  // when the stored payload cannot be parsed; the store's error when it
  // fails and nothing is cached (models are never deleted, so a cached one
  // keeps serving through a store outage).
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Latest(const std::string& name);

  // Makes `loaded` the latest of its name at once, unless a newer version
  // is already cached.
  void Put(std::shared_ptr<const LoadedModel> loaded);

 private:
  struct Slot {
    std::shared_ptr<const LoadedModel> loaded;
    absl::Time checked_at = absl::InfinitePast();
  };

  db::Store& store_;
  const absl::Duration recheck_;
  const Clock clock_;
  absl::Mutex mu_;
  std::map<std::string, Slot, std::less<>> slots_ ABSL_GUARDED_BY(mu_);
};

// Reads and parses a stored model. DataLoss when the payload cannot be parsed.
absl::StatusOr<std::shared_ptr<const LoadedModel>> LoadModel(db::StoredModel stored);

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_MODEL_CACHE_H_
