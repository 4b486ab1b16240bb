// perfcastd: the perfcast service. Runs with no flags on an embedded SQLite
// file in the data directory; see --help.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "server/authenticator.h"
#include "server/logger.h"
#include "server/metrics.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve gRPC on, host:port (port 0 picks a free port).");
ABSL_FLAG(std::string, db, "",
          "Database URI: sqlite:///path/to/file.db, a file path, or "
          "postgresql://user@host:5432/dbname?sslmode=require (shared by several perfcastd "
          "replicas; keep the password in PGPASSWORD or ~/.pgpass). Default: perfcast.db in the "
          "data directory ($PERFCAST_DATA_DIR, else $XDG_DATA_HOME/perfcast, else "
          "~/.local/share/perfcast).");
ABSL_FLAG(std::string, log_level, "info", "Minimum log level: debug, info, warning, error.");
ABSL_FLAG(std::string, port_file, "",
          "If set, write the bound port to this file once serving (for scripts and tests).");
ABSL_FLAG(int, max_threads, 32, "Maximum request-handling threads.");
ABSL_FLAG(int64_t, max_import_profiles, 10'000'000, "Maximum profiles in one import stream.");
ABSL_FLAG(std::string, metrics_listen, "",
          "If set, serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (e.g. "
          "127.0.0.1:9464; port 0 picks a free port, logged as metrics_port). Empty: no metrics.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(30),
          "How long in-flight calls may run after SIGINT/SIGTERM before they are cancelled.");
ABSL_FLAG(std::string, tls_cert, "",
          "Serve TLS with this certificate chain (PEM file); needs --tls_key. Default: plaintext.");
ABSL_FLAG(std::string, tls_key, "", "Private key (PEM file) of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "Require client certificates signed by this CA (PEM file); needs --tls_cert.");
ABSL_FLAG(std::string, token_file, "",
          "Require a bearer token on every perfcast.v1 call: one accepted token per line ('#' "
          "comments and blank lines ignored). Health checks stay open. Default: no "
          "authentication.");
ABSL_FLAG(int, max_message_bytes, 64 << 20, "Largest gRPC message received or sent, bytes.");
ABSL_FLAG(int64_t, max_call_seconds, 0,
          "Longest an import/export stream, fit, evaluation or prediction batch may run before "
          "it fails with DEADLINE_EXCEEDED (an import then stores nothing); 0: no limit.");

ABSL_FLAG(int64_t, import_idle_seconds, 60,
          "Cancel (and roll back) an import stream that sends nothing for this long, so a "
          "stalled client cannot hold the store's write lock; 0: no limit.");

namespace {

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

int Fail(const std::string& message) {
  std::cerr << "perfcastd: " << message << "\n";
  return 1;
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
absl::Status ApplySecurityFlags(perfcast::server::ServerOptions& options,
                                perfcast::server::Logger& logger) {
  absl::StatusOr<std::string> cert = ReadPemFile("tls_cert", absl::GetFlag(FLAGS_tls_cert));
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPemFile("tls_key", absl::GetFlag(FLAGS_tls_key));
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> ca = ReadPemFile("tls_client_ca", absl::GetFlag(FLAGS_tls_client_ca));
  if (!ca.ok()) return ca.status();
  options.tls_cert_pem = *std::move(cert);
  options.tls_key_pem = *std::move(key);
  options.tls_client_ca_pem = *std::move(ca);
  if (const std::string path = absl::GetFlag(FLAGS_token_file); !path.empty()) {
    absl::StatusOr<std::vector<std::string>> tokens = perfcast::server::ReadTokenFile(path);
    if (!tokens.ok()) return tokens.status();
    options.tokens = *std::move(tokens);
    logger.Info("bearer tokens loaded", {{"file", path},
                                         {"count", absl::StrCat(options.tokens.size())}});
    const bool loopback = absl::StartsWith(options.listen_address, "127.") ||
                          absl::StartsWith(options.listen_address, "localhost:") ||
                          absl::StartsWith(options.listen_address, "[::1]:");
    if (options.tls_cert_pem.empty() && !loopback) {
      logger.Warning("bearer tokens travel in clear text without TLS (--tls_cert, --tls_key)");
    }
  }
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("--max_message_bytes must be positive");
  }
  const int64_t max_call_seconds = absl::GetFlag(FLAGS_max_call_seconds);
  if (max_call_seconds < 0) return absl::InvalidArgumentError("--max_call_seconds must be >= 0");
  if (max_call_seconds > 0) options.max_call = absl::Seconds(max_call_seconds);
  const int64_t import_idle_seconds = absl::GetFlag(FLAGS_import_idle_seconds);
  if (import_idle_seconds < 0) {
    return absl::InvalidArgumentError("--import_idle_seconds must be >= 0");
  }
  options.max_import_idle =
      import_idle_seconds > 0 ? absl::Seconds(import_idle_seconds) : absl::InfiniteDuration();
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "perfcastd: predicts deep-learning training time on GPUs from measured profiles.\n"
      "Usage: perfcastd [--listen=HOST:PORT] [--db=URI] [--log_level=LEVEL]");
  absl::ParseCommandLine(argc, argv);

  auto level = perfcast::server::ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.ok()) return Fail(std::string(level.status().message()));
  perfcast::server::Logger logger(*level);

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
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.max_request_threads = absl::GetFlag(FLAGS_max_threads);
  options.max_profiles_per_import = absl::GetFlag(FLAGS_max_import_profiles);
  if (absl::Status security = ApplySecurityFlags(options, logger); !security.ok()) {
    return Fail(std::string(security.message()));
  }

  std::string uri = absl::GetFlag(FLAGS_db);
  if (uri.empty()) uri = DefaultDatabase();
  auto store = perfcast::db::OpenStore(uri);
  if (!store.ok()) {
    return Fail(absl::StrCat("cannot open database ", perfcast::db::RedactDatabaseUri(uri), ": ",
                             store.status().message()));
  }
  logger.Info("database open", {{"uri", perfcast::db::RedactDatabaseUri(uri)}});

  // Created after the store and reset before it: a scrape reads the store.
  std::unique_ptr<perfcast::server::Metrics> metrics;
  if (const std::string address = absl::GetFlag(FLAGS_metrics_listen); !address.empty()) {
    metrics = std::make_unique<perfcast::server::Metrics>();
    metrics->WatchStore(**store);
    if (absl::Status s = metrics->StartExposer(address); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    logger.Info("serving metrics", {{"address", address},
                                    {"metrics_port", absl::StrCat(metrics->exposer_port())}});
  }

  options.metrics = metrics.get();
  auto server = perfcast::server::Server::Start(options, **store,
                                                perfcast::models::GpuCatalog::BuiltIn(), logger);
  if (!server.ok()) return Fail(std::string(server.status().message()));

  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::filesystem::rename(tmp, port_file);  // readers never see a partial file
  }

  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    logger.Info("shutting down", {{"signal", signal == SIGINT ? "SIGINT" : "SIGTERM"}});
    (*server)->Shutdown(absl::GetFlag(FLAGS_shutdown_grace));
  });
  (*server)->Wait();
  signal_waiter.join();
  server->reset();
  metrics.reset();
  store->reset();
  logger.Info("stopped");
  return 0;
}
