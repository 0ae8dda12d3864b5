//===- meshc-calibrate.cpp - Measures a machine profile -------------------===//
//
// The meshc-calibrate tool; everything lives in the runtime library
// (Calibrate.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/Calibrate.h"

#include <iostream>

int main(int argc, char **argv) {
  return meshc::runtime::calibrateMain(argc, argv, std::cout, std::cerr);
}
