#include "profiler/distributed.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "profiler/stats.h"

#if defined(PERFCAST_AGENT_GLOO) || defined(PERFCAST_AGENT_NCCL)
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef PERFCAST_AGENT_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef PERFCAST_AGENT_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace perfcast::profiler {
namespace {

#if defined(PERFCAST_AGENT_GLOO) || defined(PERFCAST_AGENT_NCCL)
// One concrete c10d backend (ProcessGroupGloo, ProcessGroupNCCL): their
// common base differs between LibTorch 1.13 and 2.x, their methods do not.
template <typename Backend>
class BackendCommunicator : public Communicator {
 public:
  BackendCommunicator(const WorkerPlace& place, c10::intrusive_ptr<c10d::Store> store,
                      c10::intrusive_ptr<Backend> backend)
      : Communicator(place), store_(std::move(store)), backend_(std::move(backend)) {}

  std::function<void()> AllReduce(torch::Tensor tensor) override {
    std::vector<at::Tensor> tensors = {std::move(tensor)};
    c10::intrusive_ptr<c10d::Work> work = backend_->allreduce(tensors);
    return [work] { work->wait(); };
  }

  void Barrier() override { backend_->barrier()->wait(); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Backend> backend_;
};

c10::intrusive_ptr<c10d::Store> Rendezvous(const WorkerPlace& place,
                                           std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(place.port);
  options.isServer = place.rank == 0;
  options.numWorkers = place.world;
  options.waitWorkers = true;
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Join(
    const WorkerPlace& place, const Device& device, std::chrono::milliseconds timeout) {
  if (place.world < 1 || place.rank < 0 || place.rank >= place.world || place.port < 1 ||
      place.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad worker place: rank ", place.rank, " of ",
                                                   place.world, ", port ", place.port));
  }
  const char* wanted = device.is_cuda() ? "nccl" : "gloo";
  try {
#ifdef PERFCAST_AGENT_NCCL
    if (device.is_cuda()) {
      c10::intrusive_ptr<c10d::Store> store = Rendezvous(place, timeout);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      auto backend =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(store, place.rank, place.world, options);
      return std::unique_ptr<Communicator>(
          new BackendCommunicator<c10d::ProcessGroupNCCL>(place, store, backend));
    }
#endif
#ifdef PERFCAST_AGENT_GLOO
    if (!device.is_cuda()) {
      c10::intrusive_ptr<c10d::Store> store = Rendezvous(place, timeout);
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      auto backend =
          c10::make_intrusive<c10d::ProcessGroupGloo>(store, place.rank, place.world, options);
      return std::unique_ptr<Communicator>(
          new BackendCommunicator<c10d::ProcessGroupGloo>(place, store, backend));
    }
#endif
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return absl::UnavailableError(absl::StrCat("rank ", place.rank, " of ", place.world,
                                               " could not join the ", wanted, " group: ",
                                               what.substr(0, what.find('\n'))));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("this perfcast-agent was built without LibTorch's ", wanted,
                   " backend (c10d headers or libraries missing)"));
}

absl::StatusOr<Measurement> AllReduceMeasurer::Measure(const models::WorkloadSpec& spec,
                                                      const TimingPolicy& timing, int pass) {
  if (spec.family != "allreduce") {
    return absl::InvalidArgumentError(absl::StrCat(spec.Key(), " is not an all-reduce"));
  }
  const auto bytes = spec.params.find("bytes");
  const auto gpus = spec.params.find("gpus");
  if (bytes == spec.params.end() || gpus == spec.params.end() ||
      gpus->second != communicator_.world()) {
    return absl::InvalidArgumentError(absl::StrCat(spec.Key(), " does not run on a group of ",
                                                   communicator_.world()));
  }
  const int calls = CallsPerBlock(bytes->second);
  Measurement m;
  models::Profile& profile = m.profile;
  profile.workload = spec;
  RETURN_IF_ERROR(RunGuarded(device_, [&]() -> absl::Status {
    torch::Tensor tensor = torch::ones(
        {std::max<int64_t>(1, bytes->second / 4)},
        torch::TensorOptions().dtype(torch::kFloat32).device(device_.torch_device()));
    auto run = [&](int n) {
      for (int c = 0; c < n; ++c) communicator_.AllReduce(tensor)();
    };
    run(std::max(1, timing.warmup_iterations));
    const int blocks = RepeatsInPass(timing.op_repeats, timing.passes, pass);
    for (int r = 0; r < blocks; ++r) {
      // Start every block together, so that no rank's wait for a late peer
      // counts as communication.
      communicator_.Barrier();
      device_.Synchronize();
      const auto start = std::chrono::steady_clock::now();
      run(calls);
      device_.Synchronize();
      m.block_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          calls);
    }
    m.steps = static_cast<int64_t>(calls) * blocks;
    profile.iteration = Summarize(m.block_ms);
    profile.iteration.count = m.steps;
    profile.repeats = blocks;
    profile.repeat_cv = CoefficientOfVariation(m.block_ms);
    return absl::OkStatus();
  }));
  profile.throughput_per_s = 1e3 / profile.iteration.mean_ms;
  return m;
}

GradientBuckets::GradientBuckets(Communicator& communicator,
                                 const std::vector<torch::Tensor>& parameters,
                                 double bucket_bytes)
    : communicator_(communicator) {
  // Reverse order: backward produces the last layers' gradients first.
  int64_t filled_bytes = 0, filled = 0;  // of the open bucket; `filled` in elements
  torch::TensorOptions options;
  auto close = [&] {
    if (!buckets_.empty()) buckets_.back().buffer = torch::zeros({filled}, options);
  };
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
    const torch::Tensor& p = *it;
    if (!p.requires_grad()) continue;
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    if (buckets_.empty() || p.options().dtype() != options.dtype() ||
        (filled_bytes > 0 && static_cast<double>(filled_bytes + bytes) > bucket_bytes)) {
      close();
      buckets_.emplace_back();
      filled_bytes = filled = 0;
      options = p.options();
    }
    slots_.push_back({buckets_.size() - 1, filled, p});
    ++buckets_.back().size;
    filled_bytes += bytes;
    filled += p.numel();
  }
  close();
  for (Bucket& bucket : buckets_) bucket.pending = bucket.size;
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].parameter.register_hook([this, i](torch::Tensor grad) {
      Arrived(i, grad);
      return grad;
    });
  }
}

void GradientBuckets::Arrived(size_t index, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Slot& slot = slots_[index];
  Bucket& bucket = buckets_[slot.bucket];
  bucket.buffer.narrow(0, slot.offset, grad.numel()).copy_(grad.reshape({-1}));
  if (--bucket.pending == 0) bucket.wait = communicator_.AllReduce(bucket.buffer);
}

void GradientBuckets::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  const double scale = 1.0 / communicator_.world();
  for (Bucket& bucket : buckets_) {
    // A parameter without a gradient this step (unused branch): reduce what
    // arrived anyway, as DDP with find_unused_parameters would.
    if (!bucket.wait) bucket.wait = communicator_.AllReduce(bucket.buffer);
    bucket.wait();
    bucket.wait = nullptr;
    bucket.pending = bucket.size;
    bucket.buffer.mul_(scale);
  }
  for (const Slot& slot : slots_) {
    torch::Tensor p = slot.parameter;
    torch::Tensor averaged =
        buckets_[slot.bucket].buffer.narrow(0, slot.offset, p.numel()).view(p.sizes());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(averaged);
    } else {
      p.mutable_grad() = averaged.clone();
    }
  }
}

}  // namespace perfcast::profiler
