// sfs_bench: times perfcast's forward selection against scikit-learn's on the
// same synthetic data, and says whether both selected the same features.
//
// Data: `rows` × `features` columns uniform in [0.1, 2], a seeded subset of
// `true` columns carrying the signal (y = 1 + Σ c_t x_t + N(0, 0.2²)) and,
// to make selection non-trivial, a few decoys that are noisy copies of true
// columns. The data (features, then the target) goes to a .npy file that
// sfs_sklearn.py reads.
//
// Runs:
//   like-for-like  unit weights, contiguous folds (KFold without shuffling),
//                  R² scoring averaged over folds, exactly `select` features:
//                  the same problem scikit-learn's SequentialFeatureSelector
//                  (LinearRegression, cv=folds) solves;
//   native         perfcast's own setting: 1/y² weights, shuffled folds,
//                  MAPE scoring.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <Eigen/Dense>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "predictor/cross_validation.h"
#include "predictor/folds.h"
#include "predictor/sfs.h"

namespace {

using perfcast::predictor::CrossValidator;
using perfcast::predictor::RegressionOptions;
using perfcast::predictor::Scoring;
using perfcast::predictor::SfsOptions;
using perfcast::predictor::SfsResult;

constexpr char kUsage[] =
    "usage: sfs_bench [--rows=100000] [--features=60] [--true=8] [--select=8]\n"
    "                 [--folds=5] [--seed=2024] [--repeats=3] [--npy=/tmp/sfs_bench.npy]\n"
    "                 [--python=/usr/bin/python3] [--no-sklearn]\n"
    "Times perfcast's SFS and scikit-learn's SequentialFeatureSelector on the same\n"
    "synthetic data and prints both times, their ratio and whether they agree.\n";

struct Flags {
  int64_t rows = 100000;
  int features = 60;
  int true_features = 8;
  int select = 8;
  int folds = 5;
  uint64_t seed = 2024;
  int repeats = 3;
  std::string npy = "/tmp/sfs_bench.npy";
  bool sklearn = true;
  // Debian's interpreter has python3-sklearn; a python3 earlier on PATH
  // (pyenv, venv) often has not.
  std::string python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--no-sklearn") {
      flags.sklearn = false;
      continue;
    }
    std::vector<std::string> parts = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    if (parts.size() != 2) return false;
    const std::string& name = parts[0];
    const std::string& value = parts[1];
    bool ok = true;
    if (name == "--rows") ok = absl::SimpleAtoi(value, &flags.rows);
    else if (name == "--features") ok = absl::SimpleAtoi(value, &flags.features);
    else if (name == "--true") ok = absl::SimpleAtoi(value, &flags.true_features);
    else if (name == "--select") ok = absl::SimpleAtoi(value, &flags.select);
    else if (name == "--folds") ok = absl::SimpleAtoi(value, &flags.folds);
    else if (name == "--seed") ok = absl::SimpleAtoi(value, &flags.seed);
    else if (name == "--repeats") ok = absl::SimpleAtoi(value, &flags.repeats);
    else if (name == "--npy") flags.npy = value;
    else if (name == "--python") flags.python = value;
    else return false;
    if (!ok) return false;
  }
  return flags.true_features <= flags.features && flags.select <= flags.features &&
         flags.repeats >= 1;
}

struct Data {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
  std::vector<int> truth;
};

