// One import transaction written on a thread of its own, so that the caller
// can decode and prepare the next records (a gRPC import stream) while the
// store writes the previous ones: on two cores the import then costs the
// slower of the two stages instead of their sum.
//
// The store's ImportTransaction lives wholly on the worker thread (begun,
// written, committed or rolled back there), so it keeps its rule of one
// thread. Batches are written in the order they were submitted.
//
// Not thread-safe: one caller thread uses a PipelinedImport.
#ifndef PERFCAST_DB_PIPELINED_IMPORT_H_
#define PERFCAST_DB_PIPELINED_IMPORT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/prepared_profile.h"
#include "db/store.h"
#include "models/hardware.h"

namespace perfcast::db {

class PipelinedImport {
 public:
  // Records for the transaction, applied in order: the nodes (UpsertNode),
  // then the profiles (AddPrepared) with their indexes in the import.
  struct Batch {
    std::vector<models::Node> nodes;
    std::vector<std::pair<int64_t, absl::StatusOr<PreparedProfile>>> profiles;
  };

  // An empty batch to fill and Submit: one the writer is done with, cleared,
  // when there is one (Submit and Drain collect them). Its vectors keep their capacity, so a stream of
  // batches of like size allocates their storage once, not once per batch
  // (fresh storage also costs a page fault per 4 KiB on first touch).
  Batch NewBatch();

  // `store` must outlive the import. Nothing starts before the first Submit
  // or Commit: an import that receives nothing holds no write lock.
  explicit PipelinedImport(Store& store);
  // Rolls back an import that was not committed and waits for its thread:
  // nothing of it is stored.
  ~PipelinedImport();
  PipelinedImport(const PipelinedImport&) = delete;
  PipelinedImport& operator=(const PipelinedImport&) = delete;

  // Queues `batch` behind the earlier ones; blocks while kMaxQueued batches
  // wait to be written. The first batch begins the transaction. Returns the
  // error that has ended the import, if one has (BeginImport's, UpsertNode's
  // or a failed write, whichever batch it came from): the import is then
  // rolled back and takes nothing more.
  absl::Status Submit(Batch batch);

  // Waits until every submitted batch is written. Returns the error that
  // ended the import, if one has. A caller that may still abandon the import
  // (its client cancelled) decides after this, so that the commit is all
  // that is left between its decision and the import being stored.
  absl::Status Drain();

  // Writes what is queued and commits (an import of nothing begins and
  // commits an empty transaction). Returns the summary, or the error that
  // ended the import: then nothing of it is stored. After that, Submit and
  // Commit return FailedPrecondition.
  absl::StatusOr<ImportSummary> Commit();

 private:
  // Batches waiting for the writer: enough to keep it busy while the caller
  // prepares the next (or waits for its next message), few enough to bound
  // the memory held. perfcastd submits up to 1,000 profiles a batch.
  static constexpr size_t kMaxQueued = 8;

  void Start();
  void Run();
  // Frees what `spent` holds, on the caller's thread, keeping the batches'
  // storage for NewBatch.
  void Recycle(std::vector<Batch>& spent);
  // Waits for the next batch; nullopt when the import is to commit (the
  // queue drained) or to be abandoned.
  std::optional<Batch> Next();
  absl::Status Write(ImportTransaction& import, Batch& batch);

  Store& store_;
  bool started_ = false;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  // The caller's thread alone: spent batches, cleared, for NewBatch.
  std::vector<Batch> recycled_;
  // Guarded by mutex_.
  std::deque<Batch> queue_;
  // Written batches, handed back for the caller's thread to free: freeing
  // what another thread allocated is slow, and the writer is the stage that
  // bounds the import's rate.
  std::vector<Batch> spent_;
  bool writing_ = false;  // a batch taken from the queue is being written
  bool commit_requested_ = false;
  bool abandoned_ = false;
  bool done_ = false;  // the worker has ended the transaction
  absl::Status error_;
  // Set by the worker before done_.
  absl::StatusOr<ImportSummary> result_ = absl::UnknownError("the import did not run");
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_PIPELINED_IMPORT_H_
