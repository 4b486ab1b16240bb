// MakeProxy and the synthetic data sources. Every source integrates the same
// oscillator network (oscillators.h) one step per sample and turns a sliding
// window of its signals into the family's inputs and targets.
#include "models/torch/proxy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/architecture.h"
#include "models/torch/nets.h"
#include "models/torch/oscillators.h"

namespace perfcast::models::torch_proxy {
namespace {

// Graph size for families whose architecture has no nodes parameter.
constexpr int64_t kContextNodes = 32;

// A sliding window over the system's recent signals; one step per sample.
class SystemSource : public SyntheticDataSource {
 public:
  SystemSource(OscillatorNetwork system, int64_t window, int64_t batch,
               const ProxyOptions& options)
      : system_(std::move(system)),
        window_(window),
        batch_(batch),
        samples_per_epoch_(options.samples_per_epoch),
        pin_memory_(options.pin_memory),
        signals_(window * system_.nodes()),
        order_(window) {
    Prime();
  }

  HostBatch Next() final {
    HostBatch batch = Allocate();
    for (int64_t b = 0; b < batch_; ++b) {
      Step();
      Fill(b, batch);
    }
    return batch;
  }
  int64_t samples_per_epoch() const final { return samples_per_epoch_; }
  int64_t batch_size() const final { return batch_; }

 protected:
  virtual HostBatch Allocate() = 0;
  // Writes sample `b` of `batch` from the current window.
  virtual void Fill(int64_t b, HostBatch& batch) = 0;

  torch::Tensor Empty(torch::IntArrayRef shape, torch::Dtype dtype) const {
    return torch::empty(shape, torch::TensorOptions().dtype(dtype).pinned_memory(pin_memory_));
  }
  // Signals `age` steps ago (0: the newest), one float per node.
  const float* Signals(int64_t age) const {
    return &signals_[((newest_ - age + window_) % window_) * nodes()];
  }
  double Order(int64_t age) const { return order_[(newest_ - age + window_) % window_]; }
  int64_t nodes() const { return system_.nodes(); }
  int64_t window() const { return window_; }
  int64_t sample() const { return emitted_; }  // index of the newest sample in its epoch

 private:
  void Record() {
    newest_ = (newest_ + 1) % window_;
    system_.Signals(&signals_[newest_ * nodes()]);
    order_[newest_] = system_.OrderParameter();
  }
  // Fills the window so that the first sample has a full history.
  void Prime() {
    newest_ = window_ - 1;
    for (int64_t i = 0; i + 1 < window_; ++i) {
      system_.Advance();
      Record();
    }
    emitted_ = 0;
  }
  void Step() {
    if (emitted_ == samples_per_epoch_) {
      system_.Reset();
      Prime();
    }
    system_.Advance();
    Record();
    ++emitted_;
  }

  OscillatorNetwork system_;
  int64_t window_, batch_, samples_per_epoch_;
  bool pin_memory_;
  std::vector<float> signals_;  // ring of window_ x nodes
  std::vector<double> order_;
  int64_t newest_ = 0;
  int64_t emitted_ = 0;
};

// lstm, cnn, stgcn: x = the first seq_len steps of the window, target = the
// last horizon steps.
class ForecastSource final : public SystemSource {
 public:
  ForecastSource(OscillatorNetwork system, int64_t seq_len, int64_t horizon, int64_t batch,
                 const ProxyOptions& options)
      : SystemSource(std::move(system), seq_len + horizon, batch, options),
        seq_len_(seq_len),
        horizon_(horizon) {}

 private:
  HostBatch Allocate() override {
    return {{Empty({batch_size(), seq_len_, nodes()}, torch::kFloat32)},
            Empty({batch_size(), horizon_, nodes()}, torch::kFloat32)};
  }
  void Fill(int64_t b, HostBatch& batch) override {
    float* x = batch.inputs[0].data_ptr<float>() + b * seq_len_ * nodes();
    float* y = batch.target.data_ptr<float>() + b * horizon_ * nodes();
    const size_t row = nodes() * sizeof(float);
    for (int64_t t = 0; t < seq_len_; ++t) std::memcpy(x + t * nodes(), Signals(window() - 1 - t), row);
    for (int64_t h = 0; h < horizon_; ++h) std::memcpy(y + h * nodes(), Signals(horizon_ - 1 - h), row);
  }

