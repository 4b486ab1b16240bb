// How CLI commands plug into the perfcast binary: each command group has a
// Register...Commands(app, context, dispatch) function that adds CLI11
// subcommands; the chosen subcommand's callback stores its action in
// `dispatch`, and main() runs it after parsing, so parsing errors and command
// failures are reported the same way.
#ifndef PERFCAST_CLIENT_COMMAND_H_
#define PERFCAST_CLIENT_COMMAND_H_

#include <functional>
#include <optional>

#include "CLI/CLI.hpp"
#include "client/cli_error.h"
#include "client/client_context.h"

namespace perfcast::client {

// Runs the command; nullopt on success.
using Action = std::function<std::optional<CliError>()>;

struct Dispatch {
  Action action;
};

void RegisterNodeCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
void RegisterProfileCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
void RegisterPredictorCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
void RegisterRecommendCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_COMMAND_H_
