// OscillatorNetwork: the dynamical system behind the proxies' synthetic data.
// Swing equations (a second-order Kuramoto model, as used for power grids) on
// a random small-world graph:
//   d theta_i / dt = omega_i
//   d omega_i / dt = P_i - damping * omega_i + coupling * sum_j A_ij sin(theta_j - theta_i)
// with zero-sum random injections P_i, integrated with classic RK4. Observed
// signals are sin(theta_i) in [-1, 1]; the Kuramoto order parameter r in
// [0, 1] summarises synchrony. Plain C++ (no LibTorch), deterministic by seed
// on every platform (own random numbers, no <random> distributions).
//
// Not thread-safe; cheap to copy.
#ifndef PERFCAST_MODELS_TORCH_OSCILLATORS_H_
#define PERFCAST_MODELS_TORCH_OSCILLATORS_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace perfcast::models::torch_proxy {

// SplitMix64: a tiny, well-mixed, portable generator (also a good hash).
uint64_t SplitMix64(uint64_t& state);
// Uniform in [0, 1) from the top 53 bits.
double UniformDouble(uint64_t& state);

class OscillatorNetwork {
 public:
  // `nodes` >= 1. Builds the graph (a ring linking each node to its two
  // neighbours on either side, plus ~nodes/4 random chords), draws the
  // injections and the initial state, and integrates a short burn-in.
  OscillatorNetwork(int64_t nodes, uint64_t seed);

  // Back to the state right after the burn-in.
  void Reset();
  // One sample step: `kSubsteps` RK4 steps of dt.
  void Advance();
  // sin(theta_i) for every node, written to out[0 .. nodes).
  void Signals(float* out) const;
  double OrderParameter() const;

  int64_t nodes() const { return nodes_; }
  const std::vector<std::pair<int64_t, int64_t>>& edges() const { return edges_; }
  // Dense D^-1/2 (A + I) D^-1/2, row-major [nodes, nodes] (the STGCN graph conv).
  std::vector<float> NormalizedAdjacency() const;

  static constexpr int kSubsteps = 4;
  static constexpr double kDt = 0.05;

 private:
  // d(state)/dt for state = [theta (nodes), omega (nodes)].
  void Derivative(const std::vector<double>& state, std::vector<double>& out) const;
  void RungeKuttaStep();

  int64_t nodes_;
  std::vector<std::pair<int64_t, int64_t>> edges_;
  std::vector<double> power_;
  std::vector<double> state_;
  std::vector<double> initial_state_;
  // RK4 scratch, kept to avoid allocations per step.
  std::vector<double> k1_, k2_, k3_, k4_, tmp_;
};

}  // namespace perfcast::models::torch_proxy

#endif  // PERFCAST_MODELS_TORCH_OSCILLATORS_H_
