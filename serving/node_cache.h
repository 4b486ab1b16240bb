// Registered nodes by name, read from the store at most once per `recheck`.
//
// Only found nodes are cached: a node registered right after a miss must be
// usable at once. A node changed or deregistered by another call is seen
// within `recheck`. When an entry is due, one caller reads the store while
// the others keep the cached node (a burst of calls at the moment it is due
// makes one read, not one each), and a node read back unchanged keeps its
// object, so that what is derived from it and keyed by its address (the
// Pricer's plans) stays valid.
//
// Thread-safe.
#ifndef PERFCAST_SERVING_NODE_CACHE_H_
#define PERFCAST_SERVING_NODE_CACHE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/hardware.h"
#include "serving/model_cache.h"

namespace perfcast::serving {

class NodeCache {
 public:
  // `store` must outlive the cache.
  NodeCache(db::Store& store, absl::Duration recheck, Clock clock = absl::Now)
      : store_(store), recheck_(recheck), clock_(std::move(clock)) {}
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  // The node named `name`; the store's NotFound when absent (then it is
  // forgotten), or its other errors to the caller that reads it.
  absl::StatusOr<std::shared_ptr<const models::Node>> Get(const std::string& name);

 private:
  struct Slot {
    std::shared_ptr<const models::Node> node;
    absl::Time fetched_at;  // when the store was last asked
  };

  db::Store& store_;
  const absl::Duration recheck_;
  const Clock clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_NODE_CACHE_H_
