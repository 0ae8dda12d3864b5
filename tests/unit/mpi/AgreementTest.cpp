//===- AgreementTest.cpp - Ranks agree on what they run -------------------===//
//
// checkAgreement under mpirun: ranks that pass the same facts pass; a rank
// with a different hash, an extra fact or a missing one makes every rank
// throw the same message naming the fact and the ranks. Also the hashes:
// FNV-1a 64 against its published test vectors, and fileFact on equal,
// different and unreadable files.
//
//===----------------------------------------------------------------------===//

#include "MpiTestMain.h"

#include "runtime/mpi/MpiAgreement.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using namespace meshc::runtime;

namespace {

/// The message checkAgreement throws on this rank, or "" when it passes.
std::string agreementError(const std::vector<AgreementFact> &facts) {
  try {
    checkAgreement(mpitest::world(), facts);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

/// Whether every rank got the same `text`.
bool sameOnEveryRank(const std::string &text) {
  uint64_t hash = fnv1a64(text.data(), text.size());
  std::vector<char> all = mpitest::world().allGather(&hash, sizeof(hash));
  for (size_t at = 0; at < all.size(); at += sizeof(hash))
    if (std::memcmp(all.data() + at, &hash, sizeof(hash)) != 0)
      return false;
  return true;
}

/// A file of this test, named apart for each rank (ranks share TempDir).
std::string writeFile(const std::string &name, const std::string &contents) {
  std::string path = ::testing::TempDir() + "r" +
                     std::to_string(mpitest::world().rank()) + "-" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::vector<AgreementFact> baseFacts() {
  return {valueFact("program", "mlp.mprog bytes"), valueFact("--steps", "10"),
          valueFact("--seed", "3")};
}

TEST(Fnv1a64, MatchesPublishedVectors) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
  // Continuing from a hash equals hashing the concatenation.
  EXPECT_EQ(fnv1a64("bar", 3, fnv1a64("foo", 3)), fnv1a64("foobar", 6));
}

TEST(FileFact, HashesSizeAndBytesNotThePath) {
  int64_t rank = mpitest::world().rank();
  std::string prefix = "r" + std::to_string(rank) + "-";
  AgreementFact a = fileFact("input 'x'", writeFile("a.npy", "12345"));
  AgreementFact b = fileFact("input 'x'", writeFile("b.npy", "12345"));
  AgreementFact c = fileFact("input 'x'", writeFile("c.npy", "12346"));
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
  EXPECT_EQ(a.detail, prefix + "a.npy (5 bytes)");
  AgreementFact missing =
      fileFact("program", ::testing::TempDir() + "no-such.mprog");
  EXPECT_EQ(missing.detail, "no-such.mprog (cannot be read)");
}

TEST(Agreement, SameFactsPass) {
  EXPECT_EQ(agreementError(baseFacts()), "");
  EXPECT_EQ(agreementError({}), "");
}

TEST(Agreement, DifferentProgramFailsOnEveryRank) {
  int64_t rank = mpitest::world().rank();
  std::vector<AgreementFact> facts = baseFacts();
  // Rank 1 runs another program, reached by another path.
  facts[0] = rank == 1
                 ? fileFact("program", writeFile("b.mprog", "{\"other\": 1}"))
                 : fileFact("program", writeFile("a.mprog", "{\"model\": 1}"));
  std::string error = agreementError(facts);
  EXPECT_NE(error.find("rank 1 runs with a different program than rank 0: "
                       "r1-b.mprog (12 bytes) (hash 0x"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(") but rank 0 has r0-a.mprog (12 bytes) (hash 0x"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("; every rank must run the same program, inputs and "
                       "flags"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("from rank 0 too"), std::string::npos) << error;
  EXPECT_TRUE(sameOnEveryRank(error)) << error;
}

TEST(Agreement, EveryDifferingRankIsCounted) {
  int64_t rank = mpitest::world().rank();
  std::vector<AgreementFact> facts = baseFacts();
  if (rank > 0)
    facts[1] = valueFact("--steps", std::to_string(10 + rank));
  std::string error = agreementError(facts);
  EXPECT_EQ(error.rfind("rank 1 runs with a different --steps than rank 0: 11 "
                        "(hash 0x",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find(") but rank 0 has 10 (hash 0x"), std::string::npos)
      << error;
  // Ranks 2.. differ from rank 0 too.
  int64_t size = mpitest::world().size();
  std::string others;
  for (int64_t r = 2; r < size; ++r)
    others += (r > 2 ? ", " : " ") + std::to_string(r);
  std::string suffix = size == 2 ? ""
                                 : (size == 3 ? "; rank" : "; ranks") + others +
                                       (size == 3 ? " differs" : " differ") +
                                       " from rank 0 too";
  EXPECT_NE(error.find(suffix + "; every rank must run"), std::string::npos)
      << error;
  EXPECT_TRUE(sameOnEveryRank(error)) << error;
}

TEST(Agreement, ExtraAndMissingFactsAreNamed) {
  int64_t rank = mpitest::world().rank();
  std::vector<AgreementFact> facts = baseFacts();
  if (rank == 1)
    facts.push_back(valueFact("input 'labels'", "labels.npy"));
  std::string extra = agreementError(facts);
  EXPECT_EQ(extra, "rank 1 has input 'labels' labels.npy, which rank 0 does "
                   "not have; every rank must run the same program, inputs "
                   "and flags");

  facts = baseFacts();
  if (rank == 1)
    facts.pop_back();
  std::string missing = agreementError(facts);
  EXPECT_EQ(missing, "rank 1 has no --seed, but rank 0 has 3; every rank "
                     "must run the same program, inputs and flags");
}

TEST(Agreement, MeshrunFactsCoverTheFlags) {
  MeshrunOptions options;
  options.programPath = writeFile("facts.mprog", "{}");
  options.session.inputFiles["x"] = writeFile("facts-x.npy", "xx");
  options.steps = 5;
  options.dumpOutputs = "out.json";
  std::vector<AgreementFact> facts = meshrunFacts(options);
  std::vector<std::string> names;
  for (const AgreementFact &fact : facts)
    names.push_back(fact.name);
  std::vector<std::string> expected = {
      "program",        "input 'x'",        "--seed",
      "--steps",        "--eval-every",     "--no-shuffle",
      "--backend",      "--devices",        "--init-params",
      "--dump-outputs", "--dump-params",    "--csv",
      "--plot",         "--checkpoint-dir", "--checkpoint-every",
      "--restore",      "--trace"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(facts[0].detail, "r" + std::to_string(mpitest::world().rank()) +
                                 "-facts.mprog (2 bytes)");
  EXPECT_EQ(facts[3].detail, "5");
  EXPECT_EQ(facts[9].detail, "given");
  EXPECT_EQ(facts[10].detail, "not given");
}

} // namespace
