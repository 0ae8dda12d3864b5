//===- FileWrite.cpp - Writing output files without losing any ------------===//

#include "runtime/FileWrite.h"

#include "runtime/Error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace meshc::runtime {

namespace {

std::string temporaryOf(const std::string &path) { return path + ".tmp"; }

/// Whether `path` is something other than a regular file (a device such as
/// /dev/null, a pipe, a symbolic link): written in place, never replaced.
bool writtenInPlace(const std::string &path) {
  std::error_code error;
  std::filesystem::file_status status =
      std::filesystem::symlink_status(path, error);
  return !error && std::filesystem::exists(status) &&
         !std::filesystem::is_regular_file(status);
}

} // namespace

FileSet::~FileSet() {
  std::error_code error;
  for (const std::string &path : paths)
    std::filesystem::remove(temporaryOf(path), error);
}

void FileSet::add(const std::string &path, std::string_view bytes) {
  bool inPlace = writtenInPlace(path);
  std::string temporary = inPlace ? path : temporaryOf(path);
  std::FILE *file = std::fopen(temporary.c_str(), "wb");
  bool ok =
      file && std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = ok && std::fflush(file) == 0;
  if (ok && durable)
    ok = ::fsync(fileno(file)) == 0;
  std::string reason = ok ? "" : std::strerror(errno);
  if (file && std::fclose(file) != 0 && reason.empty())
    reason = std::strerror(errno);
  if (!reason.empty()) {
    std::error_code error;
    if (!inPlace)
      std::filesystem::remove(temporary, error);
    throw RuntimeError("cannot write '" + path + "': " + reason);
  }
  if (!inPlace)
    paths.push_back(path);
}

void FileSet::commit() {
  for (size_t i = 0; i < paths.size(); ++i) {
    std::error_code error;
    std::filesystem::rename(temporaryOf(paths[i]), paths[i], error);
    if (error) {
      std::string failed = paths[i];
      paths.erase(paths.begin(), paths.begin() + static_cast<ptrdiff_t>(i));
      throw RuntimeError("cannot write '" + failed + "': " + error.message());
    }
  }
  paths.clear();
}

void writeFileAtomically(const std::string &path, std::string_view bytes,
                         bool durable) {
  FileSet file(durable);
  file.add(path, bytes);
  file.commit();
}

void reportFileSizeLimitAsError() { std::signal(SIGXFSZ, SIG_IGN); }

} // namespace meshc::runtime