  int64_t seq_len_, horizon_;
};

// Classes from the Kuramoto order parameter r in [0, 1]: how synchronised.
int64_t OrderClass(double r, int64_t classes) {
  return std::clamp<int64_t>(static_cast<int64_t>(r * classes), 0, classes - 1);
}

// resnet: channel c of the image is the outer product of the signals c steps
// ago, pixel (y, x) = s[y mod nodes] * s[x mod nodes]; label: order class.
class ImageSource final : public SystemSource {
 public:
  ImageSource(OscillatorNetwork system, int64_t image, int64_t classes, int64_t batch,
              const ProxyOptions& options)
      : SystemSource(std::move(system), 3, batch, options), image_(image), classes_(classes) {}

 private:
  HostBatch Allocate() override {
    return {{Empty({batch_size(), 3, image_, image_}, torch::kFloat32)},
            Empty({batch_size()}, torch::kInt64)};
  }
  void Fill(int64_t b, HostBatch& batch) override {
    float* pixels = batch.inputs[0].data_ptr<float>() + b * 3 * image_ * image_;
    for (int64_t c = 0; c < 3; ++c) {
      const float* s = Signals(c);
      for (int64_t y = 0; y < image_; ++y) {
        const float row = s[y % nodes()];
        for (int64_t x = 0; x < image_; ++x) *pixels++ = row * s[x % nodes()];
      }
    }
    batch.target.data_ptr<int64_t>()[b] = OrderClass(Order(0), classes_);
  }

  int64_t image_, classes_;
};

// transformer: tokens are one node's signal over the window, quantised into
// the vocabulary (the node rotates with the sample); label: order class.
class TokenSource final : public SystemSource {
 public:
  TokenSource(OscillatorNetwork system, int64_t seq_len, int64_t vocab, int64_t classes,
              int64_t batch, const ProxyOptions& options)
      : SystemSource(std::move(system), seq_len, batch, options),
        vocab_(vocab),
        classes_(classes) {}

 private:
  HostBatch Allocate() override {
    return {{Empty({batch_size(), window()}, torch::kInt64)}, Empty({batch_size()}, torch::kInt64)};
  }
  void Fill(int64_t b, HostBatch& batch) override {
    int64_t* tokens = batch.inputs[0].data_ptr<int64_t>() + b * window();
    const int64_t node = sample() % nodes();
    for (int64_t t = 0; t < window(); ++t) {
      const double level = (Signals(window() - 1 - t)[node] + 1.0) / 2.0;
      tokens[t] = std::clamp<int64_t>(static_cast<int64_t>(level * vocab_), 0, vocab_ - 1);
    }
    batch.target.data_ptr<int64_t>()[b] = OrderClass(Order(0), classes_);
  }

  int64_t vocab_, classes_;
};

// decoder, bert: language-model text. Tokens are one node's signal over the
// window quantised into the vocabulary (the node rotates with the sample).
// decoder: inputs are the first seq_len tokens, targets the next token at
// every position. bert: targets are the tokens, inputs the same with every
// kMaskEvery-th position replaced by token 0 (the mask).
class TextSource final : public SystemSource {
 public:
  TextSource(OscillatorNetwork system, int64_t seq_len, int64_t vocab, bool next_token,
             int64_t batch, const ProxyOptions& options)
      : SystemSource(std::move(system), seq_len + (next_token ? 1 : 0), batch, options),
        seq_len_(seq_len),
        vocab_(vocab),
        next_token_(next_token) {}

 private:
  static constexpr int64_t kMaskEvery = 7;
  HostBatch Allocate() override {
    return {{Empty({batch_size(), seq_len_}, torch::kInt64)},
            Empty({batch_size(), seq_len_}, torch::kInt64)};
  }
  void Fill(int64_t b, HostBatch& batch) override {
    int64_t* inputs = batch.inputs[0].data_ptr<int64_t>() + b * seq_len_;
    int64_t* targets = batch.target.data_ptr<int64_t>() + b * seq_len_;
    const int64_t node = sample() % nodes();
    auto token = [&](int64_t t) {
      const double level = (Signals(window() - 1 - t)[node] + 1.0) / 2.0;
      return std::clamp<int64_t>(static_cast<int64_t>(level * vocab_), 0, vocab_ - 1);
    };
    for (int64_t t = 0; t < seq_len_; ++t) {
      inputs[t] = token(t);
      if (next_token_) {
        targets[t] = token(t + 1);
      } else {
        targets[t] = inputs[t];
        if (t % kMaskEvery == kMaskEvery - 1) inputs[t] = 0;
      }
    }
  }
  int64_t seq_len_, vocab_;
  bool next_token_;
};

// dlrm: dense features are the current signals; the ids of lookup l of table
// t hash the (quantised) signal of one node l steps ago; click = whether
// node 0's signal is positive.
class ClickSource final : public SystemSource {
 public:
  ClickSource(OscillatorNetwork system, const WorkloadSpec& spec, const ProxyOptions& options)
      : SystemSource(std::move(system), Param(spec, "lookups"), spec.batch_size, options),
        dense_(Param(spec, "dense")),
        tables_(Param(spec, "tables")),
        rows_(Param(spec, "rows")),
        seed_(options.seed) {}

