#include "proto/batch_results.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace perfcast::proto {

int BatchResultCount(const v1::PredictBatchResponse& response) {
  return response.has_compact() ? response.compact().answer_size() : response.results_size();
}

absl::Status ValidateBatchResponse(const v1::PredictBatchResponse& response) {
  if (!response.has_compact()) return absl::OkStatus();
  const v1::CompactResults& t = response.compact();
  const int rows = t.answer_size();
  if (t.iterations_size() != rows || t.job_seconds_size() != rows ||
      t.job_seconds_low_size() != rows || t.job_seconds_high_size() != rows) {
    return absl::DataLossError(
        absl::StrCat("compact results: columns of unequal length for ", rows, " queries"));
  }
  if (t.failed_codes_size() != t.failed_size() || t.failed_errors_size() != t.failed_size()) {
    return absl::DataLossError("compact results: failed queries without a code or an error");
  }
  int failed = 0;
  for (int i = 0; i < rows; ++i) {
    const int a = t.answer(i);
    if (a == -1) {
      if (failed >= t.failed_size() || t.failed(failed) != i) {
        return absl::DataLossError(
            absl::StrCat("compact results: failed query ", i, " is not listed in order"));
      }
      ++failed;
    } else if (a < 0 || a >= t.answers_size()) {
      return absl::DataLossError(
          absl::StrCat("compact results: query ", i, " names answer ", a, " of ",
                       t.answers_size()));
    }
  }
  if (failed != t.failed_size()) {
    return absl::DataLossError("compact results: a listed failure is not a failed query");
  }
  return absl::OkStatus();
}

void BatchResult(const v1::PredictBatchResponse& response, int i, v1::PredictResult* out) {
  if (!response.has_compact()) {
    *out = response.results(i);
    return;
  }
  const v1::CompactResults& t = response.compact();
  out->Clear();
  const int a = t.answer(i);
  if (a < 0) {
    const auto it = std::lower_bound(t.failed().begin(), t.failed().end(), i);
    const int k = static_cast<int>(it - t.failed().begin());
    out->set_code(t.failed_codes(k));
    out->set_error(t.failed_errors(k));
    return;
  }
  v1::PredictResponse* p = out->mutable_prediction();
  *p = t.answers(a);
  p->set_iterations(t.iterations(i));
  p->set_job_seconds(t.job_seconds(i));
  p->set_job_seconds_low(t.job_seconds_low(i));
  p->set_job_seconds_high(t.job_seconds_high(i));
}

CompactResultsBuilder::CompactResultsBuilder(v1::CompactResults* out, int rows) : out_(*out) {
  out_.mutable_answer()->Reserve(rows);
  out_.mutable_iterations()->Reserve(rows);
  out_.mutable_job_seconds()->Reserve(rows);
  out_.mutable_job_seconds_low()->Reserve(rows);
  out_.mutable_job_seconds_high()->Reserve(rows);
}

bool CompactResultsBuilder::AddAnswered(const void* shared, const v1::PredictResponse& answer,
                                        int64_t iterations, double job_seconds,
                                        double job_seconds_low, double job_seconds_high) {
  auto [it, added] = index_.try_emplace(shared, out_.answers_size());
  if (added) {
    v1::PredictResponse* part = out_.add_answers();
    *part = answer;
    // The job's fields are per query.
    part->clear_iterations();
    part->clear_job_seconds();
    part->clear_job_seconds_low();
    part->clear_job_seconds_high();
  }
  out_.add_answer(it->second);
  out_.add_iterations(iterations);
  out_.add_job_seconds(job_seconds);
  out_.add_job_seconds_low(job_seconds_low);
  out_.add_job_seconds_high(job_seconds_high);
  return added;
}

void CompactResultsBuilder::AddFailed(int code, absl::string_view error) {
  out_.add_failed(out_.answer_size());
  out_.add_failed_codes(code);
  out_.add_failed_errors(std::string(error));
  out_.add_answer(-1);
  out_.add_iterations(0);
  out_.add_job_seconds(0);
  out_.add_job_seconds_low(0);
  out_.add_job_seconds_high(0);
}

}  // namespace perfcast::proto
