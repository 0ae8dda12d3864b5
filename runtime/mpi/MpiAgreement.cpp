//===- MpiAgreement.cpp - Ranks agree on what they run --------------------===//
//
// The fact hashes, meshrun's facts and the exchange of MpiAgreement.h. Every
// rank builds the mismatch message from the same gathered lists, so all
// ranks throw the same text.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiAgreement.h"

#include "runtime/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace meshc::runtime {

namespace {

/// Files larger than this are hashed by their size, head and tail.
constexpr int64_t kWholeFileLimit = 64 << 20;
constexpr int64_t kHeadTailBytes = 8 << 20;

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Reads `bytes` at `offset` of `file` into the hash; false on a short read.
bool hashRange(std::ifstream &file, int64_t offset, int64_t bytes,
               uint64_t &hash) {
  std::vector<char> buffer(1 << 20);
  file.seekg(offset);
  while (bytes > 0 && file) {
    std::streamsize chunk =
        static_cast<std::streamsize>(std::min<int64_t>(bytes, buffer.size()));
    file.read(buffer.data(), chunk);
    if (file.gcount() != chunk)
      return false;
    hash = fnv1a64(buffer.data(), static_cast<size_t>(chunk), hash);
    bytes -= chunk;
  }
  return bytes == 0;
}

void put(std::string &out, const void *data, size_t bytes) {
  out.append(static_cast<const char *>(data), bytes);
}

void putString(std::string &out, const std::string &text) {
  uint64_t length = text.size();
  put(out, &length, sizeof(length));
  out += text;
}

/// The facts as bytes, and back.
std::string serialize(const std::vector<AgreementFact> &facts) {
  std::string out;
  for (const AgreementFact &fact : facts) {
    putString(out, fact.name);
    put(out, &fact.hash, sizeof(fact.hash));
    putString(out, fact.detail);
  }
  return out;
}

std::vector<AgreementFact> deserialize(const char *data, size_t bytes) {
  std::vector<AgreementFact> facts;
  size_t at = 0;
  auto take = [&](void *out, size_t n) {
    if (at + n > bytes)
      throw RuntimeError("agreement: truncated list of facts");
    std::memcpy(out, data + at, n);
    at += n;
  };
  auto takeString = [&]() {
    uint64_t length = 0;
    take(&length, sizeof(length));
    if (length > bytes - at)
      throw RuntimeError("agreement: truncated list of facts");
    std::string text(data + at, length);
    at += length;
    return text;
  };
  while (at < bytes) {
    AgreementFact fact;
    fact.name = takeString();
    take(&fact.hash, sizeof(fact.hash));
    fact.detail = takeString();
    facts.push_back(std::move(fact));
  }
  return facts;
}

/// The hash of the names and hashes (not the details) of `facts`.
uint64_t digest(const std::vector<AgreementFact> &facts) {
  uint64_t hash = fnv1a64(nullptr, 0);
  for (const AgreementFact &fact : facts) {
    hash = fnv1a64(fact.name.data(), fact.name.size() + 1, hash);
    hash = fnv1a64(&fact.hash, sizeof(fact.hash), hash);
  }
  return hash;
}

const AgreementFact *find(const std::vector<AgreementFact> &facts,
                          const std::string &name) {
  for (const AgreementFact &fact : facts)
    if (fact.name == name)
      return &fact;
  return nullptr;
}

/// The first difference of rank `rank`'s facts from rank 0's.
std::string difference(int64_t rank, const std::vector<AgreementFact> &mine,
                       const std::vector<AgreementFact> &root) {
  std::string who = "rank " + std::to_string(rank);
  for (const AgreementFact &want : root) {
    const AgreementFact *got = find(mine, want.name);
    if (!got)
      return who + " has no " + want.name + ", but rank 0 has " + want.detail;
    if (got->hash != want.hash)
      return who + " runs with a different " + want.name +
             " than rank 0: " + got->detail + " (hash " + hex(got->hash) +
             ") but rank 0 has " + want.detail + " (hash " + hex(want.hash) +
             ")";
  }
  for (const AgreementFact &got : mine)
    if (!find(root, got.name))
      return who + " has " + got.name + " " + got.detail +
             ", which rank 0 does not have";
  return who + " lists the same facts as rank 0 in another order";
}

} // namespace

uint64_t fnv1a64(const void *data, size_t bytes, uint64_t hash) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

