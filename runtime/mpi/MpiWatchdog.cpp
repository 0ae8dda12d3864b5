//===- MpiWatchdog.cpp - Deadlines on MPI collectives ---------------------===//
//
// The poll loop and the where-are-you queries of MpiWatchdog.h. Queries and
// answers travel on a duplicate of the world communicator with two tags, so
// they never match the collectives' traffic; answers carry the number of the
// query they answer, so a late answer to an earlier query is dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiWatchdog.h"

#include "runtime/mpi/MpiCollectives.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace meshc::runtime {

namespace {

constexpr int kQueryTag = 7301;
constexpr int kAnswerTag = 7302;

} // namespace

/// A rank's answer to a query: where it waits.
struct MpiWatchdog::Answer {
  /// The number of the query this answers (the asker's count).
  int64_t query = 0;
  /// Its position, e.g. "all_reduce #17 over ranks {0,2}", NUL-terminated.
  char position[112] = {0};
};

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// "{0,2}".
std::string rankSet(const std::vector<int> &ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? "," : "") + std::to_string(ranks[i]);
  return text + "}";
}

/// "rank 2" or "ranks 2, 3".
std::string rankNames(const std::vector<int> &ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

/// "20 s", "0.5 s".
std::string seconds(double value) {
  std::ostringstream text;
  text << value << " s";
  return text.str();
}

} // namespace

struct MpiWatchdog::PendingSend {
  MPI_Request request = MPI_REQUEST_NULL;
  int64_t query = 0;
  Answer answer;
};

double collectiveTimeoutFromEnvironment() {
  const char *text = std::getenv("MESHC_COLLECTIVE_TIMEOUT");
  if (!text)
    return kDefaultCollectiveTimeout;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !std::isfinite(value) || value < 0)
    throw RuntimeError("MESHC_COLLECTIVE_TIMEOUT: expected a number of "
                       "seconds >= 0 (0: no timeout), got '" +
                       std::string(text) + "'");
  return value;
}

MpiWatchdog::MpiWatchdog(MPI_Comm world, double timeoutSeconds,
                         double graceSeconds)
    : timeoutSeconds(timeoutSeconds), graceSeconds(graceSeconds) {
  MESHC_MPI_CHECK(MPI_Comm_dup(world, &queries));
  MESHC_MPI_CHECK(MPI_Comm_rank(queries, &worldRank));
  MESHC_MPI_CHECK(MPI_Comm_size(queries, &worldSize));
}

MpiWatchdog::~MpiWatchdog() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  // A send not yet matched (its receiver is stopped or gone: only after a
  // timeout, as the job ends) is let go. MPI may still read its buffer, so
  // the buffer is left allocated.
  for (std::unique_ptr<PendingSend> &send : sends)
    if (send->request != MPI_REQUEST_NULL) {
      MPI_Request_free(&send->request);
      send.release();
    }
  if (queries != MPI_COMM_NULL)
    MPI_Comm_free(&queries);
}

void MpiWatchdog::wait(MPI_Request &request, const char *op,
                       const std::vector<int> &members, int part) {
  if (part == 0 || sequence == 0)
    ++sequence;
  position = std::string(op) + " #" + std::to_string(sequence) + " over " +
             (members.empty() ? std::string("all ranks")
                              : "ranks " + rankSet(members));
  double deadline = now() + timeoutSeconds;
  std::map<int, Answer> ignored;
  for (;;) {
    int done = 0;
    MESHC_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done)
      return;
    serveQueries(ignored, 0);
    if (timeoutSeconds > 0 && now() > deadline) {
      std::string message = diagnose(request);
      if (message.empty())
        return;
      expired = true;
      throw CollectiveTimeout(message);
    }
  }
}

void MpiWatchdog::serveQueries(std::map<int, Answer> &answers, int64_t query) {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MESHC_MPI_CHECK(
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, queries, &arrived, &status));
    if (!arrived)
      break;
    int from = status.MPI_SOURCE;
    if (status.MPI_TAG == kQueryTag) {
      auto send = std::make_unique<PendingSend>();
      MESHC_MPI_CHECK(MPI_Recv(&send->answer.query, 1, MPI_INT64_T, from,
                               kQueryTag, queries, MPI_STATUS_IGNORE));
      std::strncpy(send->answer.position, position.c_str(),
                   sizeof(send->answer.position) - 1);
      MESHC_MPI_CHECK(MPI_Isend(&send->answer, sizeof(Answer), MPI_BYTE, from,
                                kAnswerTag, queries, &send->request));
      sends.push_back(std::move(send));
    } else {
      Answer answer;
      MESHC_MPI_CHECK(MPI_Recv(&answer, sizeof(Answer), MPI_BYTE, from,
                               status.MPI_TAG, queries, MPI_STATUS_IGNORE));
      if (query != 0 && answer.query == query)
        answers[from] = answer;
    }
  }
  for (size_t i = 0; i < sends.size();) {
    int done = 0;
    MESHC_MPI_CHECK(MPI_Test(&sends[i]->request, &done, MPI_STATUS_IGNORE));
    if (done) {
      sends[i] = std::move(sends.back());
      sends.pop_back();
    } else {
      ++i;
    }
  }
}

std::string MpiWatchdog::diagnose(MPI_Request &request) {
  int64_t query = ++queriesSent;
  for (int rank = 0; rank < worldSize; ++rank) {
    if (rank == worldRank)
      continue;
    auto send = std::make_unique<PendingSend>();
    send->query = query;
    MESHC_MPI_CHECK(MPI_Isend(&send->query, 1, MPI_INT64_T, rank, kQueryTag,
                              queries, &send->request));
    sends.push_back(std::move(send));
  }
  std::map<int, Answer> answers;
  double deadline = now() + graceSeconds;
  while (static_cast<int>(answers.size()) < worldSize - 1 && now() < deadline) {
    int done = 0;
    MESHC_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done)
      return "";
    serveQueries(answers, query);
  }

  std::vector<int> silent;
  std::vector<std::string> elsewhere;
  for (int rank = 0; rank < worldSize; ++rank) {
    if (rank == worldRank)
      continue;
    auto found = answers.find(rank);
    if (found == answers.end())
      silent.push_back(rank);
    else if (position != found->second.position)
      elsewhere.push_back("rank " + std::to_string(rank) + " waits in " +
                          found->second.position);
  }
  std::string message = position + " did not complete within " +
                        seconds(timeoutSeconds) + " (MESHC_COLLECTIVE_TIMEOUT)";
  if (!silent.empty())
    message += ": " + rankNames(silent) + " did not reach it (no answer " +
               "within " + seconds(graceSeconds) +
               ": stopped, hung, dead, or busy outside MPI for longer than " +
               "the timeout)";
  else
    message += ": every rank answers, but not from this collective";
  for (size_t i = 0; i < elsewhere.size() && i < 8; ++i)
    message += "; " + elsewhere[i];
  if (elsewhere.size() > 8)
    message += "; and " + std::to_string(elsewhere.size() - 8) + " more";
  return message;
}

} // namespace meshc::runtime
