//===- FileWriteTest.cpp - Writing files without losing any ---------------===//
//
// FileSet: every file or none. A set destroyed before commit() leaves the
// old contents and no temporaries; a failed add() names the file and the
// reason; a committed set replaces every file; a failed rename names the
// file and leaves no temporaries. (A full disk and a killed
// process: tests/runtime/file-faults.test.)
//
//===----------------------------------------------------------------------===//

#include "runtime/FileWrite.h"
#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace meshc::runtime;
namespace fs = std::filesystem;

namespace {

class FileWriteTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("meshc-filewrite-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string path(const std::string &name) { return (dir / name).string(); }
  static std::string read(const std::string &file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  size_t entries() {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
  }

  fs::path dir;
};

TEST_F(FileWriteTest, UncommittedSetChangesNothing) {
  writeFileAtomically(path("a"), "old a");
  {
    FileSet files;
    files.add(path("a"), "new a");
    files.add(path("b"), "new b");
  }
  EXPECT_EQ(read(path("a")), "old a");
  EXPECT_FALSE(fs::exists(path("b")));
  EXPECT_EQ(entries(), 1u); // no temporaries
}

TEST_F(FileWriteTest, CommittedSetReplacesEveryFile) {
  writeFileAtomically(path("a"), "old a");
  FileSet files(/*durable=*/true);
  files.add(path("a"), "new a");
  files.add(path("b"), std::string(100000, 'b'));
  files.commit();
  EXPECT_EQ(read(path("a")), "new a");
  EXPECT_EQ(read(path("b")).size(), 100000u);
  EXPECT_EQ(entries(), 2u);
}

TEST_F(FileWriteTest, FailedAddNamesTheFileAndKeepsTheRest) {
  writeFileAtomically(path("a"), "old a");
  std::string message;
  try {
    FileSet files;
    files.add(path("a"), "new a");
    files.add(path("missing/b"), "b");
    files.commit();
  } catch (const RuntimeError &error) {
    message = error.what();
  }
  EXPECT_EQ(message, "cannot write '" + path("missing/b") +
                         "': No such file or directory");
  EXPECT_EQ(read(path("a")), "old a");
  EXPECT_EQ(entries(), 1u);
}

/// A rename that fails in commit() (here the temporary was taken away
/// between add() and commit()) names the file and leaves that file's old
/// contents and no temporary; files renamed before it keep their new
/// contents (renames are atomic one by one, not as a set).
TEST_F(FileWriteTest, FailedCommitNamesTheFileAndLeavesNoTemporaries) {
  writeFileAtomically(path("a"), "old a");
  writeFileAtomically(path("b"), "old b");
  std::string message;
  try {
    FileSet files;
    files.add(path("a"), "new a");
    files.add(path("b"), "new b");
    fs::remove(path("b") + ".tmp");
    files.commit();
  } catch (const RuntimeError &error) {
    message = error.what();
  }
  EXPECT_EQ(message,
            "cannot write '" + path("b") + "': No such file or directory");
  EXPECT_EQ(read(path("a")), "new a");
  EXPECT_EQ(read(path("b")), "old b");
  EXPECT_EQ(entries(), 2u);
}

} // namespace
