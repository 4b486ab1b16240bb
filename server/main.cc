// perfcastd: the perfcast service. Runs with no flags on an embedded SQLite
// file in the data directory; see --help.
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "server/authenticator.h"
#include "server/logger.h"
#include "server/metrics.h"
#include "server/server.h"

namespace {

// perfcastd's flags. Every flag is spelled with hyphens, as the CLI and the
// agent spell theirs; the underscore spellings of earlier releases
// (--tls_cert, --log_level, ...) stay accepted as aliases.
struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string db;
  std::string log_level = "info";
  std::string port_file;
  int max_threads = 32;
  int64_t max_import_profiles = 10'000'000;
  std::string metrics_listen;
  std::string shutdown_grace = "30s";
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string token_file;
  int max_message_bytes = 64 << 20;
  int64_t max_call_seconds = 0;
  int64_t import_idle_seconds = 60;
};

// "--tls-cert,--tls_cert" for "tls-cert": the name and its old alias.
std::string Names(const std::string& name) {
  std::string alias = name;
  std::replace(alias.begin(), alias.end(), '-', '_');
  return alias == name ? "--" + name : absl::StrCat("--", name, ",--", alias);
}

void AddFlags(CLI::App& app, Flags& f) {
  // A flag given twice takes its last value, as it always did (scripts
  // append overrides to a base command line).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option(Names("listen"), f.listen,
                 "Address to serve gRPC on, host:port (port 0 picks a free port)")
      ->capture_default_str();
  app.add_option(Names("db"), f.db,
                 "Database URI: sqlite:///path/to/file.db, a file path, or "
                 "postgresql://user@host:5432/dbname?sslmode=require (shared by several perfcastd "
                 "replicas; keep the password in PGPASSWORD or ~/.pgpass). Default: perfcast.db in "
                 "the data directory ($PERFCAST_DATA_DIR, else $XDG_DATA_HOME/perfcast, else "
                 "~/.local/share/perfcast). An agent's store or another program's SQLite file is "
                 "refused and left untouched");
  app.add_option(Names("log-level"), f.log_level, "Minimum log level: debug, info, warning, error")
      ->capture_default_str();
  app.add_option(Names("port-file"), f.port_file,
                 "Write the bound port to this file once serving (for scripts and tests)");
  app.add_option(Names("max-threads"), f.max_threads, "Maximum request-handling threads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option(Names("max-import-profiles"), f.max_import_profiles,
                 "Maximum profiles in one import stream")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option(Names("metrics-listen"), f.metrics_listen,
                 "Serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (e.g. "
                 "127.0.0.1:9464; port 0 picks a free port, logged as metrics_port). Default: none");
  app.add_option(Names("shutdown-grace"), f.shutdown_grace,
                 "How long in-flight calls may run after SIGINT/SIGTERM before they are "
                 "cancelled (e.g. 30s, 2m)")
      ->capture_default_str();
  app.add_option(Names("tls-cert"), f.tls_cert,
                 "Serve TLS with this certificate chain (PEM file); needs --tls-key. Default: "
                 "plaintext");
  app.add_option(Names("tls-key"), f.tls_key, "Private key (PEM file) of --tls-cert");
  app.add_option(Names("tls-client-ca"), f.tls_client_ca,
                 "Require client certificates signed by this CA (PEM file); needs --tls-cert");
  app.add_option(Names("token-file"), f.token_file,
                 "Require a bearer token on every perfcast.v1 call: one accepted token per line "
                 "('#' comments and blank lines ignored). Health checks stay open. Default: no "
                 "authentication");
  app.add_option(Names("max-message-bytes"), f.max_message_bytes,
                 "Largest gRPC message received or sent, bytes")
      ->capture_default_str();
  app.add_option(Names("max-call-seconds"), f.max_call_seconds,
                 "Longest an import/export stream, fit, evaluation or prediction batch may run "
                 "before it fails with DEADLINE_EXCEEDED (an import then stores nothing); 0: no "
                 "limit")
      ->capture_default_str();
  app.add_option(Names("import-idle-seconds"), f.import_idle_seconds,
                 "Cancel (and roll back) an import stream that sends nothing for this long, so a "
                 "stalled client cannot hold the store's write lock; 0: no limit")
      ->capture_default_str();
  app.set_config("--config", "",
                 "Read flags from this TOML/INI file (name = value per line; flags given on the "
                 "command line win)");
  app.set_version_flag("--version", "perfcastd " PERFCAST_VERSION);
}


std::string DefaultDatabase() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("PERFCAST_DATA_DIR"); env != nullptr && *env) {
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg) {
    dir = std::filesystem::path(xdg) / "perfcast";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    dir = std::filesystem::path(home) / ".local/share/perfcast";
  } else {
    dir = "perfcast-data";
  }
  return (dir / "perfcast.db").string();
}

// Exit codes as the CLI's: 1 a failure, 2 bad usage.
int Fail(const std::string& message, int exit_code = 1) {
  std::cerr << "perfcastd: " << message << "\n";
  return exit_code;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read --", flag, " file ", path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " file ", path, " is not readable PEM"));
  }
  return text;
}

