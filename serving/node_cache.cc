#include "serving/node_cache.h"

#include <utility>

namespace perfcast::serving {

absl::StatusOr<std::shared_ptr<const models::Node>> NodeCache::Get(const std::string& name) {
  const absl::Time now = clock_();
  std::shared_ptr<const models::Node> cached;
  {
    absl::MutexLock lock(&mu_);
    auto it = slots_.find(name);
    if (it != slots_.end()) {
      if (now - it->second.fetched_at < recheck_) return it->second.node;
      // Due: this caller asks the store; the others keep the cached node.
      it->second.fetched_at = now;
      cached = it->second.node;
    }
  }
  absl::StatusOr<models::Node> stored = store_.GetNode(name);
  if (!stored.ok()) {
    if (stored.status().code() == absl::StatusCode::kNotFound && cached != nullptr) {
      absl::MutexLock lock(&mu_);
      auto it = slots_.find(name);
      if (it != slots_.end() && it->second.node == cached) slots_.erase(it);
    }
    return stored.status();
  }
  if (cached != nullptr && *cached == *stored) return cached;
  auto node = std::make_shared<const models::Node>(*std::move(stored));
  absl::MutexLock lock(&mu_);
  slots_[name] = Slot{node, now};
  return node;
}

}  // namespace perfcast::serving
