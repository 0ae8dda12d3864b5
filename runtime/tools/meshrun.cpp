//===- meshrun.cpp - Runs compiled meshc programs -------------------------===//
//
// The meshrun tool; everything lives in the runtime library (Meshrun.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/Meshrun.h"

#include <iostream>

int main(int argc, char **argv) {
  return meshc::runtime::meshrunMain(argc, argv, std::cout, std::cerr);
}
