//===- FileWrite.h - Writing output files without losing any ----*- C++ -*-===//
//
// Every file meshrun and meshc-calibrate write (checkpoint shards and index,
// --csv, --plot, --trace, --dump-outputs, --dump-params, a measured profile)
// goes through here: the bytes go to PATH.tmp, which is renamed over PATH
// only once all of them are written (and, when durable, synced to disk). A
// set of files (--dump-params) is renamed only once every one is written. A
// full disk, a file-size limit or a killed process leaves whatever was at
// PATH before untouched, and the error names the file and the system's
// reason. What is at PATH and is not a regular file (a device such as
// /dev/null, a pipe, a symbolic link) is written in place, never replaced.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_FILEWRITE_H
#define MESHC_RUNTIME_FILEWRITE_H

#include <string>
#include <string_view>
#include <vector>

namespace meshc::runtime {

/// Files written together: add() writes each to PATH.tmp, commit() renames
/// them all over their paths. A failed add() (RuntimeError, "cannot write
/// 'PATH': REASON"), or destruction without commit(), removes every
/// temporary, so no path changes unless all of them do.
class FileSet {
public:
  explicit FileSet(bool durable = false) : durable(durable) {}
  FileSet(const FileSet &) = delete;
  FileSet &operator=(const FileSet &) = delete;
  ~FileSet();

  void add(const std::string &path, std::string_view bytes);
  void commit();

private:
  bool durable;
  std::vector<std::string> paths;
};

/// Writes `bytes` to `path` as a set of one file.
void writeFileAtomically(const std::string &path, std::string_view bytes,
                         bool durable = false);

/// Makes a write past the file-size limit (RLIMIT_FSIZE) fail with EFBIG,
/// reported like a full disk, instead of killing the process with SIGXFSZ.
/// The tools call it first thing.
void reportFileSizeLimitAsError();

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_FILEWRITE_H
