//===- Choices.h - the spellings of an enum option --------------*- C++ -*-===//
//
// The form of the one table per enum option (meshc's --remat, --precision,
// --repeat, --interleave-halves) of its values, their names and their help:
// meshc's flags, the passes' options and the Python package's keywords all
// read the same table, so a spelling has one home (rematChoices in Remat.h;
// precisionChoices, repeatChoices and halvesChoices in
// compiler/driver/Compile.h).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_CHOICES_H
#define MESHC_COMPILER_PASSES_CHOICES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace meshc {

/// One value of an enum option.
template <typename Enum> struct Choice {
  Enum value;
  llvm::StringLiteral name;
  llvm::StringLiteral help;
};

/// The value spelt `name`, if one is.
template <typename Enum>
std::optional<Enum> findChoice(llvm::ArrayRef<Choice<Enum>> choices,
                               llvm::StringRef name) {
  for (const Choice<Enum> &choice : choices)
    if (choice.name == name)
      return choice.value;
  return std::nullopt;
}

/// The name `value` is spelt (the table holds every value).
template <typename Enum>
llvm::StringRef choiceName(llvm::ArrayRef<Choice<Enum>> choices, Enum value) {
  for (const Choice<Enum> &choice : choices)
    if (choice.value == value)
      return choice.name;
  return {};
}

/// The names as a list for a message: 'a', 'b', 'c'.
template <typename Enum>
std::string choiceNames(llvm::ArrayRef<Choice<Enum>> choices) {
  std::string names;
  for (const Choice<Enum> &choice : choices)
    names += (names.empty() ? "'" : ", '") + choice.name.str() + "'";
  return names;
}

/// A command-line or pass option modifier that gives the option the table's
/// values (what llvm::cl::values does for a list written in place):
/// `cl::opt<Remat> remat{"remat", choiceValues(rematChoices())}`.
template <typename Enum> struct ChoiceValues {
  llvm::ArrayRef<Choice<Enum>> choices;
  template <typename Option> void apply(Option &option) const {
    for (const Choice<Enum> &choice : choices)
      option.getParser().addLiteralOption(choice.name, choice.value,
                                          choice.help);
  }
};
template <typename Enum>
ChoiceValues<Enum> choiceValues(llvm::ArrayRef<Choice<Enum>> choices) {
  return {choices};
}

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_CHOICES_H
