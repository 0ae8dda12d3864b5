//===- meshc.cpp - the meshc compiler -------------------------------------===//
//
// Compiles a named-dimension model for a device mesh; see compiler/driver.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Driver.h"

int main(int argc, char **argv) { return meshc::meshcMain(argc, argv); }
