//===- CompileTest.cpp - compile() as a library ---------------------------===//
//
// compileModel() (compiler/driver/Compile.h) with options built in code, as a
// program other than `meshc` calls it: what it writes, that an unset flag
// keeps its default, and that an error fails with meshc's message.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Compile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using meshc::CompileOptions;

const std::string kMlp =
    std::string(MESHC_SOURCE_DIR) + "/examples/mlp/mlp.mtf";

/// Compiles `options.input` as meshc would; `errors` gets what it printed
/// on stderr; with `result`, what compile() returns in memory.
bool compileWith(const CompileOptions &options, std::string *errors = nullptr,
                 meshc::CompileResult *result = nullptr) {
  testing::internal::CaptureStderr();
  bool ok = mlir::succeeded(meshc::compileModel(options, result));
  std::string printed = testing::internal::GetCapturedStderr();
  if (errors)
    *errors = printed;
  return ok;
}

/// A fresh path under the system's temporary directory.
std::string temporaryPath(const char *suffix) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createUniquePath(std::string("meshc-compile-%%%%%%") + suffix,
                                  path, /*MakeAbsolute=*/true);
  return std::string(path);
}

llvm::json::Object readProgram(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << path;
  if (!buffer)
    return {};
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  EXPECT_TRUE(bool(parsed));
  if (!parsed)
    return {};
  return *parsed->getAsObject();
}

TEST(Compile, WritesTheProgramTheOptionsAskFor) {
  CompileOptions options;
  options.input = kMlp;
  options.mesh = "b:2;m:2";
  options.layout = "batch:b;hidden:m";
  options.output = temporaryPath(".mprog");
  std::string errors;
  ASSERT_TRUE(compileWith(options, &errors)) << errors;
  llvm::json::Object program = readProgram(*options.output);
  EXPECT_TRUE(program.getArray("steps"));
  EXPECT_FALSE(program.getArray("steps")->empty());
  // The mesh, as the options gave it.
  const llvm::json::Array *mesh = program.getArray("mesh");
  ASSERT_TRUE(mesh);
  ASSERT_EQ(mesh->size(), 2u);
  EXPECT_EQ((*mesh)[0].getAsObject()->getString("name"), "b");
  EXPECT_EQ((*mesh)[1].getAsObject()->getInteger("size"), 2);
  // The same options, the same bytes.
  std::string again = temporaryPath(".mprog");
  CompileOptions same = options;
  same.output = again;
  ASSERT_TRUE(compileWith(same, &errors)) << errors;
  auto first = llvm::MemoryBuffer::getFile(*options.output);
  auto second = llvm::MemoryBuffer::getFile(again);
  ASSERT_TRUE(first && second);
  EXPECT_EQ((*first)->getBuffer(), (*second)->getBuffer());
  // Without a layout: one device's program, another one.
  CompileOptions single;
  single.input = kMlp;
  single.output = temporaryPath(".mprog");
  ASSERT_TRUE(compileWith(single, &errors)) << errors;
  auto one = llvm::MemoryBuffer::getFile(*single.output);
  ASSERT_TRUE(one);
  EXPECT_NE((*one)->getBuffer(), (*first)->getBuffer());
  for (const std::string &path : {*options.output, again, *single.output})
    llvm::sys::fs::remove(path);
}

// With a result: the program and the report in memory, nothing written.
TEST(Compile, ReturnsTheProgramAndItsExplanationInMemory) {
  CompileOptions options;
  options.input = kMlp;
  options.mesh = "b:2;m:2";
  options.layout = "batch:b;hidden:m";
  options.output = temporaryPath(".mprog");
  options.explain = true;
  meshc::CompileResult result;
  std::string errors;
  ASSERT_TRUE(compileWith(options, &errors, &result)) << errors;
  EXPECT_FALSE(llvm::sys::fs::exists(*options.output));
  ASSERT_TRUE(result.program);
  ASSERT_TRUE(result.explanation);
  EXPECT_FALSE(result.ir);
  // The program is the one meshc writes for the same options.
  CompileOptions written = options;
  written.explain = false;
  ASSERT_TRUE(compileWith(written, &errors)) << errors;
  auto file = llvm::MemoryBuffer::getFile(*written.output);
  ASSERT_TRUE(file);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", *result.program) << "\n";
  EXPECT_EQ(text, (*file)->getBuffer().str());
  llvm::sys::fs::remove(*written.output);
  // The report: the tensors and collectives of --explain.
  const llvm::json::Object *report = result.explanation->getAsObject();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->getInteger("devices"), 4);
  ASSERT_TRUE(report->getArray("collectives"));
  EXPECT_FALSE(report->getArray("collectives")->empty());
  EXPECT_FALSE(report->getArray("tensors")->empty());
  // IR instead of a program.
  CompileOptions ir = options;
  ir.explain = false;
  ir.emit = meshc::EmitKind::Spmd;
  meshc::CompileResult spmd;
  ASSERT_TRUE(compileWith(ir, &errors, &spmd)) << errors;
  ASSERT_TRUE(spmd.ir);
  EXPECT_NE(spmd.ir->find("mtf.program"), std::string::npos);
  EXPECT_FALSE(spmd.program);
  EXPECT_FALSE(spmd.explanation);
}

