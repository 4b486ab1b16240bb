// A real, throw-away PostgreSQL server for tests: initdb into a fresh
// temporary directory, `postgres` on a free loopback port (its unix socket in
// the same directory), fast shutdown and removal of the directory when the
// object goes. When the test runs as root (CI containers), the server runs as
// `nobody`, since PostgreSQL refuses to run as root.
//
// The binaries come from $PERFCAST_POSTGRES_BIN, else
// /usr/lib/postgresql/15/bin (Debian's postgresql-15).
//
// Typical use, one server per test binary and one database per test:
//
//   void SetUp() override {
//     absl::StatusOr<PostgresServer*> server = SharedPostgresServer();
//     if (absl::IsNotFound(server.status()) && !PostgresRequired()) SKIP_FOR_ENVIRONMENT_GAP() << ...;
//     ASSERT_TRUE(server.ok()) << server.status();
//     uri_ = *(*server)->CreateDatabase();
//   }
#ifndef PERFCAST_TESTS_DB_POSTGRES_SERVER_H_
#define PERFCAST_TESTS_DB_POSTGRES_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tests/db/test_util.h"

namespace perfcast::testing {

class PostgresServer {
 public:
  // Starts a server and waits until it accepts connections. NotFound if the
  // PostgreSQL binaries are not installed; Internal (with the server log's
  // tail) if it does not come up.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Creates a new, empty database and returns its postgresql:// URI.
  absl::StatusOr<std::string> CreateDatabase();

  // The URI of `database` on this server (the superuser "postgres", no password).
  std::string Uri(const std::string& database) const;
  int port() const { return port_; }

 private:
  PostgresServer() = default;
  absl::Status Launch(const std::string& bin_dir);
  void Stop();

  std::unique_ptr<TempDir> dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int databases_created_ = 0;
};

// The test binary's one server, started on first use and stopped after the
// last test (a gtest Environment owns it). Errors as PostgresServer::Start;
// later calls return the first call's result.
absl::StatusOr<PostgresServer*> SharedPostgresServer();

// Whether a missing PostgreSQL must fail the tests rather than skip them:
// true when the environment variable CI is set (CI must really run them).
bool PostgresRequired();

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_DB_POSTGRES_SERVER_H_
