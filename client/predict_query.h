// The workload and target flags that `predict`, its sweeps and `recommend`
// share, and the formatting of their answers.
#ifndef PERFCAST_CLIENT_PREDICT_QUERY_H_
#define PERFCAST_CLIENT_PREDICT_QUERY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/cli_error.h"
#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

// Help texts of the workload flags `predict` and `recommend` both take. The
// precisions are also the completion's values; README.md, "Precisions", says
// what each means.
inline constexpr char kPrecisionHelp[] =
    "fp32, tf32, strict-fp32, fp16-amp, bf16-amp, fp64, fp8, int8";
inline constexpr char kPhaseHelp[] = "train or inference";
inline constexpr char kLocalHelp[] =
    "Answer without a server: perfcastd's services in this process, on the shipped profiles "
    "and a model fitted on them as `make demo` fits it (fitted on first use, then cached under "
    "$XDG_CACHE_HOME/perfcast; where it comes from is printed on stderr)";
inline constexpr char kOptimizerHelp[] = "adam, adamw, sgd or none (forward + backward only)";
inline constexpr char kLoopHelp[] =
    "The loop that runs it: python (eager PyTorch from Python, what most scripts run; adds the "
    "interpreter's host work per operation) or cpp (a LibTorch loop, as the agent measures)";

struct PredictFlags {
  std::string family;
  // An operation family (gemm, softmax, ...) instead of a model family: one
  // call, priced by its class's level-1 model.
  std::string op;
  std::vector<std::string> params;  // "name=value", or several joined by ';' or ','
  int64_t batch = 0;
  std::string precision = "fp32";
  std::string phase = "train";
  std::string optimizer;
  std::string loop = "python";  // python or cpp (models::ParseLoop)
  std::string node;
  std::string gpu;
  int64_t samples = 0;
  int64_t epochs = 0;
  int64_t iterations = 0;
  std::string model;
  std::string batch_file;
  std::vector<std::string> sweeps;  // "key=v1,v2,..."
  // The model as the user describes it, instead of --family and --param.
  std::string hf_config;    // path of a Hugging Face config.json
  std::string torchvision;  // a torchvision model name
  int64_t seq_len = 0;      // with hf_config; 0: the model's maximum positions
  int64_t image = 0;        // with torchvision; 0: 224
  // Multi-GPU layout (predictor/layout.h); 1 everywhere: one GPU.
  int data_parallel = 1;
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int micro_batches = 1;
  int zero = 0;                   // ZeRO stage, 0-3
  bool activation_checkpointing = false;
  std::string framework = "pytorch";  // pytorch, megatron, deepspeed
  // Whether the batch size and a job size were given (flags or columns).
  bool batch_given = false;
  bool job_given = false;
};

// Fills the workload of `flags` (family and params, an operation family and
// its shape, or a Hugging Face config or torchvision name for the server to
// resolve; batch, precision, phase, optimizer). A usage error names the bad
// flag.
std::optional<CliError> BuildWorkload(const PredictFlags& flags, v1::Workload* workload);

// For --family or --op given on the command line: a usage error with the
// nearest known name when the family is unknown. (A batch file's rows are
// the server's to refuse one by one.)
std::optional<CliError> CheckFamilyFlag(const PredictFlags& flags);

// The usage error text for a --gpu the catalog refused: "did you mean" the
// nearest catalog name when there is one, else the catalog's message.
std::string UnknownGpuMessage(const char* flag, const std::string& typed,
                              const absl::Status& status);

// One Predict query: the target (--node or --gpu, a catalog GPU resolved here
// so that a misspelt or ambiguous name is named at once), the workload, the
// job size, the model name and the multi-GPU layout, checked in the order a
// reader looks for them so that the first real problem is reported; the
// server checks everything again. An operation (--op) needs no batch (its
// shape is in its params) and, without a job size, is one call.
std::optional<CliError> BuildQuery(const PredictFlags& flags, v1::PredictRequest* query);

// The multi-GPU layout of `flags` into `query` (none for the plain one-GPU
// step): degrees below 1 and an unknown --framework are usage errors; the
// combination is the server's (predictor::ValidateLayout) to check.
std::optional<CliError> BuildLayout(const PredictFlags& flags, v1::PredictRequest* query);

// "12.5 s", "3.2 min", "4.10 h", "2.5 days".
std::string Duration(double seconds);
// One unit of time for a whole column or chart axis, so that rows and the
// chart read in the same unit: the unit Duration would choose for `seconds`
// (the largest value shown).
struct TimeUnit {
  const char* name;  // "s", "min", "h", "days"
  double seconds;    // in one unit
};
TimeUnit TimeUnitFor(double seconds);
// `seconds` in `unit`, e.g. "4.12 h".
std::string InUnit(double seconds, TimeUnit unit);

// "1.5 GiB".
std::string GiB(double bytes);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_PREDICT_QUERY_H_
