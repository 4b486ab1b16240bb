// recommend's --gpu-count values in a RecommendRequest.
#ifndef PERFCAST_CLIENT_GPU_COUNTS_H_
#define PERFCAST_CLIENT_GPU_COUNTS_H_

#include <string>
#include <vector>

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

// Sets `request`'s GPU counts from recommend's --gpu-count values ("8",
// "1-64", "1,2,4,8", repeatable): the text in gpu_count_spec and, when it
// parses, every count it names in gpu_counts too. A server that predates
// gpu_count_spec ignores that field and would search one GPU instead; with
// gpu_counts set it searches what was asked, and a newer server reads the
// same set from both. Text that does not parse is left to the server, whose
// INVALID_ARGUMENT names it.
void SetGpuCounts(const std::vector<std::string>& values, v1::RecommendRequest* request);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_GPU_COUNTS_H_
