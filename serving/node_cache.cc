#include "serving/node_cache.h"

namespace perfcast::serving {

absl::StatusOr<std::shared_ptr<const models::Node>> NodeCache::Get(const std::string& name) {
  const absl::Time now = clock_();
  {
    absl::MutexLock lock(&mu_);
    auto it = slots_.find(name);
    if (it != slots_.end() && now - it->second.fetched_at < recheck_) return it->second.node;
  }
  absl::StatusOr<models::Node> stored = store_.GetNode(name);
  if (!stored.ok()) return stored.status();
  auto node = std::make_shared<const models::Node>(*std::move(stored));
  absl::MutexLock lock(&mu_);
  slots_[name] = Slot{node, now};
  return node;
}

}  // namespace perfcast::serving
