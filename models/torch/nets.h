// The proxy networks, one per model family. Internal to perfcast_proxies:
// callers use MakeProxy (proxy.h).
#ifndef PERFCAST_MODELS_TORCH_NETS_H_
#define PERFCAST_MODELS_TORCH_NETS_H_

#include <memory>
#include <vector>

#include "models/torch/proxy.h"
#include "models/workload.h"

namespace perfcast::models::torch_proxy {

// Builds the network of a normalised model-family spec on the CPU, with
// LibTorch's default initialisation from its global generator.
// `adjacency`: the dense normalised adjacency [nodes, nodes] of the data's
// graph (used by stgcn only). May throw c10::Error.
std::unique_ptr<ProxyModel> BuildNet(const models::WorkloadSpec& spec,
                                     const std::vector<float>& adjacency);

}  // namespace perfcast::models::torch_proxy

#endif  // PERFCAST_MODELS_TORCH_NETS_H_