Data Generate(const Flags& flags) {
  std::mt19937_64 rng(flags.seed);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  std::normal_distribution<double> noise(0, 0.2);
  std::vector<int> columns(flags.features);
  std::iota(columns.begin(), columns.end(), 0);
  for (int i = flags.features - 1; i > 0; --i) std::swap(columns[i], columns[rng() % (i + 1)]);
  Data data;
  data.truth.assign(columns.begin(), columns.begin() + flags.true_features);
  std::sort(data.truth.begin(), data.truth.end());
  // Decoys: the first few non-true columns shadow true ones.
  std::map<int, int> decoy_of;
  for (int d = 0; d < std::min(4, flags.features - flags.true_features) &&
                  d < flags.true_features; ++d) {
    decoy_of[columns[flags.true_features + d]] = data.truth[d];
  }
  data.x.resize(flags.rows, flags.features);
  data.y.resize(flags.rows);
  for (int j = 0; j < flags.features; ++j) {
    for (int64_t i = 0; i < flags.rows; ++i) data.x(i, j) = u(rng);
  }
  for (const auto& [decoy, source] : decoy_of) {
    for (int64_t i = 0; i < flags.rows; ++i) {
      data.x(i, decoy) = 0.7 * data.x(i, source) + 0.3 * data.x(i, decoy);
    }
  }
  for (int64_t i = 0; i < flags.rows; ++i) {
    double y = 1.0;
    for (size_t t = 0; t < data.truth.size(); ++t) y += (0.5 + 0.5 * t) * data.x(i, data.truth[t]);
    data.y(i) = y + noise(rng);
  }
  return data;
}

bool WriteNpy(const std::string& path, const Data& data) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const int64_t rows = data.x.rows();
  const int64_t cols = data.x.cols() + 1;
  std::string header = absl::StrFormat(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  const uint16_t header_len = static_cast<uint16_t>(header.size());
  std::fwrite("\x93NUMPY\x01\x00", 1, 8, file);
  const unsigned char len_bytes[2] = {static_cast<unsigned char>(header_len & 0xff),
                                      static_cast<unsigned char>(header_len >> 8)};
  std::fwrite(len_bytes, 1, 2, file);
  std::fwrite(header.data(), 1, header.size(), file);
  std::vector<double> row(cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j + 1 < cols; ++j) row[j] = data.x(i, j);
    row[cols - 1] = data.y(i);
    std::fwrite(row.data(), sizeof(double), cols, file);
  }
  return std::fclose(file) == 0;
}

struct Timed {
  SfsResult result;
  double prepare_s = 0;  // CrossValidator::Create: the one pass building the Gram blocks
  double select_s = 0;   // SelectForward
};

Timed RunOurs(const Data& data, const std::vector<int>& folds, const RegressionOptions& regression,
              Scoring scoring, int select) {
  using Clock = std::chrono::steady_clock;
  Timed timed;
  const auto start = Clock::now();
  absl::StatusOr<CrossValidator> cv = CrossValidator::Create(data.x, data.y, folds, regression);
  const auto prepared = Clock::now();
  if (!cv.ok()) {
    std::fprintf(stderr, "sfs_bench: %s\n", std::string(cv.status().message()).c_str());
    std::exit(1);
  }
  SfsOptions options;
  options.scoring = scoring;
  options.max_features = select;
  options.min_improvement = -1;  // exactly `select` features, as scikit-learn
  absl::StatusOr<SfsResult> result = SelectForward(*cv, options);
  const auto done = Clock::now();
  if (!result.ok()) {
    std::fprintf(stderr, "sfs_bench: %s\n", std::string(result.status().message()).c_str());
    std::exit(1);
  }
  timed.result = *result;
  timed.prepare_s = std::chrono::duration<double>(prepared - start).count();
  timed.select_s = std::chrono::duration<double>(done - prepared).count();
  return timed;
}

Timed Median(std::vector<Timed> runs) {
  std::sort(runs.begin(), runs.end(), [](const Timed& a, const Timed& b) {
    return a.prepare_s + a.select_s < b.prepare_s + b.select_s;
  });
  return runs[runs.size() / 2];
}

