#include "db/pipelined_import.h"

#include <memory>
#include <utility>

#include "base/status_macros.h"

namespace perfcast::db {

PipelinedImport::PipelinedImport(Store& store) : store_(store) {}

PipelinedImport::~PipelinedImport() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void PipelinedImport::Start() {
  if (started_) return;
  started_ = true;
  worker_ = std::thread([this] { Run(); });
}

PipelinedImport::Batch PipelinedImport::NewBatch() {
  if (recycled_.empty()) return Batch();
  Batch batch = std::move(recycled_.back());
  recycled_.pop_back();
  return batch;
}

void PipelinedImport::Recycle(std::vector<Batch>& spent) {
  for (Batch& batch : spent) {
    batch.nodes.clear();
    batch.profiles.clear();
    // As many as can be in flight at once; the rest are freed.
    if (recycled_.size() < kMaxQueued + 2) recycled_.push_back(std::move(batch));
  }
  spent.clear();
}

absl::Status PipelinedImport::Submit(Batch batch) {
  Start();
  std::vector<Batch> spent;
  absl::Status status;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return done_ || queue_.size() < kMaxQueued; });
    spent.swap(spent_);
    if (!error_.ok()) {
      status = error_;
    } else if (done_) {
      status = absl::FailedPreconditionError("the import has already ended");
    } else {
      queue_.push_back(std::move(batch));
    }
  }
  changed_.notify_all();
  Recycle(spent);
  return status;
}

absl::Status PipelinedImport::Drain() {
  if (!started_) return absl::OkStatus();
  std::vector<Batch> spent;
  absl::Status status;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return done_ || (queue_.empty() && !writing_); });
    spent.swap(spent_);
    status = error_;
  }
  Recycle(spent);
  return status;
}

absl::StatusOr<ImportSummary> PipelinedImport::Commit() {
  if (!worker_.joinable() && started_) {
    return absl::FailedPreconditionError("the import has already ended");
  }
  Start();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    commit_requested_ = true;
  }
  changed_.notify_all();
  worker_.join();
  return result_;
}

std::optional<PipelinedImport::Batch> PipelinedImport::Next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return abandoned_ || !queue_.empty() || commit_requested_; });
  if (abandoned_ || queue_.empty()) return std::nullopt;
  Batch batch = std::move(queue_.front());
  queue_.pop_front();
  writing_ = true;
  lock.unlock();
  changed_.notify_all();
  return batch;
}

absl::Status PipelinedImport::Write(ImportTransaction& import, Batch& batch) {
  for (const models::Node& node : batch.nodes) {
    RETURN_IF_ERROR(import.UpsertNode(node));
  }
  for (auto& [index, prepared] : batch.profiles) {
    RETURN_IF_ERROR(import.AddPrepared(index, std::move(prepared)));
  }
  return absl::OkStatus();
}

void PipelinedImport::Run() {
  // The transaction ends inside: an import that returns early is rolled back
  // as it goes out of scope, on this thread, before the caller hears of it.
  absl::StatusOr<ImportSummary> result = [&]() -> absl::StatusOr<ImportSummary> {
    ASSIGN_OR_RETURN(std::unique_ptr<ImportTransaction> import, store_.BeginImport());
    while (std::optional<Batch> batch = Next()) {
      absl::Status written = Write(*import, *batch);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        spent_.push_back(*std::move(batch));
        // A failed batch counts as written only once its error is set.
        writing_ = !written.ok();
      }
      changed_.notify_all();
      if (!written.ok()) return written;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (abandoned_) return absl::CancelledError("the import was abandoned");
    }
    return import->Commit();
  }();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!result.ok()) error_ = result.status();
    result_ = std::move(result);
    done_ = true;
    queue_.clear();
  }
  changed_.notify_all();
}

}  // namespace perfcast::db
