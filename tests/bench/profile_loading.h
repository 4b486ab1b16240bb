// Profile files (agent SQLite stores, CSV, JSONL exports) read straight into
// the predictor's described profiles, for benchmarks that run without a
// server.
#ifndef PERFCAST_TESTS_BENCH_PROFILE_LOADING_H_
#define PERFCAST_TESTS_BENCH_PROFILE_LOADING_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "predictor/dataset.h"

namespace perfcast::bench {

// Appends the profiles of `files` that `keep` accepts (all when empty) and
// that have a descriptor, and (when `nodes` is not null) their nodes with
// the spec sheet completed from the built-in catalog, as the server stores
// them. Bad records are reported on stderr and skipped; an unreadable file
// is an error.
absl::Status LoadDescribedProfiles(const std::vector<std::string>& files,
                                   std::map<std::string, models::Node>* nodes,
                                   std::vector<predictor::DescribedProfile>& profiles,
                                   const std::function<bool(const models::Profile&)>& keep = {});

}  // namespace perfcast::bench

#endif  // PERFCAST_TESTS_BENCH_PROFILE_LOADING_H_