std::string Sorted(std::vector<int> columns) {
  std::sort(columns.begin(), columns.end());
  return absl::StrJoin(columns, ",");
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Data data = Generate(flags);
  std::printf("data: %lld rows x %d candidates, true columns {%s}, select %d, %d-fold\n",
              static_cast<long long>(flags.rows), flags.features,
              absl::StrJoin(data.truth, ",").c_str(), flags.select, flags.folds);

  RegressionOptions unit;
  unit.relative_weights = false;
  std::vector<Timed> like_runs, native_runs;
  const std::vector<int> contiguous = *perfcast::predictor::ContiguousFolds(flags.rows, flags.folds);
  const std::vector<int> shuffled =
      *perfcast::predictor::RandomFolds(flags.rows, flags.folds, flags.seed);
  for (int r = 0; r < flags.repeats; ++r) {
    like_runs.push_back(RunOurs(data, contiguous, unit, Scoring::kR2, flags.select));
    native_runs.push_back(RunOurs(data, shuffled, RegressionOptions{}, Scoring::kMape, flags.select));
  }
  const Timed like = Median(like_runs);
  const Timed native = Median(native_runs);
  const double ours_s = like.prepare_s + like.select_s;
  std::printf("perfcast like-for-like (R2, unit weights, KFold): %.3f s "
              "(Gram blocks %.3f s + selection %.3f s, %lld subsets) selected {%s}\n",
              ours_s, like.prepare_s, like.select_s,
              static_cast<long long>(like.result.candidate_fits),
              Sorted(like.result.selected).c_str());
  std::printf("perfcast native (MAPE, 1/y^2 weights, shuffled folds): %.3f s "
              "(Gram blocks %.3f s + selection %.3f s) selected {%s}\n",
              native.prepare_s + native.select_s, native.prepare_s, native.select_s,
              Sorted(native.result.selected).c_str());
  std::printf("median of %d runs each\n", flags.repeats);

  if (!flags.sklearn) return 0;
  if (!WriteNpy(flags.npy, data)) {
    std::fprintf(stderr, "sfs_bench: cannot write %s\n", flags.npy.c_str());
    return 1;
  }
  const std::string command = absl::StrFormat("%s %s %s %d %d", flags.python, PERFCAST_SFS_SKLEARN_SCRIPT,
                                              flags.npy, flags.select, flags.folds);
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::fprintf(stderr, "sfs_bench: cannot run %s\n", command.c_str());
    return 1;
  }
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  if (pclose(pipe) != 0) {
    std::fprintf(stderr, "sfs_bench: %s failed:\n%s", command.c_str(), output.c_str());
    return 1;
  }
  std::string selected;
  double sklearn_s = 0;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::ConsumePrefix(&line, "SKLEARN ")) continue;
    for (absl::string_view field : absl::StrSplit(line, ' ')) {
      if (absl::ConsumePrefix(&field, "selected=")) selected = std::string(field);
      if (absl::ConsumePrefix(&field, "seconds=")) {
        if (!absl::SimpleAtod(field, &sklearn_s)) sklearn_s = 0;
      }
    }
  }
  if (sklearn_s <= 0) {
    std::fprintf(stderr, "sfs_bench: unexpected output from sklearn:\n%s", output.c_str());
    return 1;
  }
  std::printf("sklearn SequentialFeatureSelector(LinearRegression, cv=%d, scoring=r2): "
              "%.3f s selected {%s}\n", flags.folds, sklearn_s, selected.c_str());
  std::printf("speed-up (sklearn / perfcast like-for-like): %.1fx\n", sklearn_s / ours_s);
  std::printf("same features as sklearn: %s; like-for-like equals truth: %s; "
              "native equals truth: %s\n",
              selected == Sorted(like.result.selected) ? "yes" : "NO",
              Sorted(like.result.selected) == absl::StrJoin(data.truth, ",") ? "yes" : "NO",
              Sorted(native.result.selected) == absl::StrJoin(data.truth, ",") ? "yes" : "NO");
  std::printf("note: perfcast's native scoring is MAPE with relative weights; only the "
              "like-for-like run scores as sklearn does (mean R2 over folds).\n");
  return 0;
}
