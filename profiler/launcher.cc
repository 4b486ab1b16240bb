#include "profiler/launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "profiler/collectives_plan.h"

extern char** environ;

namespace perfcast::profiler {
namespace {

std::string Ended(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return "unknown state";
}

}  // namespace

absl::StatusOr<int> FreeLocalPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("finding a free port: ", error));
  }
  close(fd);
  return static_cast<int>(ntohs(address.sin_port));
}

absl::StatusOr<std::string> GpuOfRank(const std::string& visible, int rank) {
  if (visible.empty()) return absl::StrCat(rank);
  std::vector<std::string> gpus = absl::StrSplit(visible, ',', absl::SkipEmpty());
  if (rank < 0 || rank >= static_cast<int>(gpus.size())) {
    return absl::OutOfRangeError(absl::StrCat("CUDA_VISIBLE_DEVICES=", visible, " lists ",
                                              gpus.size(), " GPUs; rank ", rank,
                                              " has none"));
  }
  return gpus[rank];
}

absl::Status LaunchWorkers(const std::string& program, const std::vector<std::string>& base_args,
                           int world, bool one_gpu_each) {
  ASSIGN_OR_RETURN(int port, FreeLocalPort());
  const char* visible_env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string visible = visible_env == nullptr ? "" : visible_env;

  std::map<pid_t, int> running;  // pid -> rank
  absl::Status failure;
  for (int rank = 0; rank < world && failure.ok(); ++rank) {
    std::vector<std::string> args = {program};
    for (std::string& arg : WorkerArgs(base_args, {rank, world, port})) {
      args.push_back(std::move(arg));
    }
    std::map<std::string, std::string> overrides;
    for (const auto& [key, value] : WorkerEnvironment()) overrides[key] = value;
    if (one_gpu_each) {
      absl::StatusOr<std::string> gpu = GpuOfRank(visible, rank);
      if (!gpu.ok()) {
        failure = gpu.status();
        break;
      }
      overrides["CUDA_VISIBLE_DEVICES"] = *gpu;
    }
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (!overrides.contains(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    for (const auto& [key, value] : overrides) env.push_back(absl::StrCat(key, "=", value));
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (const int error = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(),
                                      envp.data());
        error != 0) {
      failure = absl::InternalError(
          absl::StrCat("starting worker ", rank, ": ", std::strerror(error)));
      break;
    }
    running[pid] = rank;
  }
  if (!failure.ok()) {
    for (const auto& [pid, rank] : running) kill(pid, SIGTERM);
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const int rank = it->second;
    running.erase(it);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && failure.ok()) {
      failure = absl::InternalError(absl::StrCat("worker ", rank, " of ", world, " ended with ",
                                                 Ended(status)));
      // Its peers would wait for it until their timeout.
      for (const auto& [other, other_rank] : running) kill(other, SIGTERM);
    }
  }
  return failure;
}

}  // namespace perfcast::profiler