TEST(Compile, ErrorsReadAsMeshcPrintsThem) {
  CompileOptions options;
  options.input = kMlp;
  options.mesh = "b:2";
  options.layout = "batch:q";
  options.output = temporaryPath(".mprog");
  std::string errors;
  EXPECT_FALSE(compileWith(options, &errors));
  EXPECT_NE(errors.find("--layout"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'q'"), std::string::npos) << errors;
  EXPECT_FALSE(llvm::sys::fs::exists(*options.output));
  // A flag meaningful only with another: --memory-limit without auto.
  CompileOptions limited;
  limited.input = kMlp;
  limited.memoryLimit = "1GiB";
  EXPECT_FALSE(compileWith(limited, &errors));
  EXPECT_NE(errors.find("--memory-limit is for --layout auto"),
            std::string::npos)
      << errors;
  // Unset, the machine is the default one: --machine alone is no error
  // only when given with what predicts.
  CompileOptions machine;
  machine.input = kMlp;
  machine.machine = "h100-sxm";
  machine.output = temporaryPath(".mprog");
  EXPECT_FALSE(compileWith(machine, &errors));
  EXPECT_NE(errors.find("--machine is for --explain"), std::string::npos)
      << errors;
}

} // namespace

namespace {

TEST(CompileTest, ErrorsAndTheSearchReportGoIntoTheResult) {
  CompileOptions options;
  options.input = kMlp;
  options.mesh = "b:2";
  options.layout = "batch:c";
  std::string printed;
  meshc::CompileResult result;
  EXPECT_FALSE(compileWith(options, &printed, &result));
  EXPECT_EQ(printed, "");
  EXPECT_EQ(result.errors,
            "meshc: error: --layout: dimension 'batch' is split over mesh "
            "axis 'c', which is not in the mesh (axes: 'b')\n  batch:c\n     "
            "   ^\nhint: add 'c' to the mesh or split 'batch' over one of its "
            "axes\n");
  // Without a result, the same text goes to stderr.
  EXPECT_FALSE(compileWith(options, &printed));
  EXPECT_EQ(printed, result.errors);

  options.mesh = "b:2;m:2";
  options.layout = "auto";
  meshc::CompileResult searched;
  testing::internal::CaptureStdout();
  EXPECT_TRUE(compileWith(options, &printed, &searched));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(printed, "");
  EXPECT_EQ(searched.errors, "");
  EXPECT_NE(searched.searchReport.find("chosen layout: "), std::string::npos)
      << searched.searchReport;
  EXPECT_TRUE(searched.program.has_value());
}

} // namespace

namespace {

TEST(CompileModel, TakesSourceTextAndHandsOnEachDiagnostic) {
  CompileOptions options;
  options.input = "inline.mtf";
  meshc::ModelHooks hooks;
  hooks.text = "dim batch = 4\ninput x : f32[batch]\ny = relu(z)\n"
               "output y\n";
  std::string printed;
  llvm::raw_string_ostream stream(printed);
  hooks.diagnostics = &stream;
  std::vector<std::string> seen;
  hooks.observe = [&](mlir::Diagnostic &diagnostic) {
    seen.push_back(diagnostic.str());
  };
  meshc::CompileResult result;
  EXPECT_TRUE(mlir::failed(meshc::compileModel(options, &result, hooks)));
  ASSERT_FALSE(seen.empty());
  // Printed as meshc prints it: the name the text was given, the place.
  EXPECT_NE(printed.find("inline.mtf:3:"), std::string::npos) << printed;
  EXPECT_NE(printed.find(seen.front()), std::string::npos) << printed;
  EXPECT_EQ(result.errors, "");
}

TEST(CompileModel, AFileThatCannotBeReadIsAnErrorInTheResult) {
  CompileOptions options;
  options.input = "/nonexistent/model.mtf";
  std::string printed;
  meshc::CompileResult result;
  EXPECT_FALSE(compileWith(options, &printed, &result));
  EXPECT_EQ(printed, "");
  EXPECT_EQ(result.errors.rfind("meshc: error: ", 0), 0u) << result.errors;
  EXPECT_NE(result.errors.find("/nonexistent/model.mtf"), std::string::npos)
      << result.errors;
  // Without a result, on standard error.
  EXPECT_FALSE(compileWith(options, &printed));
  EXPECT_EQ(printed, result.errors);
}

} // namespace
