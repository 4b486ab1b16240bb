// perfcast gpus list | completion bash|zsh|fish | __complete, and the parser
// helpers main() uses:
// what the CLI answers without a server.
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/command.h"
#include "client/predict_query.h"
#include "client/suggest.h"
#include "client/table.h"
#include "client/text_input.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/node_registry.grpc.pb.h"

namespace perfcast::client {
namespace {

const CLI::App* FindSubcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

// The option `name` (e.g. "--server" or "-o") of `app` or of the parents its
// flags fall through to; null when none has it.
const CLI::Option* FindOption(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options({})) {
      if (option->check_name(name)) return option;
    }
  }
  return nullptr;
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> FlagNames(const CLI::App* app) {
  std::set<std::string> names;
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options({})) {
      for (const std::string& l : option->get_lnames()) names.insert("--" + l);
      for (const std::string& s : option->get_snames()) names.insert("-" + s);
    }
  }
  names.insert("--help");
  return {names.begin(), names.end()};
}

// The values the option named `name` ("--gpu") takes, for completion.
std::vector<std::string> CompletionValues(const std::string& name, ClientContext& context) {
  std::vector<std::string> values;
  if (name == "--gpu" || absl::EndsWith(name, "-gpu")) {
    for (const models::GpuSpec& gpu : models::GpuCatalog::BuiltIn().gpus()) {
      values.push_back(gpu.model);
    }
  } else if (name == "--family" || name == "--op") {
    const models::WorkloadKind kind =
        name == "--op" ? models::WorkloadKind::kOperation : models::WorkloadKind::kModel;
    for (const models::FamilyInfo& family : models::Families()) {
      if (family.kind == kind) values.push_back(family.name);
    }
  } else if (name == "--node") {
    // From the server, when it answers soon; nothing otherwise.
    context.ConnectOnFirstUse();
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
    if (!channel.ok()) return values;
    grpc::ClientContext call;
    call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::ListNodesResponse response;
    if (v1::NodeRegistry::NewStub(*channel)
            ->List(&call, v1::ListNodesRequest(), &response)
            .ok()) {
      for (const v1::Node& node : response.nodes()) values.push_back(node.name());
    }
  } else if (name == "--output") {
    values.assign(std::begin(kOutputFormats), std::end(kOutputFormats));
  } else if (name == "--format") {
    values = {"csv", "jsonl", "sqlite"};
  } else if (name == "--split") {
    values = {"gpu", "sizes", "kfold", "train-test"};
  } else if (name == "--rank-by") {
    values = {"cost", "time", "energy"};
  } else if (name == "--group-by") {
    values = {"none", "gpu", "family"};
  } else if (name == "--precision") {
    values = absl::StrSplit(kPrecisionHelp, ", ");
  } else if (name == "--phase") {
    values = {"train", "inference"};
  } else if (name == "--optimizer") {
    values = {"adam", "adamw", "sgd", "none"};
  } else if (name == "--loop") {
    values = {"python", "cpp"};
  } else if (name == "--kind") {
    values = {"model", "op"};
  }
  return values;
}

void PrintGpus(ClientContext& context) {
  const std::vector<models::GpuSpec>& gpus = models::GpuCatalog::BuiltIn().gpus();
  if (context.Structured()) {
    for (const models::GpuSpec& gpu : gpus) {
      context.Out().Record(nlohmann::json::parse(models::GpuSpecToJson(gpu)));
    }
    return;
  }
  Table table({"GPU", "VENDOR", "ARCHITECTURE", "MEM GiB", "BW GB/s", "FP32 TF/s", "BF16 TF/s",
               "FP8 TF/s", "TDP W"});
  for (const models::GpuSpec& gpu : gpus) {
    table.AddRow({gpu.model, gpu.vendor, gpu.architecture, absl::StrFormat("%.0f", gpu.memory_gib),
                  absl::StrFormat("%.0f", gpu.memory_bandwidth_gbs),
                  absl::StrFormat("%.1f", gpu.fp32_tflops),
                  absl::StrFormat("%.1f", gpu.bf16_tflops),
                  gpu.fp8_tflops > 0 ? absl::StrFormat("%.1f", gpu.fp8_tflops) : "-",
                  absl::StrFormat("%.0f", gpu.tdp_watts)});
  }
  table.Print(std::cout, context.TableWidth());
}

