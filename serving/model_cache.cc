#include "serving/model_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::serving {

std::string ModelName(absl::string_view requested) {
  return requested.empty() ? std::string(kDefaultModelName) : std::string(requested);
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> LoadModel(db::StoredModel stored) {
  absl::StatusOr<predictor::PredictorModel> parsed = predictor::ParseModel(stored.payload);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat("stored model ", stored.id,
                                            " cannot be read: ", parsed.status().message()));
  }
  auto loaded = std::make_shared<LoadedModel>();
  loaded->meta = std::move(stored);
  loaded->meta.payload.clear();
  loaded->model = *std::move(parsed);
  return loaded;
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ModelCache::Latest(const std::string& name) {
  std::shared_ptr<const LoadedModel> current;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = slots_[name];
    const absl::Time now = clock_();
    if (slot.loaded != nullptr && now - slot.checked_at < recheck_) return slot.loaded;
    // Later callers keep the cached model while this one checks the store.
    slot.checked_at = now;
    current = slot.loaded;
  }
  absl::StatusOr<db::StoredModel> stored = store_.LatestModel(name);
  if (!stored.ok()) {
    if (current != nullptr) return current;
    if (stored.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(
          absl::StrCat("no model named '", name, "': run perfcast fit first"));
    }
    return stored.status();
  }
  if (current != nullptr && current->meta.id == stored->id) return current;
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedModel> loaded, LoadModel(*std::move(stored)));
  absl::MutexLock lock(&mu_);
  Slot& slot = slots_[name];
  if (slot.loaded == nullptr || slot.loaded->meta.version < loaded->meta.version) {
    slot.loaded = std::move(loaded);
  }
  return slot.loaded;
}

void ModelCache::Put(std::shared_ptr<const LoadedModel> loaded) {
  absl::MutexLock lock(&mu_);
  Slot& slot = slots_[loaded->meta.name];
  if (slot.loaded == nullptr || slot.loaded->meta.version < loaded->meta.version) {
    slot.loaded = std::move(loaded);
    slot.checked_at = clock_();
  }
}

}  // namespace perfcast::serving
