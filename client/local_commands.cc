// perfcast gpus list | completion bash, and the parser helpers main() uses:
// what the CLI answers without a server.
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/command.h"
#include "client/table.h"
#include "client/text_input.h"
#include "models/gpu_catalog.h"

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

// Visits every command of `app` with its path ("", "/nodes", "/nodes/list").
void VisitCommands(const CLI::App& app, const std::string& path,
                   const std::function<void(const CLI::App&, const std::string&)>& visit) {
  visit(app, path);
  for (const CLI::App* sub : app.get_subcommands({})) {
    VisitCommands(*sub, absl::StrCat(path, "/", sub->get_name()), visit);
  }
}

void PrintGpus(const ClientContext& context) {
  const std::vector<models::GpuSpec>& gpus = models::GpuCatalog::BuiltIn().gpus();
  if (context.output == OutputFormat::kJson) {
    for (const models::GpuSpec& gpu : gpus) std::cout << models::GpuSpecToJson(gpu) << "\n";
    return;
  }
  Table table({"GPU", "ARCHITECTURE", "MEM GiB", "BW GB/s", "FP32 TF/s", "BF16 TF/s",
               "TDP W"});
  for (const models::GpuSpec& gpu : gpus) {
    table.AddRow({gpu.model, gpu.architecture, absl::StrFormat("%.0f", gpu.memory_gib),
                  absl::StrFormat("%.0f", gpu.memory_bandwidth_gbs),
                  absl::StrFormat("%.1f", gpu.fp32_tflops),
                  absl::StrFormat("%.1f", gpu.bf16_tflops),
                  absl::StrFormat("%.0f", gpu.tdp_watts)});
  }
  table.Print(std::cout);
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
  std::string path = app.get_name().empty() ? "perfcast" : app.get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return "";
    if (arg.size() > 1 && arg[0] == '-') {
      // An option's value is not a command name.
      if (arg.find('=') == std::string::npos) {
        const CLI::Option* option = FindOption(current, arg);
        if (option != nullptr && option->get_expected_min() > 0) ++i;
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
    return absl::StrCat("unknown command '", arg, "' for '", path, "' (commands: ",
                        absl::StrJoin(commands, ", "), ")");
  }
  return "";
}

std::string BashCompletion(const CLI::App& app) {
  std::string transitions, words;
  VisitCommands(app, "", [&](const CLI::App& command, const std::string& path) {
    for (const std::string& name : CommandNames(command)) {
      absl::StrAppend(&transitions, "      \"", path, "/", name, "\") path=\"$path/$w\" ;;\n");
    }
    std::vector<std::string> all = CommandNames(command);
    for (const std::string& flag : FlagNames(&command)) all.push_back(flag);
    absl::StrAppend(&words, "    \"", path, "\") words=\"", absl::StrJoin(all, " "), "\" ;;\n");
  });
  std::vector<std::string> gpus;
  for (const models::GpuSpec& gpu : models::GpuCatalog::BuiltIn().gpus()) gpus.push_back(gpu.model);
  return absl::StrCat(
      "# bash completion for perfcast: eval \"$(perfcast completion bash)\", or save it as\n"
      "# /etc/bash_completion.d/perfcast or ~/.local/share/bash-completion/completions/perfcast\n"
      "_perfcast() {\n"
      "  local cur prev path w words i\n"
      "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
      "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  case \"$prev\" in\n"
      "    --gpu|--exclude-gpu|--train-gpu|--test-gpu|--held-out-gpu) COMPREPLY=($(compgen -W \"",
      absl::StrJoin(gpus, " "),
      "\" -- \"$cur\")); return ;;\n"
      "    --output|-o) COMPREPLY=($(compgen -W \"table json\" -- \"$cur\")); return ;;\n"
      "    --format) COMPREPLY=($(compgen -W \"csv jsonl sqlite\" -- \"$cur\")); return ;;\n"
      "    --split) COMPREPLY=($(compgen -W \"gpu sizes kfold train-test\" -- \"$cur\")); return ;;\n"
      "  esac\n"
      "  path=\"\"\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${COMP_WORDS[i]}\"\n"
      "    case \"$path/$w\" in\n",
      transitions,
      "    esac\n"
      "  done\n"
      "  case \"$path\" in\n",
      words,
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -o default -F _perfcast perfcast\n");
}

void RegisterLocalCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  CLI::App* gpus = app.add_subcommand("gpus", "The GPU catalog: what --gpu accepts");
  gpus->require_subcommand(1);
  CLI::App* list = gpus->add_subcommand(
      "list", "Catalog GPUs with their spec-sheet rates (a unique prefix such as H200 also works)");
  list->callback([&context, &dispatch] {
    dispatch.needs_server = false;
    dispatch.action = [&context]() -> std::optional<CliError> {
      PrintGpus(context);
      return std::nullopt;
    };
  });

  CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script");
  completion->require_subcommand(1);
  CLI::App* bash = completion->add_subcommand(
      "bash", "bash: eval \"$(perfcast completion bash)\" in ~/.bashrc");
  bash->callback([&app, &dispatch] {
    dispatch.needs_server = false;
    dispatch.action = [&app]() -> std::optional<CliError> {
      std::cout << BashCompletion(app);
      return std::nullopt;
    };
  });
}

}  // namespace perfcast::client
