//===- Module.cpp - The extension module _meshc ---------------------------===//
//
// The entry of the extension under the Python package meshc (Bindings.h).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

NB_MODULE(_meshc, module) {
  module.doc() = "meshc's compiler and runtime (private: use the package "
                 "meshc)";
  meshc::python::defineCompile(module);
  meshc::python::defineSession(module);
}
