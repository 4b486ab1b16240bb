// Recent answers by question, so that a question asked again costs a lookup.
//
// Describing a workload and pricing its operations costs more than the RPC
// itself; Predict keeps one AnswerCache for the whole server (entries live
// for `max_age`, as long as the node they were priced for may be cached
// anyway) and PredictBatch one per stream (no age: a stream is one session),
// so that a batch pricing the same workloads for many job sizes describes
// each workload once. The server also keeps workload descriptors in one, by
// workload (model id 0, no age): a descriptor is a function of the workload
// alone and never goes stale. An entry records the model version it was
// priced with; a caller that sees a newer model ignores it. Distinct
// questions must not grow memory without bound: past `max_entries` the cache
// starts over.
//
// Thread-safe. V is the caller's answer type, shared read-only.
#ifndef PERFCAST_SERVING_ANSWER_CACHE_H_
#define PERFCAST_SERVING_ANSWER_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "serving/model_cache.h"

namespace perfcast::serving {

template <typename V>
class AnswerCache {
 public:
  // `max_age` infinite: entries never expire.
  AnswerCache(size_t max_entries, absl::Duration max_age, Clock clock = absl::Now)
      : max_entries_(max_entries), max_age_(max_age), clock_(std::move(clock)) {}
  AnswerCache(const AnswerCache&) = delete;
  AnswerCache& operator=(const AnswerCache&) = delete;

  // The answer stored under `key` for model `model_id`, or null when there
  // is none, it is older than max_age, or it came from another model.
  std::shared_ptr<const V> Find(absl::string_view key, int64_t model_id) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.model_id != model_id) return nullptr;
    if (max_age_ != absl::InfiniteDuration() && clock_() - it->second.at >= max_age_) {
      return nullptr;
    }
    return it->second.value;
  }

  void Put(std::string key, int64_t model_id, std::shared_ptr<const V> value) {
    const absl::Time now =
        max_age_ == absl::InfiniteDuration() ? absl::InfinitePast() : clock_();
    absl::MutexLock lock(&mu_);
    if (entries_.size() >= max_entries_) entries_.clear();
    entries_.insert_or_assign(std::move(key), Entry{model_id, now, std::move(value)});
  }

  size_t size() {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    int64_t model_id = 0;
    absl::Time at;
    std::shared_ptr<const V> value;
  };

  const size_t max_entries_;
  const absl::Duration max_age_;
  const Clock clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_ANSWER_CACHE_H_
