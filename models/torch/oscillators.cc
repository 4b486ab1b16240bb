#include "models/torch/oscillators.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace perfcast::models::torch_proxy {
namespace {

constexpr double kCoupling = 1.5;
constexpr double kDamping = 0.1;
constexpr int kBurnInSteps = 32;
constexpr double kPi = 3.14159265358979323846;

}  // namespace

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double UniformDouble(uint64_t& state) {
  return static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;
}

OscillatorNetwork::OscillatorNetwork(int64_t nodes, uint64_t seed) : nodes_(nodes) {
  uint64_t rng = seed ^ 0x5eedf00dULL;
  std::set<std::pair<int64_t, int64_t>> unique;
  auto link = [&](int64_t a, int64_t b) {
    if (a == b) return;
    unique.insert({std::min(a, b), std::max(a, b)});
  };
  for (int64_t i = 0; i < nodes; ++i) {
    link(i, (i + 1) % nodes);
    link(i, (i + 2) % nodes);
  }
  for (int64_t c = 0; c < nodes / 4; ++c) {
    link(static_cast<int64_t>(UniformDouble(rng) * nodes),
         static_cast<int64_t>(UniformDouble(rng) * nodes));
  }
  edges_.assign(unique.begin(), unique.end());

  power_.resize(nodes);
  double mean = 0;
  for (double& p : power_) {
    p = 2 * UniformDouble(rng) - 1;
    mean += p / nodes;
  }
  for (double& p : power_) p -= mean;

  state_.resize(2 * nodes);
  for (int64_t i = 0; i < nodes; ++i) {
    state_[i] = 2 * kPi * UniformDouble(rng);
    state_[nodes + i] = 0.5 * (2 * UniformDouble(rng) - 1);
  }
  for (auto* v : {&k1_, &k2_, &k3_, &k4_, &tmp_}) v->resize(2 * nodes);
  for (int i = 0; i < kBurnInSteps; ++i) Advance();
  initial_state_ = state_;
}

void OscillatorNetwork::Reset() { state_ = initial_state_; }

void OscillatorNetwork::Derivative(const std::vector<double>& state,
                                   std::vector<double>& out) const {
  const double* theta = state.data();
  const double* omega = state.data() + nodes_;
  for (int64_t i = 0; i < nodes_; ++i) {
    out[i] = omega[i];
    out[nodes_ + i] = power_[i] - kDamping * omega[i];
  }
  for (const auto& [a, b] : edges_) {
    const double force = kCoupling * std::sin(theta[b] - theta[a]);
    out[nodes_ + a] += force;
    out[nodes_ + b] -= force;
  }
}

void OscillatorNetwork::RungeKuttaStep() {
  const size_t n = state_.size();
  Derivative(state_, k1_);
  for (size_t i = 0; i < n; ++i) tmp_[i] = state_[i] + 0.5 * kDt * k1_[i];
  Derivative(tmp_, k2_);
  for (size_t i = 0; i < n; ++i) tmp_[i] = state_[i] + 0.5 * kDt * k2_[i];
  Derivative(tmp_, k3_);
  for (size_t i = 0; i < n; ++i) tmp_[i] = state_[i] + kDt * k3_[i];
  Derivative(tmp_, k4_);
  for (size_t i = 0; i < n; ++i) {
    state_[i] += kDt / 6 * (k1_[i] + 2 * k2_[i] + 2 * k3_[i] + k4_[i]);
  }
}

void OscillatorNetwork::Advance() {
  for (int s = 0; s < kSubsteps; ++s) RungeKuttaStep();
}

void OscillatorNetwork::Signals(float* out) const {
  for (int64_t i = 0; i < nodes_; ++i) out[i] = static_cast<float>(std::sin(state_[i]));
}

double OscillatorNetwork::OrderParameter() const {
  double re = 0, im = 0;
  for (int64_t i = 0; i < nodes_; ++i) {
    re += std::cos(state_[i]);
    im += std::sin(state_[i]);
  }
  return std::hypot(re, im) / nodes_;
}

std::vector<float> OscillatorNetwork::NormalizedAdjacency() const {
  std::vector<double> degree(nodes_, 1.0);  // self loop
  for (const auto& [a, b] : edges_) {
    degree[a] += 1;
    degree[b] += 1;
  }
  std::vector<float> adjacency(nodes_ * nodes_, 0.0f);
  auto set = [&](int64_t a, int64_t b) {
    adjacency[a * nodes_ + b] = static_cast<float>(1.0 / std::sqrt(degree[a] * degree[b]));
  };
  for (int64_t i = 0; i < nodes_; ++i) set(i, i);
  for (const auto& [a, b] : edges_) {
    set(a, b);
    set(b, a);
  }
  return adjacency;
}

}  // namespace perfcast::models::torch_proxy
