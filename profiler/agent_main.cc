// perfcast-agent: profiles this machine and writes the profiles to a local
// SQLite store (the same schema perfcastd imports).
//
//   perfcast-agent run --plan quick --out node.sqlite [--device cpu] [--threads 2]
//   perfcast-agent plan --show default
//   perfcast-agent fingerprint
//   perfcast-agent overhead
//   perfcast-agent collectives --gpus 8 --out node.sqlite   (one process per GPU)
//   perfcast-agent ddp --gpus 8 --workload KEY --out ddp.jsonl
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#ifdef PERFCAST_AGENT_PUSH
#include "client/cli_error.h"
#include "client/command.h"
#include "client/connection.h"
#include "client/importer.h"
#endif
#include "models/gpu_catalog.h"
#include "models/workload.h"
#include "nlohmann/json.hpp"
#include "profiler/device_options.h"
#include "profiler/fingerprint.h"
#include "profiler/launcher.h"
#include "profiler/multi_gpu.h"
#include "profiler/overhead.h"
#include "profiler/plan.h"
#include "profiler/python_probe.h"
#include "profiler/runner.h"
#include "profiler/torch_measurer.h"

namespace perfcast::profiler {
namespace {

using Json = nlohmann::json;

// Exit codes as perfcast's (client/cli_error.h): 1 a failure, 2 bad usage,
// 3 a push that stored the valid profiles but rejected some.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPartial = 3;

int Fail(const absl::Status& status) {
  std::cerr << "perfcast-agent: " << status.message() << "\n";
  return kExitFailure;
}

absl::StatusOr<RunPlan> ResolvePlan(const std::string& name, const std::string& file) {
  if (!file.empty()) return LoadPlanFile(file);
  return BuiltinPlan(name);
}

struct PlanCounts {
  int64_t models = 0;
  int64_t operations = 0;
};

PlanCounts Count(const std::vector<models::WorkloadSpec>& specs) {
  PlanCounts counts;
  for (const models::WorkloadSpec& spec : specs) {
    (spec.kind == models::WorkloadKind::kModel ? counts.models : counts.operations)++;
  }
  return counts;
}

int ShowPlan(const std::string& name, const std::string& file) {
  absl::StatusOr<RunPlan> plan = ResolvePlan(name, file);
  if (!plan.ok()) return Fail(plan.status());
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(*plan);
  if (!specs.ok()) return Fail(specs.status());
  std::map<std::string, int64_t> per_family;
  for (const models::WorkloadSpec& spec : *specs) {
    per_family[absl::StrFormat("%s %s", models::WorkloadKindName(spec.kind), spec.family)]++;
  }
  std::cout << absl::StrFormat("plan %s: %d grids\n", plan->name, plan->grids.size());
  for (const auto& [family, count] : per_family) {
    std::cout << absl::StrFormat("  %-22s %6d\n", family, count);
  }
  const PlanCounts counts = Count(*specs);
  std::cout << absl::StrFormat("total: %d configurations (%d model, %d operation)\n",
                               specs->size(), counts.models, counts.operations);
  if (plan->max_minutes > 0) {
    std::cout << absl::StrFormat("budget: %g minutes\n", plan->max_minutes);
  }
  return 0;
}

// The Python probe's flags (profiler/python_probe.h).
struct ProbeFlags {
  bool off = false;
  std::string python;  // the interpreter; empty: DefaultProbePythons()
  double timeout_s = 120;
};

void AddProbeFlags(CLI::App* command, ProbeFlags& flags) {
  command->add_flag("--no-python-probe", flags.off,
                    "skip the Python probe (per-operation host cost of a Python loop)");
  command->add_option("--python", flags.python,
                      "python with torch for the probe (default: $PERFCAST_PYTHON, the build's "
                      "python, python3)");
  command->add_option("--python-probe-timeout", flags.timeout_s, "seconds before it is killed")
      ->check(CLI::PositiveNumber);
}

// Measures the Python loop's host cost per operation onto `node`. A probe
// that cannot run (no python with torch, a failure, the timeout) leaves the
// fields empty, "not measured", and the run goes on.
void ProbePython(const ProbeFlags& flags, models::Node& node) {
  if (flags.off) {
    std::cerr << "perfcast-agent: python probe: not measured (--no-python-probe)\n";
    return;
  }
  PythonProbeOptions options;
  if (!flags.python.empty()) options.pythons = {flags.python};
  options.device = node.gpu_count > 0 ? "cuda" : "cpu";
  options.timeout = absl::Seconds(flags.timeout_s);
  absl::StatusOr<PythonProbe> probe = RunPythonProbe(options);
  if (!probe.ok()) {
    std::cerr << "perfcast-agent: " << probe.status().message() << "\n";
    return;
  }
  ApplyPythonProbe(*probe, node);
  std::cerr << absl::StrFormat(
      "perfcast-agent: python probe (%s: Python %s, torch %s, %s): %.2f us per op from Python, "
      "%s from TorchScript\n",
      probe->python, probe->python_version, probe->torch_version, options.device,
      probe->python_op_us,
      probe->torchscript_op_us.has_value()
          ? absl::StrFormat("%.2f us", *probe->torchscript_op_us)
          : std::string("not measured"));
  if (probe->loop.has_value()) {
    std::cerr << absl::StrFormat(
        "perfcast-agent: python probe, a tiny model's loop: %.2f us per kernel launch in forward, "
        "%.2f in backward, %.2f in the optimizer, %.2f training, %.2f in inference\n",
        probe->loop->forward_us, probe->loop->backward_us, probe->loop->optimizer_us,
        probe->loop->train_us, probe->loop->inference_us);
  }
}

int Fingerprint(const DeviceOptions& device, const std::string& name, bool measure,
                const ProbeFlags& probe) {
  absl::StatusOr<models::Node> node = profiler::Fingerprint(device, name, measure);
  if (!node.ok()) return Fail(node.status());
  if (measure) ProbePython(probe, *node);
  std::cout << Json::parse(models::NodeToJson(*node)).dump(2) << "\n";
  return 0;
}

struct RunFlags {
  std::string plan = "quick";
  std::string plan_file;
  std::string out = "perfcast-node.sqlite";
  std::string name;
  double max_minutes = 0;
  bool quiet = false;
  ProbeFlags probe;
  std::string server;  // push the store to this perfcastd afterwards
#ifdef PERFCAST_AGENT_PUSH
  client::ConnectionFlags connection;  // TLS and token of the push
#endif
};

#ifdef PERFCAST_AGENT_PUSH
// Sends the whole store (its node and every profile) to perfcastd in one
// import; profiles the server already has count as duplicates.
int Push(const std::shared_ptr<grpc::Channel>& channel, const std::string& server,
         const std::string& store_path) {
  absl::StatusOr<client::ImportReport> report = client::ImportFiles(
      channel, {{store_path, client::ProfileFormat::kAgentSqlite}}, {});
  if (!report.ok()) {
    std::cerr << "perfcast-agent: push to " << server << " failed, the store " << store_path
              << " is kept: " << client::Describe(report.status()) << "\n";
    return kExitFailure;
  }
  std::cerr << absl::StrFormat("perfcast-agent: pushed to %s: %d accepted, %d duplicates, %d rejected\n",
                               server, report->accepted, report->duplicates,
                               report->rejected);
  return report->rejected == 0 ? 0 : kExitPartial;
}
#endif

int Run(const DeviceOptions& device, const RunFlags& flags) {
  absl::StatusOr<RunPlan> plan = ResolvePlan(flags.plan, flags.plan_file);
  if (!plan.ok()) return Fail(plan.status());
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = ExpandPlan(*plan);
  if (!specs.ok()) return Fail(specs.status());
  if (flags.max_minutes < 0) return Fail(absl::InvalidArgumentError("--max-minutes must be >= 0"));
  const double minutes = flags.max_minutes > 0 ? flags.max_minutes : plan->max_minutes;
#ifdef PERFCAST_AGENT_PUSH
  // Unreadable TLS or token files fail now, not after the whole run.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel;
  if (!flags.server.empty()) {
    channel = client::OpenChannel(flags.server, flags.connection);
    if (!channel.ok()) return Fail(channel.status());
  }
#endif

  const absl::Time start = absl::Now();
  absl::StatusOr<models::Node> node = profiler::Fingerprint(device, flags.name, true);
  if (!node.ok()) return Fail(node.status());
  ProbePython(flags.probe, *node);
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenSqliteAgentStore(flags.out);
  if (!store.ok()) return Fail(store.status());
  std::string sensor_note;
  absl::StatusOr<std::unique_ptr<Measurer>> measurer =
      MakeTorchMeasurer(device, node->measured, {}, &sensor_note);
  if (!measurer.ok()) return Fail(measurer.status());
  if (!sensor_note.empty()) std::cerr << "perfcast-agent: note: " << sensor_note << "\n";

  RunOptions options;
  if (minutes > 0) options.budget = absl::Seconds(minutes * 60) - (absl::Now() - start);
  if (!flags.quiet) {
    options.progress = &std::cerr;
    options.progress_bar = isatty(fileno(stderr)) != 0;
  }
  std::cerr << absl::StrFormat("perfcast-agent: node %s (%s), plan %s: %d configurations%s\n",
                               node->name, node->gpu.model, plan->name, specs->size(),
                               minutes > 0 ? absl::StrFormat(", budget %g min", minutes) : "");
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(*specs, plan->timing, *node, **measurer, **store, options);
  if (!summary.ok()) return Fail(summary.status());
  for (const std::string& note : summary->notes) {
    std::cerr << "perfcast-agent: note: " << note << "\n";
  }
  std::cerr << absl::StrFormat(
      "perfcast-agent: %d measured (%d with fewer passes than planned), %d duplicates, %d "
      "skipped, %d not run%s in %.1f s -> %s\n",
      summary->measured, summary->partial, summary->duplicates, summary->skipped,
      summary->not_run, summary->budget_exhausted ? " (budget spent)" : "", summary->elapsed_s,
      flags.out);
#ifdef PERFCAST_AGENT_PUSH
  if (!flags.server.empty()) {
    store->reset();  // close it: the push reads the file
    return Push(*channel, flags.server, flags.out);
  }
#endif
  return 0;
}

int Overhead(const DeviceOptions& device, const OverheadOptions& options) {
  absl::StatusOr<OverheadReport> report = MeasureOverhead(device, options);
  if (!report.ok()) return Fail(report.status());
  for (const OverheadPair& pair : report->pairs) {
    std::cout << absl::StrFormat("%s: agent %.4f ms, bare %.4f ms, ratio %.4f\n",
                                 pair.workload_key, pair.agent_ms, pair.bare_ms,
                                 pair.agent_ms / pair.bare_ms);
  }
  std::cout << absl::StrFormat(
      "overhead: %d pairs: median ratio %.4f (%+.2f%%), p10-p90 %.4f-%.4f\n",
      report->pairs.size(), report->median_ratio, 100 * (report->median_ratio - 1),
      report->p10_ratio, report->p90_ratio);
  return 0;
}

// The multi-GPU subcommands: without --rank this process is the launcher and
// starts one worker per GPU with its own command line; with it, a worker.
struct GroupFlags {
  int gpus = 2;
  int rank = -1;
  int world = 0;
  int port = 0;
};

void AddGroupFlags(CLI::App* command, GroupFlags& flags) {
  command->add_option("--gpus", flags.gpus, "GPUs (processes) taking part, one process each")
      ->check(CLI::Range(1, models::kMaxGpusPerNode));
  // Set by the launcher on its workers' command lines.
  command->add_option("--rank", flags.rank)->group("");
  command->add_option("--world", flags.world)->group("");
  command->add_option("--port", flags.port)->group("");
}

int RunGroup(int argc, char** argv, const DeviceOptions& device, const GroupFlags& group,
             const std::function<absl::Status(const WorkerPlace&)>& worker) {
  if (group.rank >= 0) {
    absl::Status s = worker({group.rank, group.world, group.port});
    return s.ok() ? 0 : Fail(s);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::Status s = LaunchWorkers("/proc/self/exe", args, group.gpus, device.device != "cpu");
  return s.ok() ? 0 : Fail(s);
}

int Main(int argc, char** argv) {
  CLI::App app{"perfcast-agent: profiles this machine into a perfcast SQLite store"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kAgentVersion);
  DeviceOptions device;
  auto add_device_flags = [&device](CLI::App* command) {
    command->add_option("--device", device.device, "auto, cuda or cpu")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
    command->add_option("--threads", device.threads, "LibTorch intra-op threads (0: default)")
        ->check(CLI::NonNegativeNumber);
    command->add_option("--seed", device.seed, "seed for weights, inputs and synthetic data");
  };

  RunFlags run_flags;
  CLI::App* run = app.add_subcommand("run", "run a plan and write the profiles to a store");
  add_device_flags(run);
  run->add_option("--plan", run_flags.plan, "built-in plan: quick, default, full or architectures");
  run->add_option("--plan-file", run_flags.plan_file, "plan file (JSON, or YAML by extension)");
  run->add_option("--out", run_flags.out, "SQLite store to create or extend");
  run->add_option("--name", run_flags.name, "node name (default: <hostname>-<model>)");
  run->add_option("--max-minutes", run_flags.max_minutes,
                  "wall-clock budget; finished configurations are kept");
  run->add_flag("--quiet", run_flags.quiet, "no progress output");
  AddProbeFlags(run, run_flags.probe);
#ifdef PERFCAST_AGENT_PUSH
  run->add_option("--server", run_flags.server,
                  "perfcastd host:port: register this node and push the profiles after the run");
  bool push = false;
  run->add_flag("--push", push,
                "push after the run to --server, else to $PERFCAST_SERVER (as perfcast reads it)");
  run->callback([&run_flags, &push] {
    const char* env = std::getenv("PERFCAST_SERVER");
    if (push && run_flags.server.empty() && env != nullptr) run_flags.server = env;
    if (push && run_flags.server.empty()) {
      throw CLI::ValidationError("--push", "needs --server or $PERFCAST_SERVER");
    }
  });
  client::AddConnectionFlags(*run, run_flags.connection);
#endif

  std::string show_plan = "default";
  std::string show_file;
  CLI::App* plan = app.add_subcommand("plan", "show a plan's expanded grid");
  plan->add_option("--show", show_plan, "built-in plan to expand");
  plan->add_option("--plan-file", show_file, "plan file to expand instead");

  std::string fingerprint_name;
  bool no_measure = false;
  CLI::App* fingerprint = app.add_subcommand("fingerprint", "print this node as JSON");
  add_device_flags(fingerprint);
  fingerprint->add_option("--name", fingerprint_name, "node name");
  fingerprint->add_flag("--no-measure", no_measure,
                        "skip the micro-benchmarks and the Python probe");
  ProbeFlags fingerprint_probe;
  AddProbeFlags(fingerprint, fingerprint_probe);

  OverheadOptions overhead_options;
  CLI::App* overhead =
      app.add_subcommand("overhead", "agent-timed step vs a bare LibTorch loop of the same model");
  add_device_flags(overhead);
  overhead->add_option("--families", overhead_options.families, "model families (fp32 training)")
      ->delimiter(',');
  overhead->add_option("--batch", overhead_options.batch, "batch size")
      ->check(CLI::PositiveNumber);
  overhead->add_option("--pairs", overhead_options.pairs, "alternating pairs over all families")
      ->check(CLI::PositiveNumber);
  overhead->add_option("--block-ms", overhead_options.block_ms, "timed work of each side")
      ->check(CLI::PositiveNumber);

  GroupFlags collectives_group;
  CollectivesFlags collectives_flags;
  CLI::App* collectives = app.add_subcommand(
      "collectives", "time all-reduces over --gpus GPUs (NCCL; Gloo on CPUs) into a store");
  add_device_flags(collectives);
  AddGroupFlags(collectives, collectives_group);
  collectives->add_option("--sizes", collectives_flags.sizes,
                          "message sizes: FROM:TO (powers of 4) or a list, e.g. 4K:1G or 1M,64M");
  collectives->add_option("--out", collectives_flags.out, "SQLite store to create or extend");
  collectives->add_option("--name", collectives_flags.name, "node name (default: <hostname>-<model>)");
  collectives->add_option("--node-gpus", collectives_flags.node_gpus,
                          "GPUs the node has (default: --gpus)")
      ->check(CLI::Range(0, models::kMaxGpusPerNode));

  GroupFlags ddp_group;
  DdpFlags ddp_flags;
  CLI::App* ddp = app.add_subcommand(
      "ddp", "data-parallel proxy: a model's step alone and over --gpus GPUs, to JSON lines");
  add_device_flags(ddp);
  AddGroupFlags(ddp, ddp_group);
  ddp->add_option("--workload", ddp_flags.workload,
                  "workload key; its batch is the global batch, e.g. "
                  "model/transformer{layers=12}/b32/bf16-amp/train/adam")
      ->required();
  ddp->add_option("--out", ddp_flags.out, "JSON-lines file to append the result to");
  ddp->add_option("--steps", ddp_flags.steps, "timed steps")->check(CLI::PositiveNumber);
  ddp->add_option("--warmup", ddp_flags.warmup, "untimed steps first")
      ->check(CLI::NonNegativeNumber);
  ddp->add_option("--bucket-mib", ddp_flags.bucket_mib, "gradient bucket size (DDP: 25)")
      ->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string message = e.what();
#ifdef PERFCAST_AGENT_PUSH
    // "unknown command 'rn' for 'perfcast-agent' (commands: run, plan, ...)"
    // where CLI11 would say only that a subcommand is required.
    if (std::string unknown = client::UnknownCommand(app, argc, argv); !unknown.empty()) {
      message = unknown;
    }
#endif
    std::cerr << "perfcast-agent: " << message << " (see --help)\n";
    return kExitUsage;
  }
  if (*collectives) {
    if (collectives_group.gpus < 2) return Fail(absl::InvalidArgumentError("--gpus must be >= 2"));
    if (absl::StatusOr<std::vector<int64_t>> sizes = ParseMessageSizes(collectives_flags.sizes);
        !sizes.ok()) {
      return Fail(sizes.status());
    }
    return RunGroup(argc, argv, device, collectives_group, [&](const WorkerPlace& place) {
      return RunCollectivesWorker(device, place, collectives_flags);
    });
  }
  if (*ddp) {
    if (absl::StatusOr<models::WorkloadSpec> spec = CheckDdpFlags(ddp_flags, ddp_group.gpus);
        !spec.ok()) {
      return Fail(spec.status());
    }
    return RunGroup(argc, argv, device, ddp_group, [&](const WorkerPlace& place) {
      return RunDdpWorker(device, place, ddp_flags);
    });
  }
  if (*run) return Run(device, run_flags);
  if (*plan) return ShowPlan(show_plan, show_file);
  if (*fingerprint) return Fingerprint(device, fingerprint_name, !no_measure, fingerprint_probe);
  return Overhead(device, overhead_options);
}

}  // namespace
}  // namespace perfcast::profiler

int main(int argc, char** argv) { return perfcast::profiler::Main(argc, argv); }
