// How CLI commands plug into the perfcast binary: each command group has a
// Register...Commands(app, context, dispatch) function that adds CLI11
// subcommands; the chosen subcommand's callback stores its action in
// `dispatch`, and main() runs it after parsing, so parsing errors and command
// failures are reported the same way.
#ifndef PERFCAST_CLIENT_COMMAND_H_
#define PERFCAST_CLIENT_COMMAND_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/cli_error.h"
#include "client/client_context.h"

namespace perfcast::client {

// Runs the command; nullopt on success.
using Action = std::function<std::optional<CliError>()>;

// The command the command line chose. Commands that never call perfcastd
// (gpus, completion, memory) never open a channel: ClientContext opens it on
// the first call.
struct Dispatch {
  Action action;
};

void RegisterNodeCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
void RegisterProfileCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
void RegisterPredictorCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
// perfcast gpus list, perfcast completion bash: answered from this binary.
void RegisterLocalCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);
// perfcast memory: the layout memory model's breakdown, answered here.
void RegisterMemoryCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);

// After a parse error: "unknown command 'lst' for 'perfcast nodes' (did you
// mean 'list'?) (commands: get, list, register, remove)" when argv names a
// command that does not exist, "unknown flag '--gpuu' for 'perfcast
// predict' (did you mean '--gpu'?)" for a flag, else "" (the parser's own
// message says it better).
std::string UnknownCommand(const CLI::App& app, int argc, const char* const* argv);

// Completion candidates for the command line `words` (after "perfcast", the
// word being typed last): commands, flags, or the values of the option
// before it (catalog GPUs, families, formats; node names from the server
// `context` names, when it answers within two seconds).
std::vector<std::string> Complete(const CLI::App& app, const std::vector<std::string>& words,
                                  ClientContext& context);

// The completion script of `shell` (bash, zsh or fish): each calls
// `perfcast __complete` (Complete) for its candidates.
std::string CompletionScript(const std::string& shell);

// For integer flags: the value must be a decimal integer that fits in 64
// bits. CLI11 alone would take 2^64 as 2^63-1 and "010" as 8.
const CLI::Validator& DecimalInteger();

// The value of a flag that names a GPU model to select by (nodes list
// --gpu, export --gpu, evaluate --held-out-gpu): a catalog name or an
// unambiguous part of one becomes the catalog name, as predict's --gpu; a
// name the catalog does not know stays as it is (a GPU registered from its
// own spec file). A usage error naming `flag` for an ambiguous name; empty
// stays empty.
std::optional<CliError> ResolveGpuFlag(const char* flag, std::string& name);
void RegisterRecommendCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_COMMAND_H_
