#include "tests/integration/process_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace perfcast::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TempPath(const std::string& stem) {
  static int counter = 0;
  return (std::filesystem::temp_directory_path() /
          (stem + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
      .string();
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv) {
  const std::string out = TempPath("perfcast-out");
  const std::string err = TempPath("perfcast-err");
  pid_t pid = Spawn(argv, out, err);
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadAll(out);
  result.err = ReadAll(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return result;
}

ServerProcess::ServerProcess(const std::string& database, std::vector<std::string> extra_flags) {
  port_file_ = TempPath("perfcastd-port");
  std::vector<std::string> argv = {PERFCASTD_PATH, "--listen=127.0.0.1:0", "--db=" + database,
                                   "--port_file=" + port_file_, "--log_level=warning"};
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  log_path_ = TempPath("perfcastd-log");
  pid_ = Spawn(argv, "/dev/null", log_path_);
  for (int i = 0; i < 3000 && port_ == 0; ++i) {
    std::ifstream in(port_file_);
    int port = 0;
    if (in >> port) port_ = port;
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServerProcess::~ServerProcess() {
  Stop();
  std::filesystem::remove(log_path_);
}

int ServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  std::filesystem::remove(port_file_);
  return status;
}

void ServerProcess::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

std::optional<int> ServerProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::filesystem::remove(port_file_);
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int ServerProcess::Kill(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  std::filesystem::remove(port_file_);
  return status;
}

CommandResult ServerProcess::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {PERFCAST_CLI_PATH, "--server", address(), "--timeout", "120"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

}  // namespace perfcast::testing
