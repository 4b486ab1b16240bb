// perfcast: the command-line client of perfcastd. See `perfcast --help`.
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "client/command.h"
#include "client/local_server.h"
#include "client/text_input.h"
#include "grpc/support/log.h"

namespace {

// The config file read when --config is not given: $PERFCAST_CONFIG, else
// $XDG_CONFIG_HOME/perfcast/config.toml, else ~/.config/perfcast/config.toml.
std::string DefaultConfigFile() {
  std::filesystem::path dir;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg) {
    dir = std::filesystem::path(xdg) / "perfcast";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    dir = std::filesystem::path(home) / ".config/perfcast";
  } else {
    return "";
  }
  return (dir / "config.toml").string();
}

}  // namespace

int main(int argc, char** argv) {
  constexpr size_t kMaxShown = perfcast::client::kMaxShownMessageBytes;
  using perfcast::client::ClientContext;
  using perfcast::client::OutputFormat;

  CLI::App app{"perfcast: predict deep-learning training time on GPUs from measured profiles"};
  app.require_subcommand(1);
  // Global flags work after the subcommand too: `perfcast nodes list -o json`.
  app.fallthrough();
  app.set_version_flag("--version", "perfcast " PERFCAST_VERSION);
  ClientContext context;
  if (const char* env = std::getenv("PERFCAST_SERVER"); env != nullptr && *env) {
    context.server = env;
  }
  app.add_option("--server", context.server, "perfcastd address host:port ($PERFCAST_SERVER)")
      ->capture_default_str();
  std::string output = "table";
  app.add_option("--output,-o", output,
                 "Output format: table, json (one answer: one JSON document; lists and streams: "
                 "JSON Lines, an object per line), yaml (a document per answer or record) or csv "
                 "(a header and a row per record)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(perfcast::client::kOutputFormats),
                                                     std::end(perfcast::client::kOutputFormats))))
      ->capture_default_str();
  app.add_flag("--wide", context.wide,
               "Tables as wide as their cells (default: wrapped to the terminal's width)");
  app.add_option("--timeout", context.timeout_s, "Deadline of each call, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  perfcast::client::AddConnectionFlags(app, context.connection);
  app.set_config("--config", DefaultConfigFile(),
                 "Read flags from this TOML file ($PERFCAST_CONFIG; default "
                 "~/.config/perfcast/config.toml when it exists): `server = \"host:port\"` and "
                 "other global flags at the top, a command's flags under [command] or "
                 "[group.command]; the command line wins")
      ->envname("PERFCAST_CONFIG");

  // gRPC core logs failures such as a refused TLS handshake itself; the
  // one-line error below already says what went wrong. GRPC_VERBOSITY set:
  // keep gRPC's lines for debugging.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});

  perfcast::client::Dispatch dispatch;
  perfcast::client::RegisterNodeCommands(app, context, dispatch);
  perfcast::client::RegisterProfileCommands(app, context, dispatch);
  perfcast::client::RegisterPredictorCommands(app, context, dispatch);
  perfcast::client::RegisterLocalCommands(app, context, dispatch);
  perfcast::client::RegisterMemoryCommands(app, context, dispatch);
  perfcast::client::RegisterRecommendCommands(app, context, dispatch);

  // Every command's --help ends with the exit codes.
  std::function<void(CLI::App*)> add_footer = [&](CLI::App* command) {
    const std::string own = command->get_footer();
    command->footer(own.empty() ? std::string(perfcast::client::kExitCodesHelp)
                                : absl::StrCat(own, "\n\n", perfcast::client::kExitCodesHelp));
    for (CLI::App* sub : command->get_subcommands({})) add_footer(sub);
  };
  add_footer(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string message = perfcast::client::UnknownCommand(app, argc, argv);
    if (message.empty()) message = e.what();
    // The message quotes the command line, which scripts fill from files.
    std::cerr << "perfcast: " << perfcast::client::Printable(message, kMaxShown)
              << " (see --help)\n";
    return perfcast::client::kExitUsage;
  }
  context.output = output == "json"   ? OutputFormat::kJson
                   : output == "yaml" ? OutputFormat::kYaml
                   : output == "csv"  ? OutputFormat::kCsv
                                      : OutputFormat::kTable;
  if (!dispatch.action) {
    std::cerr << "perfcast: no command given (see --help)\n";
    return perfcast::client::kExitUsage;
  }
  // Declared before the command runs and destroyed after it: --local's
  // services answer its calls.
  // Opened when the command first calls, after its own checks.
  std::unique_ptr<perfcast::client::LocalServer> local;
  if (context.local) {
    context.OpenOnFirstUse(
        [&local]() -> absl::StatusOr<std::shared_ptr<grpc::Channel>> {
          ASSIGN_OR_RETURN(perfcast::client::LocalOptions options,
                           perfcast::client::DefaultLocalOptions());
          ASSIGN_OR_RETURN(local, perfcast::client::LocalServer::Open(options));
          return local->channel();
        });
  } else {
    context.ConnectOnFirstUse();
  }
  std::optional<perfcast::client::CliError> error = dispatch.action();
  // Where --local's model comes from, on stderr so that stdout stays the
  // answer alone for -o json|yaml|csv; not beside a usage error, which no
  // model answered.
  if (local != nullptr && (!error.has_value() || error->exit_code != perfcast::client::kExitUsage)) {
    std::cerr << "perfcast: " << local->ProvenanceLine() << "\n";
  }
  if (error.has_value()) {
    error->message +=
        perfcast::client::ConnectionHint(error->message, !context.connection.tls_ca.empty());
    std::cerr << "perfcast: " << perfcast::client::Printable(error->message, kMaxShown) << "\n";
    return error->exit_code;
  }
  return 0;
}
