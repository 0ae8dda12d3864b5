//===- MpiAgreement.h - Ranks agree on what they run ------------*- C++ -*-===//
//
// Every rank of an MPI job reads its own command line and files. If two ranks
// run different programs, meshes, inputs or step counts, they call different
// collectives (or the same ones with different sizes) and the job hangs or
// computes garbage. So before the first step the ranks exchange a list of
// facts (a name and a 64-bit FNV-1a hash each, such as "program" and the hash
// of the .mprog bytes) and compare them: on a mismatch every rank throws the
// same RuntimeError naming the fact and the ranks, e.g.
//
//   rank 1 runs with a different input 'x' than rank 0: b.npy (2048 bytes,
//   hash 0x...) but rank 0 has a.npy (2048 bytes, hash 0x...)
//
// One all-gather of one hash per rank when they agree; the full lists are
// exchanged only to explain a mismatch.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MPI_MPIAGREEMENT_H
#define MESHC_RUNTIME_MPI_MPIAGREEMENT_H

#include "runtime/Meshrun.h"
#include "runtime/ProcessGroup.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::runtime {

/// One thing every rank must have the same of.
struct AgreementFact {
  /// What it is: "program", "input 'x'", "--steps". Compared.
  std::string name;
  /// Its hash. Compared.
  uint64_t hash = 0;
  /// How to show this rank's value in a message ("a.npy (2048 bytes)");
  /// not compared, so ranks may reach the same bytes by different paths.
  std::string detail;
};

/// FNV-1a 64 of `bytes` bytes at `data`, continuing from `hash`.
uint64_t fnv1a64(const void *data, size_t bytes,
                 uint64_t hash = 0xcbf29ce484222325ULL);

/// The fact `name` for the file at `path`: the hash of its size and bytes
/// (files over 64 MiB: of their size, first and last 8 MiB), with the file
/// name and size as detail. Never throws: an unreadable file gets a fact
/// that says so (the run reports the real error later).
AgreementFact fileFact(const std::string &name, const std::string &path);

/// The fact `name` for a value shown as `text`: the hash of `text`.
AgreementFact valueFact(const std::string &name, const std::string &text);

/// What meshrun ranks must agree on: the .mprog file, every --input and
/// --eval-input file, --seed, --steps, --eval-every, --no-shuffle,
/// --backend, --devices, --checkpoint-every, and which of the flags that
/// make the ranks gather or exchange tensors are given (--init-params,
/// --dump-outputs, --dump-params, --csv, --plot, --checkpoint-dir,
/// --restore, --trace). Never throws.
std::vector<AgreementFact> meshrunFacts(const MeshrunOptions &options);

/// Collective over `world`: every process passes its `facts`. Returns when
/// every process has the same names and hashes in the same order; otherwise
/// throws, on every process, a RuntimeError naming the first fact that
/// differs, the lowest rank that differs from rank 0, both values, and how
/// many other ranks differ.
void checkAgreement(ProcessGroup &world,
                    const std::vector<AgreementFact> &facts);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MPI_MPIAGREEMENT_H
