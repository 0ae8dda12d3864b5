//===- meshc-opt.cpp - the meshc pass driver ------------------------------===//
//
// MlirOptMain over the mtf dialect and meshc's passes; what lit tests use.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Registration.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  meshc::registerAll(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "meshc optimizer driver\n", registry));
}
