// perfcast memory: the per-GPU memory breakdown of a workload and layout,
// and the catalog GPUs it fits, answered by this binary alone.
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "client/command.h"
#include "client/memory_breakdown.h"
#include "client/predict_query.h"
#include "models/gpu_catalog.h"

namespace perfcast::client {
namespace {

struct MemoryFlags {
  PredictFlags workload;
  std::vector<std::string> gpus;
};

std::optional<CliError> RunMemory(ClientContext& context, const MemoryFlags& flags) {
  const PredictFlags& f = flags.workload;
  if (auto error = CheckFamilyFlag(f)) return error;
  if (f.family.empty() && f.hf_config.empty() && f.torchvision.empty()) {
    return CliError{kExitUsage, "--family (or --hf-config, --torchvision) is required"};
  }
  if (!f.batch_given) return CliError{kExitUsage, "--batch (samples per step) is required"};
  v1::PredictRequest request;
  if (auto error = BuildWorkload(f, request.mutable_workload())) return error;
  if (auto error = BuildLayout(f, &request)) return error;
  const models::GpuCatalog& catalog = models::GpuCatalog::BuiltIn();
  std::vector<models::GpuSpec> gpus;
  if (flags.gpus.empty()) {
    gpus = catalog.gpus();
  } else {
    for (const std::string& name : flags.gpus) {
      absl::StatusOr<models::GpuSpec> gpu = catalog.Find(name);
      if (!gpu.ok()) return CliError{kExitUsage, UnknownGpuMessage("--gpu", name, gpu.status())};
      gpus.push_back(*std::move(gpu));
    }
  }
  absl::StatusOr<MemoryBreakdown> breakdown = BreakDownMemory(request, gpus);
  if (!breakdown.ok()) {
    // Everything is checked here, nothing was sent: a refusal of the
    // workload or layout is the command line's fault.
    const absl::StatusCode code = breakdown.status().code();
    return CliError{code == absl::StatusCode::kInvalidArgument ||
                            code == absl::StatusCode::kNotFound
                        ? kExitUsage
                        : kExitFailure,
                    Describe(breakdown.status())};
  }
  if (context.Structured()) {
    context.Out().Document(MemoryBreakdownJson(*breakdown));
  } else {
    PrintMemoryBreakdown(*breakdown, context.TableWidth(), std::cout);
  }
  // The GPUs named on the command line must all hold it, as predict's
  // refusal of a layout that does not fit.
  if (!flags.gpus.empty()) {
    for (const GpuMemoryFit& gpu : breakdown->gpus) {
      if (!gpu.fits) {
        return CliError{kExitPartial,
                        absl::StrCat("does not fit: ", gpu.gpu, " has ", GiB(gpu.device_bytes),
                                     ", the step needs ", GiB(breakdown->memory.required()),
                                     " per GPU")};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

void RegisterMemoryCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  auto flags = std::make_shared<MemoryFlags>();
  PredictFlags& f = flags->workload;
  CLI::App* m = app.add_subcommand(
      "memory",
      "Memory per GPU of a training step (or inference batch) under a layout: weights, "
      "gradients, optimizer states, activations, buffers, allocator slack, CUDA context; and "
      "the catalog GPUs it fits. Needs no server and no fitted model");
  m->add_option("--family", f.family,
                "Model family: lstm, cnn, stgcn, resnet, transformer, dlrm, decoder, bert, vit, "
                "resnet_imagenet; or --hf-config, --torchvision");
  m->add_option("--hf-config", f.hf_config,
                "A Hugging Face config.json (gpt2, opt, llama, mistral, bert) instead of --family")
      ->check(CLI::ExistingFile);
  m->add_option("--torchvision", f.torchvision,
                "A torchvision model (resnet18..resnet152, vit_b_16, ...) instead of --family");
  m->add_option("--seq-len", f.seq_len,
                "Tokens per sample with --hf-config (default: the model's maximum)")
      ->check(DecimalInteger())
      ->check(CLI::PositiveNumber);
  m->add_option("--image", f.image, "Image size in pixels with --torchvision (default: 224)")
      ->check(DecimalInteger())
      ->check(CLI::PositiveNumber);
  m->add_option("--param", f.params, "Architecture parameter name=value (repeatable)");
  m->add_option("--batch", f.batch, "Batch size (samples per step; global with a layout)")
      ->check(DecimalInteger());
  m->add_option("--precision", f.precision, kPrecisionHelp)->capture_default_str();
  m->add_option("--phase", f.phase, kPhaseHelp)->capture_default_str();
  m->add_option("--optimizer", f.optimizer, kOptimizerHelp);
  m->add_option("--data-parallel", f.data_parallel,
                "Data-parallel replicas (--batch is then the global batch)");
  m->add_option("--tensor-parallel", f.tensor_parallel,
                "Megatron tensor-parallel degree (divides the attention heads)");
  m->add_option("--pipeline-parallel", f.pipeline_parallel,
                "Pipeline stages of contiguous layers (1F1B)");
  m->add_option("--micro-batches", f.micro_batches, "Micro-batches per replica and step");
  m->add_option("--zero", f.zero,
                "ZeRO stage over the data-parallel replicas: 0, 1 (optimizer states), 2 (+ "
                "gradients; FSDP SHARD_GRAD_OP), 3 (+ parameters; FSDP FULL_SHARD)");
  m->add_flag("--activation-checkpointing", f.activation_checkpointing,
              "Recompute each layer's activations in backward");
  m->add_option("--framework", f.framework,
                "What runs the layout: pytorch (DDP, FSDP2, DTensor TP, pipelining), megatron, "
                "deepspeed")
      ->capture_default_str();
  m->add_option("--gpu", flags->gpus,
                "Only these catalog GPUs (repeatable; default: every GPU of known memory); exit 3 "
                "when it does not fit on one of them");
  m->add_flag("--local", context.local,
              "Accepted for symmetry with predict and recommend: memory always answers here");
  m->callback([&context, &dispatch, flags, m] {
    flags->workload.batch_given = m->count("--batch") > 0;
    dispatch.action = [&context, flags] { return RunMemory(context, *flags); };
  });
}

}  // namespace perfcast::client