// One catalog GPU, every value beside its source.
std::optional<CliError> ShowGpu(ClientContext& context, const std::string& name) {
  const models::GpuCatalog& catalog = models::GpuCatalog::BuiltIn();
  absl::StatusOr<models::GpuSpec> gpu = catalog.Find(name);
  if (!gpu.ok()) {
    return CliError{kExitUsage, Describe(gpu.status())};
  }
  const nlohmann::json values = nlohmann::json::parse(models::GpuSpecToJson(*gpu));
  if (context.Structured()) {
    context.Out().Record(values);
    return std::nullopt;
  }
  Table table({"FIELD", "VALUE", "UNIT", "SOURCE"});
  for (const models::GpuSpecField& field : models::GpuSpecSchema()) {
    const nlohmann::json& value = values.at(field.name);
    table.AddRow({field.name, value.is_string() ? value.get<std::string>() : value.dump(),
                  field.unit, catalog.SourceOf(gpu->model, field.name)});
  }
  table.Print(std::cout, context.TableWidth());
  return std::nullopt;
}

}  // namespace

const CLI::Validator& DecimalInteger() {
  static const CLI::Validator* const kValidator = new CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        if (absl::SimpleAtoi(text, &value)) return "";
        return absl::StrCat("'", Printable(text, 40),
                            "' is not a decimal integer between -2^63 and 2^63-1");
      },
      "INT");
  return *kValidator;
}

std::optional<CliError> ResolveGpuFlag(const char* flag, std::string& name) {
  if (name.empty()) return std::nullopt;
  absl::StatusOr<models::GpuSpec> gpu = models::GpuCatalog::BuiltIn().Find(name);
  if (gpu.ok()) {
    name = gpu->model;
  } else if (gpu.status().code() != absl::StatusCode::kNotFound) {
    return CliError{kExitUsage, absl::StrCat(flag, ": ", Describe(gpu.status()))};
  }
  return std::nullopt;
}

std::string UnknownCommand(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* current = &app;
  std::string path = "perfcast";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return "";
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      // "-ojson": a short flag with its value attached.
      const std::string short_name = name.size() > 2 && name[1] != '-' ? name.substr(0, 2) : name;
      const CLI::Option* option = FindOption(current, name);
      if (option == nullptr) option = FindOption(current, short_name);
      if (option == nullptr && name != "--help" && name != "-h") {
        return absl::StrCat("unknown flag '", Printable(name, 40), "' for '", path, "'",
                            DidYouMean(name, FlagNames(current)));
      }
      // An option's value is not a command name.
      if (option != nullptr && name == arg && name == short_name && option->get_expected_min() > 0) {
        ++i;
      }
      continue;
    }
    if (const CLI::App* sub = FindSubcommand(*current, arg); sub != nullptr) {
      current = sub;
      absl::StrAppend(&path, " ", sub->get_name());
      continue;
    }
    const std::vector<std::string> commands = CommandNames(*current);
    if (commands.empty()) return "";  // a positional argument of a command
    return absl::StrCat("unknown command '", Printable(arg, 40), "' for '", path, "'",
                        DidYouMean(arg, commands), " (commands: ", absl::StrJoin(commands, ", "),
                        ")");
  }
  return "";
}

std::vector<std::string> Complete(const CLI::App& app, const std::vector<std::string>& words,
                                  ClientContext& context) {
  const std::string typed = words.empty() ? "" : words.back();
  const CLI::App* current = &app;
  std::string value_of;  // the option whose value is being typed
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    value_of.clear();
    if (word.size() > 1 && word[0] == '-') {
      const CLI::Option* option = FindOption(current, word);
      if (option != nullptr && option->get_expected_min() > 0) value_of = word;
      continue;
    }
    if (const CLI::App* sub = FindSubcommand(*current, word); sub != nullptr) current = sub;
  }
  std::vector<std::string> candidates;
  if (!value_of.empty()) {
    const CLI::Option* option = FindOption(current, value_of);
    candidates = CompletionValues(option->get_name(), context);
  } else if (!typed.empty() && typed[0] == '-') {
    candidates = FlagNames(current);
  } else if (current->get_parent() != nullptr && current->get_parent()->get_name() == "nodes" &&
             (current->get_name() == "get" || current->get_name() == "remove")) {
    candidates = CompletionValues("--node", context);  // their argument is a node name
  } else {
    for (const std::string& name : CommandNames(*current)) {
      if (name.rfind("__", 0) != 0) candidates.push_back(name);
    }
  }
  std::vector<std::string> matching;
  for (const std::string& candidate : candidates) {
    if (absl::StartsWith(candidate, typed)) matching.push_back(candidate);
  }
  return matching;
}

