// perfcast nodes register|get|list|remove
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/command.h"
#include "client/table.h"
#include "client/text_input.h"
#include "models/gpu_catalog.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "proto/convert.h"

namespace perfcast::client {
namespace {

struct RegisterOptions {
  std::string name;
  std::string gpu;
  std::string spec_file;
  int count = 1;
  std::vector<std::string> labels;
  double python_op_us = 0;  // 0: not measured
};

absl::StatusOr<std::map<std::string, std::string>> ParseLabels(const std::vector<std::string>& items) {
  std::map<std::string, std::string> labels;
  for (const std::string& item : items) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.first.empty() || item.find('=') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("label '", item, "' is not key=value"));
    }
    labels[kv.first] = kv.second;
  }
  return labels;
}

// `stream`: a list's records (nodes list) rather than one answer.
void PrintNodes(ClientContext& context, const std::vector<v1::Node>& nodes, bool stream) {
  if (context.Structured()) {
    for (const v1::Node& node : nodes) {
      absl::StatusOr<models::Node> converted = proto::FromProto(node);
      if (!converted.ok()) continue;
      const nlohmann::json json = nlohmann::json::parse(models::NodeToJson(*converted));
      stream ? context.Out().Record(json) : context.Out().Document(json);
    }
    return;
  }
  Table table({"NAME", "GPU", "COUNT", "SOURCE", "MEM GiB", "BW GB/s", "BF16 TF/s", "MEASURED", "LABELS"});
  for (const v1::Node& n : nodes) {
    // Stored before names had to be printable, a name could hold terminal
    // escapes; tables show every text field escaped.
    std::string labels;
    for (const auto& [key, value] : n.labels()) {
      absl::StrAppend(&labels, labels.empty() ? "" : ",", Printable(key), "=", Printable(value));
    }
    const char* source = n.source() == v1::NODE_SOURCE_AGENT       ? "agent"
                         : n.source() == v1::NODE_SOURCE_SPEC_FILE ? "spec"
                                                                   : "catalog";
    table.AddRow({Printable(n.name()), Printable(n.gpu().model()), absl::StrCat(n.gpu_count()),
                  source,
                  absl::StrFormat("%.0f", n.gpu().memory_gib()),
                  absl::StrFormat("%.0f", n.gpu().memory_bandwidth_gbs()),
                  absl::StrFormat("%.1f", n.gpu().bf16_tflops()),
                  n.measured().has_memory_bandwidth_gbs() || n.measured().has_launch_latency_us()
                      ? "yes"
                      : "no",
                  labels});
  }
  table.Print(std::cout, context.TableWidth());
}

std::optional<CliError> RunRegister(ClientContext& context, const RegisterOptions& options) {
  v1::RegisterNodeRequest request;
  if (!options.spec_file.empty()) {
    std::ifstream in(options.spec_file);
    if (!in) return CliError{kExitFailure, absl::StrCat("cannot read ", options.spec_file)};
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<models::Node> node =
        models::NodeFromSpecJson(text.str(), models::GpuCatalog::BuiltIn());
    if (!node.ok()) {
      return CliError{kExitFailure, absl::StrCat(options.spec_file, ": ", node.status().message())};
    }
    request.set_name(options.name.empty() ? node->name : options.name);
    proto::ToProto(node->gpu, request.mutable_gpu());
    request.set_gpu_count(node->gpu_count);
    for (const auto& [key, value] : node->labels) (*request.mutable_labels())[key] = value;
  } else {
    if (options.name.empty() || options.gpu.empty()) {
      return CliError{kExitUsage, "nodes register needs --name and --gpu (or --spec FILE)"};
    }
    // An ambiguous short name is a usage error here, as in every other --gpu.
    std::string gpu = options.gpu;
    if (auto error = ResolveGpuFlag("--gpu", gpu)) return error;
    request.set_name(options.name);
    request.set_catalog_gpu(gpu);
    request.set_gpu_count(options.count);
  }
  absl::StatusOr<std::map<std::string, std::string>> labels = ParseLabels(options.labels);
  if (!labels.ok()) return CliError{kExitUsage, std::string(labels.status().message())};
  for (const auto& [key, value] : *labels) (*request.mutable_labels())[key] = value;
  if (options.python_op_us > 0) request.mutable_measured()->set_python_op_us(options.python_op_us);

  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  auto stub = v1::NodeRegistry::NewStub(*channel);
  grpc::ClientContext call;
  context.SetDeadline(call);
  v1::RegisterNodeResponse response;
  grpc::Status status = stub->Register(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  PrintNodes(context, {response.node()}, /*stream=*/false);
  return std::nullopt;
}

std::optional<CliError> RunGet(ClientContext& context, const std::string& name) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  auto stub = v1::NodeRegistry::NewStub(*channel);
  grpc::ClientContext call;
  context.SetDeadline(call);
  v1::GetNodeRequest request;
  request.set_name(name);
  v1::GetNodeResponse response;
  grpc::Status status = stub->Get(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  PrintNodes(context, {response.node()}, /*stream=*/false);
  return std::nullopt;
}

std::optional<CliError> RunList(ClientContext& context, std::string gpu,
                                const std::vector<std::string>& label_items) {
  if (auto error = ResolveGpuFlag("--gpu", gpu)) return error;
  absl::StatusOr<std::map<std::string, std::string>> labels = ParseLabels(label_items);
  if (!labels.ok()) return CliError{kExitUsage, std::string(labels.status().message())};
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  auto stub = v1::NodeRegistry::NewStub(*channel);
  std::vector<v1::Node> nodes;
  std::string token;
  do {
    grpc::ClientContext call;
    context.SetDeadline(call);
    v1::ListNodesRequest request;
    request.set_gpu_model(gpu);
    for (const auto& [key, value] : *labels) (*request.mutable_labels())[key] = value;
    request.set_page_size(500);
    request.set_page_token(token);
    v1::ListNodesResponse response;
    grpc::Status status = stub->List(&call, request, &response);
    if (!status.ok()) return CallFailed(status);
    for (const v1::Node& node : response.nodes()) nodes.push_back(node);
    token = response.next_page_token();
  } while (!token.empty());
  PrintNodes(context, nodes, /*stream=*/true);
  return std::nullopt;
}

std::optional<CliError> RunRemove(ClientContext& context, const std::string& name, bool purge) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  auto stub = v1::NodeRegistry::NewStub(*channel);
  grpc::ClientContext call;
  context.SetDeadline(call);
  v1::DeregisterNodeRequest request;
  request.set_name(name);
  request.set_purge_profiles(purge);
  v1::DeregisterNodeResponse response;
  grpc::Status status = stub->Deregister(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  if (context.Structured()) {
    context.Out().Document({{"removed", name}});
  } else {
    std::cout << "removed node " << Printable(name) << "\n";
  }
  return std::nullopt;
}

}  // namespace

void RegisterNodeCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  CLI::App* nodes = app.add_subcommand("nodes", "Register, inspect and remove GPU nodes");
  nodes->require_subcommand(1);

  auto reg = std::make_shared<RegisterOptions>();
  CLI::App* register_cmd = nodes->add_subcommand(
      "register", "Register a node from the GPU catalog (--gpu) or a JSON spec file (--spec)");
  register_cmd->add_option("--name", reg->name, "Unique node name");
  register_cmd->add_option("--gpu", reg->gpu, "Catalog GPU model, e.g. H100-SXM5-80GB");
  register_cmd->add_option("--count", reg->count, "GPUs in the node")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  register_cmd->add_option("--spec", reg->spec_file, "JSON node spec file (schema below)")
      ->check(CLI::ExistingFile);
  register_cmd->footer(models::SpecFileSchemaHelp());
  register_cmd->add_option("--label", reg->labels, "key=value (repeatable)");
  register_cmd
      ->add_option("--python-op-us", reg->python_op_us,
                   "The node's Python host cost per operation, as its Python probe measured it "
                   "(python3 profiler/python_probe.py: python_op_us; the agent stores it itself): "
                   "prices the Python loop and a layout's host on this node")
      ->check(CLI::PositiveNumber);
  register_cmd->callback([&context, &dispatch, reg] {
    dispatch.action = [&context, reg] { return RunRegister(context, *reg); };
  });

  auto name = std::make_shared<std::string>();
  CLI::App* get = nodes->add_subcommand("get", "Show one node");
  get->add_option("name", *name, "Node name")->required();
  get->callback([&context, &dispatch, name] {
    dispatch.action = [&context, name] { return RunGet(context, *name); };
  });

  auto gpu = std::make_shared<std::string>();
  auto labels = std::make_shared<std::vector<std::string>>();
  CLI::App* list = nodes->add_subcommand("list", "List nodes");
  list->add_option("--gpu", *gpu, "Only this GPU model");
  list->add_option("--label", *labels, "Only nodes with key=value (repeatable)");
  list->callback([&context, &dispatch, gpu, labels] {
    dispatch.action = [&context, gpu, labels] { return RunList(context, *gpu, *labels); };
  });

  auto remove_name = std::make_shared<std::string>();
  auto purge = std::make_shared<bool>(false);
  CLI::App* remove = nodes->add_subcommand("remove", "Deregister a node");
  remove->add_option("name", *remove_name, "Node name")->required();
  remove->add_flag("--purge-profiles", *purge, "Also delete the node's profiles");
  remove->callback([&context, &dispatch, remove_name, purge] {
    dispatch.action = [&context, remove_name, purge] {
      return RunRemove(context, *remove_name, *purge);
    };
  });
}

}  // namespace perfcast::client
