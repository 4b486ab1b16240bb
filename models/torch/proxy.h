// LibTorch proxy models: the networks that perfcast-agent times on a node.
// Each model family of descriptor.h (lstm, cnn, stgcn, resnet, transformer,
// dlrm, decoder, bert, vit, resnet_imagenet) has one proxy built to exactly the architecture its descriptor
// describes (same layers, same parameter count), fed by a synthetic
// spatio-temporal data source: a network of coupled oscillators (swing
// equations on a random graph, integrated with RK4 on the CPU), in the spirit
// of the time-series proxy app of Jain et al. 2022. Operation families have no
// proxy here: the profiler's micro-benchmarks build their own tensors.
//
// Typical training step, as the agent runs it:
//   ASSIGN_OR_RETURN(Proxy proxy,
//                    MakeProxy(spec, {.device = torch::kCUDA, .pin_memory = true}));
//   proxy.model->To(torch::kCUDA, torch::kFloat32);
//   proxy.model->Train(true);
//   torch::optim::Adam adam(proxy.model->Parameters());
//   HostBatch batch = proxy.data->Next();                        // data load
//   std::vector<torch::Tensor> inputs;                            // host -> device
//   for (auto& t : batch.inputs) inputs.push_back(t.to(device, /*non_blocking=*/true));
//   torch::Tensor target = batch.target.to(device, true);
//   torch::Tensor loss = proxy.model->Loss(proxy.model->Forward(inputs), target);
//   adam.zero_grad(); loss.backward(); adam.step();               // backward, step
//
// Thread safety: a Proxy, its model and its data source are not safe to use
// from several threads at once; distinct Proxies are independent.
// Errors: functions here never throw. MakeProxy converts LibTorch errors
// (c10::Error) into absl::Status; the methods of ProxyModel may throw
// c10::Error from LibTorch itself (e.g. out of device memory) since they sit
// inside the caller's timed loop: callers that care catch it there.
#ifndef PERFCAST_MODELS_TORCH_PROXY_H_
#define PERFCAST_MODELS_TORCH_PROXY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "models/descriptor.h"
#include "models/workload.h"

namespace perfcast::models::torch_proxy {

struct ProxyOptions {
  // Device the model is meant for; MakeProxy builds on the CPU and moves the
  // model there (data sources always produce host tensors).
  torch::Device device = torch::kCPU;
  // Allocate host batches in page-locked memory (needs CUDA) so that
  // host->device copies can be asynchronous.
  bool pin_memory = false;
  // Seeds the oscillator graph, its initial state and the model's weights.
  uint64_t seed = 1;
  // Samples in one epoch: after this many the data source restarts the
  // system from its initial state, so every epoch sees the same data.
  int64_t samples_per_epoch = 1 << 16;
};

// One batch on the host: model inputs (in the order Forward takes them) and
// the target. Pinned when ProxyOptions::pin_memory.
//   lstm, cnn, stgcn: inputs {x [batch, seq_len, nodes] f32},
//                     target [batch, horizon, nodes] f32
//   resnet, resnet_imagenet, vit:
//                     inputs {images [batch, 3, image, image] f32}, target [batch] i64
//   decoder, bert:    inputs {tokens [batch, seq_len] i64}, target [batch, seq_len] i64
//                     (decoder: the next token; bert: the unmasked token)
//   transformer:      inputs {tokens [batch, seq_len] i64}, target [batch] i64
//   dlrm:             inputs {dense [batch, dense] f32,
//                             ids [batch, tables, lookups] i64}, target [batch] f32
struct HostBatch {
  std::vector<torch::Tensor> inputs;
  torch::Tensor target;
};

// Endless source of batches of a fixed size, deterministic by seed: two
// sources made with the same spec and seed yield identical batches. Next()
// does the generation work (integrating the system) on the calling thread:
// it is the "data load" phase of an iteration.
class SyntheticDataSource {
 public:
  virtual ~SyntheticDataSource();
  virtual HostBatch Next() = 0;
  virtual int64_t samples_per_epoch() const = 0;
  virtual int64_t batch_size() const = 0;
};

// A proxy network with its loss. Owns its parameters.
class ProxyModel {
 public:
  virtual ~ProxyModel();
  // The network's output for inputs already on the model's device (in the
  // order of HostBatch::inputs).
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& device_inputs) = 0;
  // Scalar loss of `output` against `target` (on the same device): MSE for
  // forecasters, cross-entropy for the classifiers and, per token, for the
  // language models (decoder, bert), BCE-with-logits for dlrm.
  virtual torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& target) = 0;
  // Trainable parameters, e.g. for a torch::optim optimizer. Their count and
  // total numel match the descriptor (one tensor per weight and per bias).
  virtual std::vector<torch::Tensor> Parameters() = 0;
  // Training mode (batch-norm statistics) or evaluation mode.
  virtual void Train(bool on) = 0;
  // Moves parameters and buffers to `device`, floating ones to `dtype` (the
  // weights dtype; amp keeps kFloat32 and autocasts).
  virtual void To(torch::Device device, torch::Dtype dtype = torch::kFloat32) = 0;
  // The underlying module (named parameters, serialisation).
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
};

struct Proxy {
  std::unique_ptr<ProxyModel> model;
  std::unique_ptr<SyntheticDataSource> data;
  models::WorkloadDescriptor descriptor;  // Describe(spec) of the normalised spec
};

// Builds the proxy of a model-family spec: network on options.device, data
// source for spec.batch_size. InvalidArgument for a spec NormalizeSpec
// rejects or for an operation family; Internal if LibTorch fails (e.g. the
// device is unavailable).
absl::StatusOr<Proxy> MakeProxy(const models::WorkloadSpec& spec, const ProxyOptions& options);

}  // namespace perfcast::models::torch_proxy

#endif  // PERFCAST_MODELS_TORCH_PROXY_H_