 private:
  static constexpr int64_t kLevels = 64;

  HostBatch Allocate() override {
    return {{Empty({batch_size(), dense_}, torch::kFloat32),
             Empty({batch_size(), tables_, window()}, torch::kInt64)},
            Empty({batch_size()}, torch::kFloat32)};
  }
  void Fill(int64_t b, HostBatch& batch) override {
    float* dense = batch.inputs[0].data_ptr<float>() + b * dense_;
    const float* now = Signals(0);
    for (int64_t i = 0; i < dense_; ++i) dense[i] = now[i % nodes()];
    int64_t* ids = batch.inputs[1].data_ptr<int64_t>() + b * tables_ * window();
    for (int64_t t = 0; t < tables_; ++t) {
      for (int64_t l = 0; l < window(); ++l) {
        const float s = Signals(l)[(t * window() + l) % nodes()];
        const int64_t level =
            std::clamp<int64_t>(static_cast<int64_t>((s + 1.0f) / 2 * kLevels), 0, kLevels - 1);
        uint64_t key = seed_ ^ ((static_cast<uint64_t>(t) * 1000003u + l) * kLevels + level);
        *ids++ = static_cast<int64_t>(SplitMix64(key) % static_cast<uint64_t>(rows_));
      }
    }
    batch.target.data_ptr<float>()[b] = now[0] > 0 ? 1.0f : 0.0f;
  }

  int64_t dense_, tables_, rows_;
  uint64_t seed_;
};

std::unique_ptr<SyntheticDataSource> MakeSource(const WorkloadSpec& spec, OscillatorNetwork system,
                                                const ProxyOptions& options) {
  const std::string& f = spec.family;
  const int64_t batch = spec.batch_size;
  if (f == "lstm" || f == "cnn" || f == "stgcn") {
    return std::make_unique<ForecastSource>(std::move(system), Param(spec, "seq_len"),
                                            Param(spec, "horizon"), batch, options);
  }
  if (f == "resnet" || f == "resnet_imagenet" || f == "vit") {
    return std::make_unique<ImageSource>(std::move(system), Param(spec, "image"),
                                         Param(spec, "classes"), batch, options);
  }
  if (f == "decoder" || f == "bert") {
    return std::make_unique<TextSource>(std::move(system), Param(spec, "seq_len"),
                                        Param(spec, "vocab"), f == "decoder", batch, options);
  }
  if (f == "transformer") {
    return std::make_unique<TokenSource>(std::move(system), Param(spec, "seq_len"),
                                         Param(spec, "vocab"), Param(spec, "classes"), batch,
                                         options);
  }
  return std::make_unique<ClickSource>(std::move(system), spec, options);
}

}  // namespace

SyntheticDataSource::~SyntheticDataSource() = default;
ProxyModel::~ProxyModel() = default;

absl::StatusOr<Proxy> MakeProxy(const models::WorkloadSpec& spec, const ProxyOptions& options) {
  ASSIGN_OR_RETURN(WorkloadDescriptor descriptor, Describe(spec));
  const WorkloadSpec& normal = descriptor.spec;
  if (normal.kind != WorkloadKind::kModel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", normal.family, "' is an operation family: it has no proxy model"));
  }
  if (options.samples_per_epoch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "samples_per_epoch must be >= 1, got ", options.samples_per_epoch));
  }
  try {
    // Weights come from LibTorch's global generator: seed it for reproducible models.
    torch::manual_seed(options.seed);
    const bool has_nodes = normal.params.count("nodes") > 0;
    OscillatorNetwork system(has_nodes ? Param(normal, "nodes") : kContextNodes, options.seed);
    Proxy proxy;
    proxy.model = BuildNet(normal, system.NormalizedAdjacency());
    proxy.model->To(options.device, torch::kFloat32);
    proxy.data = MakeSource(normal, std::move(system), options);
    proxy.descriptor = std::move(descriptor);
    return proxy;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("building the ", normal.family, " proxy: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("building the ", normal.family, " proxy: ", e.what()));
  }
}

}  // namespace perfcast::models::torch_proxy
