#include "tests/db/postgres_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"

namespace perfcast::testing {
namespace {

constexpr char kDefaultBinDir[] = "/usr/lib/postgresql/15/bin";

// Who the server processes run as: the current user, or nobody when root.
struct RunAs {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

RunAs ServerUser() {
  RunAs run_as;
  if (geteuid() != 0) return run_as;
  run_as.switch_user = true;
  run_as.uid = 65534;
  run_as.gid = 65534;
  if (const passwd* nobody = getpwnam("nobody"); nobody != nullptr) {
    run_as.uid = nobody->pw_uid;
    run_as.gid = nobody->pw_gid;
  }
  return run_as;
}

std::string Tail(const std::string& path, size_t bytes = 2000) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

// Starts `argv` with stdout and stderr appended to `log`, as `run_as`; the
// child gets SIGQUIT (PostgreSQL's immediate shutdown) if the test dies.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, const RunAs& run_as) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Only async-signal-safe calls from here on.
  if (run_as.switch_user) {
    if (setgroups(0, nullptr) != 0 || setgid(run_as.gid) != 0 || setuid(run_as.uid) != 0) {
      _exit(126);
    }
  }
  prctl(PR_SET_PDEATHSIG, SIGQUIT);  // after setuid, which clears it
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  execv(args[0], args.data());
  _exit(127);
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

bool CanConnect(const std::string& uri) {
  try {
    pqxx::connection connection(uri);
    return connection.is_open();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::string bin_dir = kDefaultBinDir;
  if (const char* env = std::getenv("PERFCAST_POSTGRES_BIN"); env != nullptr && *env) bin_dir = env;
  if (!std::filesystem::exists(bin_dir + "/initdb") ||
      !std::filesystem::exists(bin_dir + "/postgres")) {
    return absl::NotFoundError(absl::StrCat(
        "PostgreSQL server binaries not found in ", bin_dir,
        " (install Debian's postgresql, or set PERFCAST_POSTGRES_BIN)"));
  }
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->dir_ = std::make_unique<TempDir>();
  const RunAs run_as = ServerUser();
  if (run_as.switch_user &&
      chown(server->dir_->path().c_str(), run_as.uid, run_as.gid) != 0) {
    return absl::InternalError(absl::StrCat("cannot chown ", server->dir_->path().string()));
  }
  const std::string log = server->dir_->File("initdb.log");
  pid_t initdb = Spawn({bin_dir + "/initdb", "-D", server->dir_->File("data"), "-U", "postgres",
                        "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
                       log, run_as);
  int status = 0;
  waitpid(initdb, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("initdb failed: ", Tail(log)));
  }
  RETURN_IF_ERROR(server->Launch(bin_dir));
  return server;
}

absl::Status PostgresServer::Launch(const std::string& bin_dir) {
  const RunAs run_as = ServerUser();
  const std::string log = dir_->File("postgres.log");
  // Another process may take the free port before the server binds it: retry.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreeLoopbackPort();
    // Durability settings off: a test database is thrown away anyway.
    pid_ = Spawn({bin_dir + "/postgres", "-D", dir_->File("data"), "-p", std::to_string(port_),
                  "-k", dir_->path().string(), "-c", "listen_addresses=127.0.0.1", "-c",
                  "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"},
                 log, run_as);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (CanConnect(Uri("postgres"))) return absl::OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid_ > 0) {
      Stop();
      return absl::InternalError(absl::StrCat("PostgreSQL did not come up: ", Tail(log)));
    }
    if (Tail(log).find("could not bind") == std::string::npos) break;
  }
  return absl::InternalError(absl::StrCat("PostgreSQL exited at start: ", Tail(log)));
}

PostgresServer::~PostgresServer() {
  Stop();
  dir_.reset();
}

void PostgresServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGINT);  // fast shutdown: disconnect clients, no waiting
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

std::string PostgresServer::Uri(const std::string& database) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", database);
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase() {
  const std::string name = absl::StrCat("perfcast_test_", ++databases_created_);
  try {
    pqxx::connection connection(Uri("postgres"));
    pqxx::nontransaction tx(connection);
    tx.exec("CREATE DATABASE " + name);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CREATE DATABASE ", name, ": ", e.what()));
  }
  return Uri(name);
}

namespace {

// Owns the shared server so that gtest stops it after the last test.
class PostgresEnvironment : public ::testing::Environment {
 public:
  absl::StatusOr<PostgresServer*> Get() {
    if (!started_) {
      started_ = true;
      absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start();
      if (server.ok()) {
        server_ = *std::move(server);
      } else {
        start_status_ = server.status();
      }
    }
    if (!start_status_.ok()) return start_status_;
    return server_.get();
  }
  void TearDown() override { server_.reset(); }

 private:
  bool started_ = false;
  absl::Status start_status_;
  std::unique_ptr<PostgresServer> server_;
};

}  // namespace

absl::StatusOr<PostgresServer*> SharedPostgresServer() {
  static PostgresEnvironment* const environment = static_cast<PostgresEnvironment*>(
      ::testing::AddGlobalTestEnvironment(new PostgresEnvironment()));
  return environment->Get();
}

bool PostgresRequired() { return std::getenv("CI") != nullptr; }

}  // namespace perfcast::testing
