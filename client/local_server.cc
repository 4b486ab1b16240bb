#include "client/local_server.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "client/importer.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "server/grpc_status.h"
#include "serving/model_cache.h"
#include "xxhash.h"

namespace perfcast::client {
namespace {

namespace fs = std::filesystem;

// The list's file names: one a line; blank lines and '#' comments skipped.
absl::StatusOr<std::vector<std::string>> ReadList(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--local needs the shipped profiles: cannot read ", path,
        " (set $PERFCAST_SHIPPED_DATA to perfcast's data/ directory)"));
  }
  std::vector<std::string> files;
  std::string line;
  while (std::getline(in, line)) {
    const std::string name(absl::StripAsciiWhitespace(line));
    if (!name.empty() && name[0] != '#') files.push_back(name);
  }
  if (files.empty()) return absl::FailedPreconditionError(absl::StrCat(path, " lists no files"));
  return files;
}

absl::Status HashFile(const std::string& path, XXH3_state_t* state) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--local needs the shipped profiles: cannot read ", path,
        " (set $PERFCAST_SHIPPED_DATA to perfcast's data/ directory)"));
  }
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    XXH3_64bits_update(state, buffer.data(), static_cast<size_t>(in.gcount()));
  }
  return absl::OkStatus();
}

// What the cached store depends on: the list, every file it lists (name and
// bytes), the fitted GPU and the program's own code.
absl::StatusOr<std::string> CacheKey(const LocalOptions& options, const std::string& list_path,
                                     const std::vector<std::string>& files) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                  &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  RETURN_IF_ERROR(HashFile(list_path, state.get()));
  for (const std::string& file : files) {
    XXH3_64bits_update(state.get(), file.data(), file.size() + 1);  // with its NUL
    RETURN_IF_ERROR(HashFile((fs::path(options.data_dir) / file).string(), state.get()));
  }
  XXH3_64bits_update(state.get(), kLocalFitGpu, sizeof(kLocalFitGpu));
  RETURN_IF_ERROR(HashFile(options.program, state.get()));
  return absl::StrFormat("%016x", XXH3_64bits_digest(state.get()));
}

absl::StatusOr<std::unique_ptr<server::Server>> Serve(db::Store& store, server::Logger& logger) {
  server::ServerOptions options;
  options.listen_address = "";  // in-process only
  options.max_request_threads = 4;
  return server::Server::Start(options, store, models::GpuCatalog::BuiltIn(), logger);
}

void RemoveStoreFiles(const std::string& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    fs::remove(path + suffix, ignored);
  }
}

// Imports the listed files into a new store at `path` and fits the model on
// them, through the services as `perfcast import` and `perfcast fit --gpu`
// would. Returns the profiles imported.
absl::StatusOr<int64_t> BuildStore(const std::string& path, const LocalOptions& options,
                                   const std::vector<std::string>& files,
                                   server::Logger& logger) {
  ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, db::OpenStore(path));
  ASSIGN_OR_RETURN(std::unique_ptr<server::Server> server, Serve(*store, logger));
  std::shared_ptr<grpc::Channel> channel = server->InProcessChannel();
  std::vector<ImportFile> imports;
  for (const std::string& file : files) {
    ImportFile import{.path = (fs::path(options.data_dir) / file).string()};
    ASSIGN_OR_RETURN(import.format, FormatOfPath(import.path));
    imports.push_back(std::move(import));
  }
  ASSIGN_OR_RETURN(ImportReport report, ImportFiles(channel, imports, ImportOptions{}));
  if (report.rejected > 0) {
    const ImportReport::Rejected& first = report.first_rejections.front();
    return absl::FailedPreconditionError(absl::StrCat(
        "--local: ", report.rejected, " shipped profiles were rejected, the first of ",
        first.file >= 0 ? imports[first.file].path : "?", ":", first.line, ": ", first.reason));
  }
  v1::FitRequest fit;
  fit.mutable_selection()->add_gpu_models(kLocalFitGpu);
  grpc::ClientContext call;
  v1::FitResponse fitted;
  RETURN_IF_ERROR(
      server::FromGrpcStatus(v1::Predictor::NewStub(channel)->Fit(&call, fit, &fitted)));
  return report.accepted;
}

}  // namespace