std::string CompletionScript(const std::string& shell) {
  if (shell == "bash") {
    return "# bash completion for perfcast: eval \"$(perfcast completion bash)\", or save it as\n"
           "# /etc/bash_completion.d/perfcast or ~/.local/share/bash-completion/completions/perfcast\n"
           "_perfcast() {\n"
           "  local IFS=$'\\n'\n"
           "  COMPREPLY=($(\"${COMP_WORDS[0]}\" __complete -- \"${COMP_WORDS[@]:1:COMP_CWORD}\" "
           "2>/dev/null))\n"
           "}\n"
           "complete -o default -F _perfcast perfcast\n";
  }
  if (shell == "zsh") {
    return "#compdef perfcast\n"
           "# zsh completion for perfcast: eval \"$(perfcast completion zsh)\" in ~/.zshrc (after\n"
           "# compinit), or save it as _perfcast in a directory of $fpath\n"
           "_perfcast() {\n"
           "  local -a candidates\n"
           "  candidates=(\"${(@f)$(\"$words[1]\" __complete -- \"${(@)words[2,CURRENT]}\" "
           "2>/dev/null)}\")\n"
           "  if [[ -n \"$candidates[1]\" ]]; then compadd -a candidates; else _files; fi\n"
           "}\n"
           "compdef _perfcast perfcast\n";
  }
  return "# fish completion for perfcast: perfcast completion fish | source, or save it as\n"
         "# ~/.config/fish/completions/perfcast.fish\n"
         "complete -c perfcast -a '((commandline -opc)[1] __complete -- (commandline -opc)[2..-1] "
         "(commandline -ct) 2>/dev/null)'\n";
}

void RegisterLocalCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  CLI::App* gpus = app.add_subcommand("gpus", "The GPU catalog: what --gpu accepts");
  gpus->require_subcommand(1);
  CLI::App* list = gpus->add_subcommand(
      "list", "Catalog GPUs with their spec-sheet rates (a unique prefix such as H200 also works)");
  list->callback([&context, &dispatch] {
    dispatch.action = [&context]() -> std::optional<CliError> {
      PrintGpus(context);
      return std::nullopt;
    };
  });
  auto shown = std::make_shared<std::string>();
  CLI::App* show = gpus->add_subcommand(
      "show", "One catalog GPU: every spec-sheet value with its source (datasheet and date)");
  show->add_option("name", *shown, "Catalog GPU, e.g. B200 or MI300X-192GB")->required();
  show->callback([&context, &dispatch, shown] {
    dispatch.action = [&context, shown] { return ShowGpu(context, *shown); };
  });

  CLI::App* completion = app.add_subcommand(
      "completion", "Print a shell completion script (bash, zsh or fish) that completes "
                    "commands, flags, GPU and family names, and node names from the server");
  completion->require_subcommand(1);
  for (const auto& [shell, help] : std::vector<std::pair<std::string, std::string>>{
           {"bash", "bash: eval \"$(perfcast completion bash)\" in ~/.bashrc"},
           {"zsh", "zsh: eval \"$(perfcast completion zsh)\" in ~/.zshrc, after compinit"},
           {"fish", "fish: perfcast completion fish > ~/.config/fish/completions/perfcast.fish"}}) {
    completion->add_subcommand(shell, help)->callback([&dispatch, shell = shell] {
      dispatch.action = [shell]() -> std::optional<CliError> {
        std::cout << CompletionScript(shell);
        return std::nullopt;
      };
    });
  }

  // What the completion scripts call, as cobra's __complete: after "--",
  // the words after `perfcast` up to the cursor, the one being typed last
  // (maybe empty); prints the candidates, one a line. Hidden from --help.
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* complete = app.add_subcommand("__complete", "");
  complete->group("");
  complete->add_option("words", *words);
  complete->callback([&app, &context, &dispatch, words] {
    dispatch.action = [&app, &context, words]() -> std::optional<CliError> {
      for (const std::string& candidate : Complete(app, *words, context)) {
        std::cout << candidate << "\n";
      }
      return std::nullopt;
    };
  });
}

}  // namespace perfcast::client