// TLS files, tokens and limits from the flags into `options`.
absl::Status ApplySecurityFlags(const Flags& flags, perfcast::server::ServerOptions& options,
                                perfcast::server::Logger& logger) {
  ASSIGN_OR_RETURN(std::string cert, ReadPemFile("tls-cert", flags.tls_cert));
  ASSIGN_OR_RETURN(std::string key, ReadPemFile("tls-key", flags.tls_key));
  ASSIGN_OR_RETURN(std::string ca, ReadPemFile("tls-client-ca", flags.tls_client_ca));
  options.tls_cert_pem = std::move(cert);
  options.tls_key_pem = std::move(key);
  options.tls_client_ca_pem = std::move(ca);
  if (const std::string& path = flags.token_file; !path.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> tokens, perfcast::server::ReadTokenFile(path));
    options.tokens = std::move(tokens);
    logger.Info("bearer tokens loaded", {{"file", path},
                                         {"count", absl::StrCat(options.tokens.size())}});
    const bool loopback = absl::StartsWith(options.listen_address, "127.") ||
                          absl::StartsWith(options.listen_address, "localhost:") ||
                          absl::StartsWith(options.listen_address, "[::1]:");
    if (options.tls_cert_pem.empty() && !loopback) {
      logger.Warning("bearer tokens travel in clear text without TLS (--tls-cert, --tls-key)");
    }
  }
  options.max_message_bytes = flags.max_message_bytes;
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("--max-message-bytes must be positive");
  }
  const int64_t max_call_seconds = flags.max_call_seconds;
  if (max_call_seconds < 0) return absl::InvalidArgumentError("--max-call-seconds must be >= 0");
  if (max_call_seconds > 0) options.max_call = absl::Seconds(max_call_seconds);
  const int64_t import_idle_seconds = flags.import_idle_seconds;
  if (import_idle_seconds < 0) {
    return absl::InvalidArgumentError("--import-idle-seconds must be >= 0");
  }
  options.max_import_idle =
      import_idle_seconds > 0 ? absl::Seconds(import_idle_seconds) : absl::InfiniteDuration();
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "perfcastd: predicts deep-learning training time on GPUs from measured profiles. Runs "
      "with no flags on an embedded SQLite file in the data directory."};
  Flags flags;
  AddFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return Fail(absl::StrCat(e.what(), " (see --help)"), 2);
  }

  auto level = perfcast::server::ParseLogLevel(flags.log_level);
  if (!level.ok()) return Fail(std::string(level.status().message()), 2);
  perfcast::server::Logger logger(*level);
  absl::Duration shutdown_grace;
  if (!absl::ParseDuration(flags.shutdown_grace, &shutdown_grace) ||
      shutdown_grace < absl::ZeroDuration()) {
    return Fail(absl::StrCat("--shutdown-grace: '", flags.shutdown_grace,
                             "' is not a duration such as 30s or 2m"),
                2);
  }

  // Signals are taken synchronously by one thread so that shutdown runs as
  // ordinary code, not inside a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Every flag is checked before the database is opened, so a refused start
  // leaves no new database file behind.
  perfcast::server::ServerOptions options;
  options.listen_address = flags.listen;
  options.max_request_threads = flags.max_threads;
  options.max_profiles_per_import = flags.max_import_profiles;
  if (absl::Status security = ApplySecurityFlags(flags, options, logger); !security.ok()) {
    return Fail(std::string(security.message()));
  }

  std::string uri = flags.db;
  if (uri.empty()) uri = DefaultDatabase();
  // A start refused after the database is open (a busy port, a metrics
  // address in use) must not leave a new, empty database file behind.
  std::optional<std::string> created_file;
  if (auto path = perfcast::db::SqliteFilePath(uri);
      path.ok() && path->has_value() && !std::filesystem::exists(**path)) {
    created_file = **path;
  }
  // The database holds what the fleet measured and the fitted models: a new
  // file (SQLite gives its -wal and -shm files the same mode) and any folder
  // made for it are the server user's alone.
  const mode_t umask_before = umask(077);
  auto store = perfcast::db::OpenStore(uri);
  umask(umask_before);
  if (!store.ok()) {
    return Fail(absl::StrCat("cannot open database ", perfcast::db::RedactDatabaseUri(uri), ": ",
                             store.status().message()));
  }
  logger.Info("database open", {{"uri", perfcast::db::RedactDatabaseUri(uri)}});
  auto fail_after_open = [&](std::string message) {
    store->reset();
    if (created_file.has_value()) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::error_code ignored;
        std::filesystem::remove(*created_file + suffix, ignored);
      }
    }
    return Fail(std::move(message));
  };

  // Created after the store and reset before it: a scrape reads the store.
  std::unique_ptr<perfcast::server::Metrics> metrics;
  if (const std::string& address = flags.metrics_listen; !address.empty()) {
    metrics = std::make_unique<perfcast::server::Metrics>();
    metrics->WatchStore(**store);
    if (absl::Status s = metrics->StartExposer(address); !s.ok()) {
      metrics.reset();
      return fail_after_open(std::string(s.message()));
    }
    logger.Info("serving metrics", {{"address", address},
                                    {"metrics_port", absl::StrCat(metrics->exposer_port())}});
  }

  options.metrics = metrics.get();
  auto server = perfcast::server::Server::Start(options, **store,
                                                perfcast::models::GpuCatalog::BuiltIn(), logger);
  if (!server.ok()) {
    metrics.reset();
    return fail_after_open(std::string(server.status().message()));
  }

  if (const std::string& port_file = flags.port_file; !port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::filesystem::rename(tmp, port_file);  // readers never see a partial file
  }

  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    logger.Info("shutting down", {{"signal", signal == SIGINT ? "SIGINT" : "SIGTERM"}});
    (*server)->Shutdown(shutdown_grace);
  });
  (*server)->Wait();
  signal_waiter.join();
  server->reset();
  metrics.reset();
  store->reset();
  logger.Info("stopped");
  return 0;
}
