#include "client/command.h"

namespace perfcast::client {

void RegisterPredictorCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {}

}  // namespace perfcast::client
