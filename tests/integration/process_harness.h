// Runs perfcast's real binaries from tests: a perfcastd on a free loopback
// port with its own SQLite file, and the perfcast CLI against it.
#ifndef PERFCAST_TESTS_INTEGRATION_PROCESS_HARNESS_H_
#define PERFCAST_TESTS_INTEGRATION_PROCESS_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace perfcast::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // standard output
  std::string err;  // standard error
};

// Runs `argv` (argv[0] a path) to completion, capturing both streams.
CommandResult RunCommand(const std::vector<std::string>& argv);

// A perfcastd child process. Started on 127.0.0.1:0 with `database`; the
// destructor stops it (SIGTERM) and waits.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& database, std::vector<std::string> extra_flags = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool started() const { return port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Sends SIGTERM and returns the exit status (as from waitpid).
  int Stop();

  // The child's process id; -1 once its exit has been collected.
  pid_t pid() const { return pid_; }
  // Where the server's standard error (its log) goes; removed with the object.
  const std::string& log_path() const { return log_path_; }
  // Sends `signal` without waiting for the exit (e.g. SIGTERM under load).
  void Signal(int signal);
  // Waits up to `timeout` for the child to exit: its status (as from
  // waitpid), or nullopt while it still runs (or was already collected).
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);
  // Sends `signal` (e.g. SIGKILL) and waits for the exit; returns the status.
  // A restart is a new ServerProcess on the same database.
  int Kill(int signal);

  // Runs the perfcast CLI against this server with `args`.
  CommandResult Cli(const std::vector<std::string>& args) const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string port_file_;
  std::string log_path_;
};

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_INTEGRATION_PROCESS_HARNESS_H_
