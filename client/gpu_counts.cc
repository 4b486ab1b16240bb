#include "client/gpu_counts.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "predictor/layout_search.h"

namespace perfcast::client {

void SetGpuCounts(const std::vector<std::string>& values, v1::RecommendRequest* request) {
  request->set_gpu_count_spec(absl::StrJoin(values, ","));
  request->clear_gpu_counts();
  if (values.empty()) return;
  absl::StatusOr<std::vector<int>> counts =
      predictor::ParseGpuCounts(request->gpu_count_spec());
  if (!counts.ok()) return;
  for (int count : *counts) request->add_gpu_counts(count);
}

}  // namespace perfcast::client