absl::StatusOr<LocalOptions> DefaultLocalOptions() {
  LocalOptions options;
  if (const char* data = std::getenv("PERFCAST_SHIPPED_DATA"); data != nullptr && *data) {
    options.data_dir = data;
  } else {
    // This build's checkout, else where `cmake --install` put the files.
    std::error_code error;
    const bool checkout =
        fs::exists(fs::path(PERFCAST_SHIPPED_DATA_DIR) / kShippedProfilesList, error);
    options.data_dir = checkout ? PERFCAST_SHIPPED_DATA_DIR : PERFCAST_INSTALLED_DATA_DIR;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg) {
    options.cache_dir = (fs::path(xdg) / "perfcast").string();
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    options.cache_dir = (fs::path(home) / ".cache/perfcast").string();
  } else {
    return absl::FailedPreconditionError(
        "--local caches its fitted model under $XDG_CACHE_HOME or $HOME; neither is set");
  }
  return options;
}

absl::StatusOr<std::unique_ptr<LocalServer>> LocalServer::Open(const LocalOptions& options) {
  std::unique_ptr<LocalServer> local(new LocalServer());
  LocalProvenance& p = local->provenance_;
  p.list_path = (fs::path(options.data_dir) / kShippedProfilesList).string();
  ASSIGN_OR_RETURN(p.files, ReadList(p.list_path));
  ASSIGN_OR_RETURN(const std::string key, CacheKey(options, p.list_path, p.files));
  p.cache_path = (fs::path(options.cache_dir) / absl::StrCat("local-", key, ".db")).string();

  std::error_code error;
  if (!fs::exists(p.cache_path, error)) {
    // Only this user reads the cache: it is a database, as perfcastd's is.
    fs::create_directories(options.cache_dir, error);
    fs::permissions(options.cache_dir, fs::perms::owner_all, error);
    if (error) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--local: cannot create the cache directory ", options.cache_dir, ": ",
          error.message()));
    }
    const absl::Time start = absl::Now();
    const std::string building = absl::StrCat(p.cache_path, ".tmp-", getpid());
    RemoveStoreFiles(building);
    absl::StatusOr<int64_t> imported = BuildStore(building, options, p.files, local->logger_);
    if (!imported.ok()) {
      RemoveStoreFiles(building);
      return imported.status();
    }
    // Closed, so the file holds everything; the rename makes it the entry.
    fs::permissions(building, fs::perms::owner_read | fs::perms::owner_write, error);
    if (!error) fs::rename(building, p.cache_path, error);
    if (error) {
      RemoveStoreFiles(building);
      return absl::FailedPreconditionError(absl::StrCat(
          "--local: cannot write the cache ", p.cache_path, ": ", error.message()));
    }
    // Entries of other data or code are never asked for again.
    for (const fs::directory_entry& entry : fs::directory_iterator(options.cache_dir, error)) {
      const std::string name = entry.path().filename().string();
      if (absl::StartsWith(name, "local-") && absl::EndsWith(name, ".db") &&
          entry.path().string() != p.cache_path) {
        RemoveStoreFiles(entry.path().string());
      }
    }
    p.fitted_now = true;
    p.build_time = absl::Now() - start;
    p.profiles_imported = *imported;
  }
  ASSIGN_OR_RETURN(local->store_, db::OpenStore(p.cache_path));
  ASSIGN_OR_RETURN(db::StoredModel model, local->store_->LatestModel(serving::ModelName("")));
  p.fitted_at_us = model.created_at_us;
  p.model_version = model.version;
  p.cv_mape = model.cv_mape;
  ASSIGN_OR_RETURN(local->server_, Serve(*local->store_, local->logger_));
  local->channel_ = local->server_->InProcessChannel();
  return local;
}

LocalServer::~LocalServer() {
  // The channel's calls are done; the services go before the store.
  channel_.reset();
  server_.reset();
  store_.reset();
}

std::string LocalServer::ProvenanceLine() const {
  const LocalProvenance& p = provenance_;
  std::string line = absl::StrFormat(
      "local model (v%d, CV MAPE %.1f%% over all its rows) fitted %s on the %s profiles of %d "
      "shipped files (%s), cached in %s",
      p.model_version, 100 * p.cv_mape,
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMicros(p.fitted_at_us),
                       absl::UTCTimeZone()),
      kLocalFitGpu, p.files.size(), p.list_path, p.cache_path);
  if (p.fitted_now) {
    absl::StrAppend(&line, absl::StrFormat("; imported %d profiles and fitted now, in %.1f s",
                                           p.profiles_imported,
                                           absl::ToDoubleSeconds(p.build_time)));
  }
  return line;
}

}  // namespace perfcast::client
