//===- Bindings.h - The parts of the extension _meshc -----------*- C++ -*-===//
//
// The extension module under the Python package meshc (python/meshc): the
// compile entry (CompileBinding.cpp) and sessions on devices
// (SessionBinding.cpp). The package's Python modules wrap both; the
// extension's own names are private (docs/python.md).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_PYTHON_BINDINGS_H
#define MESHC_PYTHON_BINDINGS_H

#include <nanobind/nanobind.h>

namespace meshc::python {

/// Adds compile(): CompileBinding.cpp.
void defineCompile(nanobind::module_ &module);
/// Adds Session and the exception RunError: SessionBinding.cpp.
void defineSession(nanobind::module_ &module);

} // namespace meshc::python

#endif // MESHC_PYTHON_BINDINGS_H