AgreementFact fileFact(const std::string &name, const std::string &path) {
  AgreementFact fact{name, 0, baseName(path)};
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) {
    fact.detail += " (cannot be read)";
    fact.hash = fnv1a64(fact.detail.data(), fact.detail.size());
    return fact;
  }
  int64_t size = static_cast<int64_t>(file.tellg());
  uint64_t hash = fnv1a64(&size, sizeof(size));
  bool read =
      size <= kWholeFileLimit
          ? hashRange(file, 0, size, hash)
          : hashRange(file, 0, kHeadTailBytes, hash) &&
                hashRange(file, size - kHeadTailBytes, kHeadTailBytes, hash);
  fact.detail += " (" + std::to_string(size) + " bytes" +
                 (read ? "" : ", cannot be read") + ")";
  fact.hash = read ? hash : fnv1a64(fact.detail.data(), fact.detail.size());
  return fact;
}

AgreementFact valueFact(const std::string &name, const std::string &text) {
  return {name, fnv1a64(text.data(), text.size()), text};
}

std::vector<AgreementFact> meshrunFacts(const MeshrunOptions &options) {
  const SessionOptions &session = options.session;
  std::vector<AgreementFact> facts;
  // The mesh and the layout are part of the .mprog's bytes.
  facts.push_back(fileFact("program", options.programPath));
  for (const auto &[name, path] : session.inputFiles)
    facts.push_back(fileFact("input '" + name + "'", path));
  for (const auto &[name, path] : session.evalInputFiles)
    facts.push_back(fileFact("eval input '" + name + "'", path));
  facts.push_back(valueFact(
      "--seed", session.seed ? std::to_string(*session.seed) : "not given"));
  facts.push_back(valueFact("--steps", std::to_string(options.steps)));
  facts.push_back(valueFact("--eval-every", std::to_string(options.evalEvery)));
  facts.push_back(
      valueFact("--no-shuffle", session.shuffle ? "not given" : "given"));
  facts.push_back(valueFact("--backend", session.backend));
  facts.push_back(valueFact("--devices", std::to_string(session.devices)));
  // The flags below make the ranks gather tensors, so all or none must
  // have them; their paths matter only on rank 0.
  auto given = [](const std::string &value) {
    return value.empty() ? "not given" : "given";
  };
  facts.push_back(valueFact("--init-params", given(session.initParamsDir)));
  facts.push_back(valueFact("--dump-outputs", given(options.dumpOutputs)));
  facts.push_back(valueFact("--dump-params", given(options.dumpParamsDir)));
  facts.push_back(valueFact("--csv", given(options.csvPath)));
  facts.push_back(valueFact("--plot", given(options.plotPath)));
  facts.push_back(valueFact("--checkpoint-dir", given(options.checkpointDir)));
  facts.push_back(
      valueFact("--checkpoint-every", std::to_string(options.checkpointEvery)));
  facts.push_back(valueFact("--restore", given(options.restorePath)));
  facts.push_back(valueFact("--trace", given(options.tracePath)));
  return facts;
}

void checkAgreement(ProcessGroup &world,
                    const std::vector<AgreementFact> &facts) {
  uint64_t mine = digest(facts);
  std::vector<char> digests = world.allGather(&mine, sizeof(mine));
  int64_t ranks = world.size();
  auto digestOf = [&](int64_t rank) {
    uint64_t value = 0;
    std::memcpy(&value, digests.data() + rank * sizeof(value), sizeof(value));
    return value;
  };
  std::vector<int64_t> differing;
  for (int64_t rank = 1; rank < ranks; ++rank)
    if (digestOf(rank) != digestOf(0))
      differing.push_back(rank);
  if (differing.empty())
    return;

  // Explain: exchange the whole lists (padded to the longest).
  std::string bytes = serialize(facts);
  uint64_t length = bytes.size();
  std::vector<char> lengths = world.allGather(&length, sizeof(length));
  uint64_t longest = 0;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    uint64_t value = 0;
    std::memcpy(&value, lengths.data() + rank * sizeof(value), sizeof(value));
    longest = std::max(longest, value);
  }
  bytes.resize(longest, '\0');
  std::vector<char> lists =
      world.allGather(bytes.data(), static_cast<int64_t>(longest));
  auto listOf = [&](int64_t rank) {
    uint64_t size = 0;
    std::memcpy(&size, lengths.data() + rank * sizeof(size), sizeof(size));
    return deserialize(lists.data() + rank * longest, size);
  };
  std::string message =
      difference(differing[0], listOf(differing[0]), listOf(0));
  if (differing.size() > 1) {
    message += differing.size() == 2 ? "; rank" : "; ranks";
    for (size_t i = 1; i < differing.size() && i <= 8; ++i)
      message += (i > 1 ? ", " : " ") + std::to_string(differing[i]);
    if (differing.size() > 9)
      message += " and " + std::to_string(differing.size() - 9) + " more";
    message += differing.size() == 2 ? " differs" : " differ";
    message += " from rank 0 too";
  }
  throw RuntimeError(message + "; every rank must run the same program, "
                               "inputs and flags");
}

} // namespace meshc::runtime
