//===- Explain.cpp - meshc --explain --------------------------------------===//
//
// Builds the per-tensor table from the layouts mtf-apply-layout attached,
// using the layout library for slice shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Explain.h"

#include "compiler/passes/LayoutBridge.h"
#include "compiler/passes/Schedule.h"
#include "lowering/ProgramCost.h"
#include "runtime/Loader.h"
#include "runtime/core/layout/ReshardPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Path.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

using namespace mlir;

namespace meshc {

namespace {

/// One row of the table.
struct Row {
  std::string name, kind, type, layout, slice;
  int64_t bytes = 0;
  /// `name` with its instance numbers made "_*" (instanceTemplate).
  std::string group;
  /// What kindOf says, without the ×count of a loop.
  std::string phase;
  /// How many times per step a loop computes it.
  int64_t count = 1;
};

std::string typeString(mtf::TensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getElementType() << "[";
  llvm::interleaveComma(type.getDims(), os, [&](const mtf::NamedDim &dim) {
    os << dim.name.getValue() << "=" << dim.size;
  });
  os << "]";
  return text;
}

std::string kindOf(Operation *op) {
  if (llvm::isa<mtf::InputOp>(op))
    return "input";
  if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
    return param.getSlot() ? "slot" : "param";
  if (llvm::isa<mtf::ConstantOp>(op))
    return "const";
  // Intermediates of the backward pass and the optimizer update.
  if (auto phase =
          op->getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName))
    return phase.getValue().str();
  return "activation";
}

/// `text` (a tensor's name, or a collective's cause that names tensors)
/// with each instance number of a repeat ("_3" before a '.' or '/':
/// `block_3.h`, `attention_3.wq/adam_m`; with `atEnd`, the name of an
/// instance's own op, also at the end: `block_3`) made "_*", so the
/// instances' entries group.
std::string instanceTemplate(const std::string &text, bool atEnd = false) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    if (text[i] == '_')
      while (j < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[j])))
        ++j;
    if (text[i] == '_' && j > i + 1 &&
        (j == text.size() ? atEnd : text[j] == '.' || text[j] == '/')) {
      out += "_*";
      i = j;
      continue;
    }
    out += text[i++];
  }
  return out;
}

/// `items` with equal keys merged into their first, in first-seen order,
/// each with how many it stands for.
template <typename T, typename Key>
std::vector<std::pair<T, int64_t>> groupEqual(const std::vector<T> &items,
                                              Key key) {
  std::vector<std::pair<T, int64_t>> groups;
  std::map<std::string, size_t> index;
  for (const T &item : items) {
    auto [it, added] = index.try_emplace(key(item), groups.size());
    if (added)
      groups.push_back({item, 0});
    ++groups[it->second].second;
  }
  return groups;
}

/// " ×n" after a grouped entry that stands for n > 1.
std::string times(int64_t n) { return n > 1 ? " ×" + std::to_string(n) : ""; }

/// The columns `text` takes: its UTF-8 characters ("×" is one).
size_t displayWidth(const std::string &text) {
  return static_cast<size_t>(llvm::count_if(text, [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

void printTable(const std::vector<Row> &rows, llvm::raw_ostream &os) {
  const char *headers[] = {"tensor",           "kind",
                           "global type",      "layout",
                           "slice per device", "bytes/device"};
  size_t widths[6];
  for (int i = 0; i < 6; ++i)
    widths[i] = strlen(headers[i]);
  auto cells = [](const Row &row) {
    return std::array<std::string, 6>{row.name,  row.kind,
                                      row.type,  row.layout,
                                      row.slice, formatBytes(row.bytes)};
  };
  for (const Row &row : rows) {
    auto values = cells(row);
    for (int i = 0; i < 6; ++i)
      widths[i] = std::max(widths[i], displayWidth(values[i]));
  }
  auto printRow = [&](const std::array<std::string, 6> &values) {
    for (int i = 0; i < 6; ++i) {
      os << "  ";
      if (i == 5)
        os.indent(widths[i] - displayWidth(values[i])) << values[i];
      else
        os << values[i], os.indent(widths[i] - displayWidth(values[i]));
    }
    os << "\n";
  };
  printRow(
      {headers[0], headers[1], headers[2], headers[3], headers[4], headers[5]});
  for (const Row &row : rows)
    printRow(cells(row));
}

/// The program's tensors with their layouts (a loop's body once, each
/// tensor with how often a step computes it), what they add up to on a
/// device, and the outputs: what --explain's table and its JSON list.
struct TensorTable {
  std::vector<Row> rows;
  int64_t paramBytes = 0, slotBytes = 0, inputBytes = 0, activationBytes = 0;
  int64_t paramCount = 0;
  std::vector<std::string> outputs;
};

TensorTable collectTensors(mtf::ProgramOp program, const layout::Mesh &mesh,
                           const layout::AxisWeights &weights) {
  TensorTable table;
  std::vector<Row> &rows = table.rows;
  auto addRow = [&](Operation &op, const std::string &name,
                    mtf::TensorType type, mtf::LayoutAttr attr, int64_t count) {
    layout::Result<layout::TensorLayout> tensorLayout =
        fromLayoutAttr(name, type, attr, mesh, &weights);
    if (!tensorLayout.ok())
      return;
    std::vector<layout::Dim> dims = toDims(type);
    Row row;
    row.name = name;
    row.group = instanceTemplate(name, op.hasAttr("mtf.instance"));
    row.phase = kindOf(&op);
    row.count = count;
    row.kind = row.phase + (count > 1 ? " ×" + std::to_string(count) : "");
    row.type = typeString(type);
    row.layout = tensorLayout->str(dims, mesh);
    row.slice = describeBlocks(type, *tensorLayout, mesh, weights);
    row.bytes = type.getElementBytes();
    for (int64_t size : tensorLayout->maxBlockShape(dims, mesh, weights))
      row.bytes *= size;
    std::string kind = kindOf(&op);
    if (kind == "param") {
      table.paramBytes += row.bytes;
      table.paramCount += type.getNumElements();
    } else if (kind == "slot") {
      table.slotBytes += row.bytes;
    } else if (kind == "input") {
      table.inputBytes += row.bytes;
    } else {
      table.activationBytes += row.bytes * count;
    }
    rows.push_back(std::move(row));
  };
  std::vector<std::string> &outputs = table.outputs;
  // The ops of `block`, each computed `count` times per step: a loop's
  // body is listed once, its tensors marked ×count and counted that often.
  std::function<void(Block &, int64_t)> list = [&](Block &block,
                                                   int64_t count) {
    for (Operation &op : block) {
      if (auto loop = llvm::dyn_cast<mtf::LoopOp>(op)) {
        list(loop.getBodyBlock(), count * loop.getCount());
        continue;
      }
      if (auto output = llvm::dyn_cast<mtf::OutputOp>(op)) {
        std::string source = tensorName(output.getValue().getDefiningOp());
        outputs.push_back(output.getName() == source
                              ? source
                              : output.getName().str() + " (tensor " + source +
                                    ")");
        continue;
      }
      // An op with several results (fused attention): a row per result,
      // the first under the op's name, the others with their own.
      if (auto layouts =
              op.getAttrOfType<ArrayAttr>(mtf::MtfDialect::kLayoutsAttrName)) {
        for (auto [index, result, attr] :
             llvm::enumerate(op.getResults(), layouts))
          addRow(op, resultTensorName(llvm::cast<OpResult>(result)),
                 llvm::cast<mtf::TensorType>(result.getType()),
                 llvm::cast<mtf::LayoutAttr>(attr), count);
        continue;
      }
      if (op.getNumResults() != 1)
        continue;
      auto type = llvm::dyn_cast<mtf::TensorType>(op.getResult(0).getType());
      auto attr =
          op.getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
      if (!type || !attr)
        continue;
      addRow(op, tensorName(&op), type, attr, count);
    }
  };
  list(program.getBodyBlock(), 1);
  return table;
}

/// A pipelined repeat as mtf-pipeline-stages records it (mtf.pipelines).
struct PipelineShape {
  std::string dim;
  int64_t stages = 1, perStage = 1, microbatches = 1, ticks = 1;
  /// Each stage's layers, for uneven stages only.
  std::vector<int64_t> blocks;
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  /// The interleaved schedule's rounds (perStage is then a block's layers).
  int64_t virtualStages = 1;
};

std::vector<PipelineShape> pipelinesOf(mtf::ProgramOp program) {
  std::vector<PipelineShape> shapes;
  auto pipelines = program->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kPipelinesAttrName);
  if (!pipelines)
    return shapes;
  for (NamedAttribute entry : pipelines) {
    auto attr = llvm::cast<DictionaryAttr>(entry.getValue());
    auto get = [&](StringRef key) {
      return attr.getAs<IntegerAttr>(key).getInt();
    };
    PipelineShape shape;
    shape.dim = entry.getName().getValue().str();
    shape.stages = get("stages");
    shape.perStage = get("per_stage");
    shape.microbatches = get("microbatches");
    shape.ticks = get("ticks");
    if (auto schedule = attr.getAs<StringAttr>("schedule"))
      shape.schedule = findChoice(scheduleChoices(), schedule.getValue())
                           .value_or(PipelineSchedule::GPipe);
    if (auto rounds = attr.getAs<IntegerAttr>("virtual_stages"))
      shape.virtualStages = rounds.getInt();
    if (auto blocks = attr.getAs<DenseI64ArrayAttr>("blocks"))
      shape.blocks.assign(blocks.asArrayRef().begin(),
                          blocks.asArrayRef().end());
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

/// "forward activations" as a JSON key: "forward_activations".
std::string snakeCase(std::string text) {
  std::replace(text.begin(), text.end(), ' ', '_');
  return text;
}

/// "model.mtf:12:3": where `op` comes from, or "?".
std::string sourceOf(Operation *op) {
  if (auto loc = op->getLoc()->findInstanceOf<FileLineColLoc>())
    return llvm::sys::path::filename(loc.getFilename()).str() + ":" +
           std::to_string(loc.getLine()) + ":" +
           std::to_string(loc.getColumn());
  return "?";
}

} // namespace

/// Every collective of the partitioned program, with its bytes, predicted
/// time and cause, then the predicted step time.
void explainCollectives(const ProgramCost &cost, const layout::Mesh &mesh,
                        const cost::MachineProfile &machine, bool grouped,
                        llvm::raw_ostream &os) {
  struct Entry {
    std::string op, axes, bytes, received, time, where, why;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  for (const CollectiveCost &collective : cost.collectives) {
    Operation *op = collective.op;
    std::string axisNames;
    for (size_t axis : collective.axes)
      axisNames += (axisNames.empty() ? "" : "+") + mesh.axisName(axis);
    total += collective.received;
    std::string where = sourceOf(op);
    auto reason =
        op->getAttrOfType<StringAttr>(mtf::MtfDialect::kReasonAttrName);
    // A collective in a loop's body: once per iteration.
    std::string times =
        collective.count > 1 ? " ×" + std::to_string(collective.count) : "";
    total += collective.received * (collective.count - 1);
    entries.push_back({op->getName().stripDialect().str() + times, axisNames,
                       formatBytes(collective.inBytes),
                       formatBytes(collective.received),
                       cost::formatSeconds(collective.seconds) +
                           (collective.interNode ? " (between nodes)" : ""),
                       where, reason ? reason.getValue().str() : ""});
  }
  int64_t runs = 0, slices = 0;
  for (const CollectiveCost &collective : cost.collectives) {
    runs += collective.count;
    if (collective.kind == layout::CollectiveKind::Slice)
      slices += collective.count;
  }
  size_t listed = entries.size();
  if (grouped) {
    // Identical collectives (a repeat's instances) once, ×how many.
    for (Entry &e : entries)
      e.why = instanceTemplate(e.why);
    auto groups = groupEqual(entries, [](const Entry &e) {
      return e.op + "\n" + e.axes + "\n" + e.bytes + "\n" + e.received + "\n" +
             e.time + "\n" + e.where + "\n" + e.why;
    });
    entries.clear();
    for (auto &[entry, n] : groups) {
      entries.push_back(entry);
      entries.back().op += times(n);
    }
  }
  os << "\ncollectives per step (" << runs;
  if (slices)
    os << ", " << slices << " of them local slices without communication";
  if (runs != static_cast<int64_t>(listed))
    os << ", " << listed << " listed: "
       << (cost.microbatches > 1
               ? "a forward or backward one once, ×" +
                     std::to_string(cost.microbatches) +
                     " microbatches, a loop's ×its iterations too"
               : std::string("a loop's once, ×its iterations"));
  if (entries.size() != listed)
    os << "; identical ones grouped into " << entries.size()
       << " lines, --explain-all lists each";
  os << "):\n";
  if (entries.empty()) {
    os << "  none: every device computes on its own blocks\n";
  } else {
    size_t widths[6] = {2, 4, 6, 8, 9, 6};
    for (const Entry &e : entries) {
      widths[0] = std::max(widths[0], displayWidth(e.op));
      widths[1] = std::max(widths[1], e.axes.size());
      widths[2] = std::max(widths[2], e.bytes.size());
      widths[3] = std::max(widths[3], e.received.size());
      widths[4] = std::max(widths[4], e.time.size());
      widths[5] = std::max(widths[5], e.where.size());
    }
    auto row = [&](ArrayRef<std::string> cells) {
      os << "  ";
      for (int i = 0; i < 6; ++i) {
        os << cells[i];
        os.indent(widths[i] - displayWidth(cells[i]) + 2);
      }
      os << cells[6] << "\n";
    };
    row({"op", "axes", "input", "received", "predicted", "source", "why"});
    for (const Entry &e : entries)
      row({e.op, e.axes, e.bytes, e.received, e.time, e.where, e.why});
    os << "  total received per device per step: " << formatBytes(total)
       << "\n";
  }
  const cost::Prediction &p = cost.prediction;
  os << "\npredicted step time: " << cost::formatSeconds(p.total())
     << " (compute " << cost::formatSeconds(p.compute) << " in " << p.steps
     << " steps, communication " << cost::formatSeconds(p.communication)
     << " in " << p.collectives << " collectives";
  if (p.hidden > 0)
    os << " (" << cost::formatSeconds(p.exposed()) << " exposed, "
       << cost::formatSeconds(p.hidden) << " beside compute)";
  os << ", run overhead " << cost::formatSeconds(p.overhead) << ") on "
     << machine.name << "\n";
  if (cost.microbatches > 1)
    os << "  with " << cost.microbatches
       << " microbatches: the forward and backward steps run once per "
          "microbatch, the update once\n";
}

/// Every mtf.fused step of the partitioned program: its phase, iteration
/// dims (the reduced ones named), source and ops.
void explainFusion(ModuleOp spmd, bool grouped, llvm::raw_ostream &os) {
  std::vector<mtf::FusedOp> groups;
  int64_t ops = 0;
  spmd.walk([&](mtf::FusedOp fused) {
    groups.push_back(fused);
    ops += std::distance(fused.getBodyBlock().begin(),
                         fused.getBodyBlock().end()) -
           1;
  });
  os << "\nfused steps (" << groups.size() << ", holding " << ops << " ops):\n";
  if (groups.empty()) {
    os << "  none (--no-fuse, or no chain of elementwise ops)\n";
    return;
  }
  std::vector<std::pair<int, std::string>> lines; // (index, text)
  int index = 0;
  for (mtf::FusedOp fused : groups) {
    std::string dims, reduced, body, where = "?";
    unsigned rank = 0;
    for (Operation &op : fused.getBodyBlock().without_terminator()) {
      for (Value value :
           llvm::concat<Value>(op.getOperands(), op.getResults())) {
        auto type = llvm::cast<mtf::TensorType>(value.getType());
        if (type.getRank() > rank || dims.empty()) {
          rank = type.getRank();
          dims.clear();
          for (const mtf::NamedDim &dim : type.getDims())
            dims += (dims.empty() ? "" : "×") + dim.name.getValue().str();
        }
      }
      if (llvm::isa<mtf::ReductionOpInterface>(op) && reduced.empty()) {
        auto in = llvm::cast<mtf::TensorType>(op.getOperand(0).getType());
        auto out = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
        for (const mtf::NamedDim &dim : in.getDims())
          if (!out.hasDim(dim.name.getValue()))
            reduced += (reduced.empty() ? "" : ",") + dim.name.getValue().str();
      }
      if (!llvm::isa<mtf::ConstantOp>(op))
        body += (body.empty() ? "" : " ") + op.getName().stripDialect().str();
    }
    if (auto loc = fused->getLoc()->findInstanceOf<FileLineColLoc>())
      where = llvm::sys::path::filename(loc.getFilename()).str() + ":" +
              std::to_string(loc.getLine());
    auto phase =
        fused->getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
    std::string text;
    llvm::raw_string_ostream line(text);
    line << (phase ? phase.getValue() : "forward") << " ["
         << (dims.empty() ? "scalar" : dims) << "]"
         << (reduced.empty() ? "" : " rows over " + reduced) << " at " << where
         << ": " << body;
    lines.push_back({++index, text});
  }
  if (!grouped) {
    for (const auto &[number, text] : lines)
      os << "  #" << number << " " << text << "\n";
    return;
  }
  // Identical steps (a repeat's instances) once: the first's number, ×how
  // many.
  auto same = groupEqual(lines, [](const std::pair<int, std::string> &line) {
    return line.second;
  });
  if (same.size() != lines.size())
    os << "  (identical steps grouped into " << same.size()
       << " lines, --explain-all lists each)\n";
  for (const auto &[line, n] : same)
    os << "  #" << line.first << times(n) << " " << line.second << "\n";
}

ScratchPlan planScratch(const llvm::json::Value &mprog) {
  std::string text;
  llvm::raw_string_ostream(text) << mprog;
  ScratchPlan plan;
  std::optional<runtime::Program> loaded =
      runtime::tryParseProgram(text, "the emitted .mprog", plan.error);
  if (loaded)
    plan.bytes = loaded->scratchBytes;
  return plan;
}

/// The indices 0..count-1 to show, -1 standing for an elided run: all of
/// them up to `most`, else the first `head`, -1 and the last `tail`.
static std::vector<int64_t> shown(int64_t count, int64_t most, int64_t head,
                                  int64_t tail) {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i) {
    if (count > most && i == head) {
      indices.push_back(-1);
      i = count - tail;
    }
    indices.push_back(i);
  }
  return indices;
}

/// A pipeline's schedule as a table of `stages` rows and `ticks` columns
/// (long pipelines show their first and last ticks and stages: at most
/// `mostTicks`, else `headTicks`, "..." and `tailTicks`), each cell
/// `cellOf(stage, tick)` right-aligned to `width`.
static void
scheduleTable(int64_t stages, int64_t ticks, int64_t mostTicks,
              int64_t headTicks, int64_t tailTicks, int width,
              llvm::function_ref<std::string(int64_t, int64_t)> cellOf,
              llvm::raw_ostream &os) {
  std::vector<int64_t> columns = shown(ticks, mostTicks, headTicks, tailTicks);
  std::vector<int64_t> lines = shown(stages, 8, 4, 2);
  std::string stageLabel = "stage " + std::to_string(stages - 1);
  auto cell = [&](const std::string &text) {
    os << std::string(size_t(std::max<int>(0, width - int(text.size()))), ' ')
       << text;
  };
  os << "    " << llvm::left_justify("tick", stageLabel.size());
  for (int64_t tick : columns)
    cell(tick < 0 ? "..." : std::to_string(tick));
  os << "\n";
  for (int64_t stage : lines) {
    if (stage < 0) {
      os << "    ...\n";
      continue;
    }
    os << "    "
       << llvm::left_justify("stage " + std::to_string(stage),
                             stageLabel.size());
    for (int64_t tick : columns)
      cell(tick < 0 ? "..." : cellOf(stage, tick));
    os << "\n";
  }
}

/// The microbatch's number, or "." outside [0, microbatches).
static std::string microbatchName(int64_t microbatch, int64_t microbatches) {
  return microbatch >= 0 && microbatch < microbatches
             ? std::to_string(microbatch)
             : std::string(".");
}

/// A pipeline's GPipe schedule: the microbatch each stage runs at each tick
/// of the forward loop ('.' where it computes on zeros); the backward loop
/// runs the same ticks in reverse.
static void explainSchedule(int64_t stages, int64_t microbatches, int64_t ticks,
                            llvm::raw_ostream &os) {
  os << "  schedule: the microbatch each stage runs at each tick ('.': "
        "zeros); the backward runs the ticks in reverse, every stage holds "
        "the memory below (one SPMD program)\n";
  scheduleTable(
      stages, ticks, 16, 10, 4,
      static_cast<int>(std::to_string(ticks - 1).size()) + 1,
      [&](int64_t stage, int64_t tick) {
        return microbatchName(tick - stage, microbatches);
      },
      os);
}

/// 1F1B's schedule: at each tick the microbatch each stage runs forward
/// and the one it runs backward, "f/b" ('.': none).
static void explainOneFOneB(int64_t stages, int64_t microbatches,
                            llvm::raw_ostream &os) {
  os << "  schedule (1F1B): the microbatch each stage runs forward/backward "
        "at each tick ('.': none); the first "
     << stages - 1 << " ticks run forward only, the last " << stages - 1
     << " backward only; stage s keeps what its backward reads for 2(P-1-s) "
        "ticks\n";
  scheduleTable(
      stages, microbatches + 2 * stages - 2, 12, 8, 3,
      static_cast<int>(2 * std::to_string(microbatches - 1).size()) + 2,
      [&](int64_t stage, int64_t tick) {
        int64_t forward = tick < microbatches + stages - 1 ? tick - stage : -1;
        int64_t backward =
            tick >= stages - 1 ? tick - (2 * stages - 2 - stage) : -1;
        return microbatchName(forward, microbatches) + "/" +
               microbatchName(backward, microbatches);
      },
      os);
}

/// The interleaved schedule: at each tick the microbatch each stage runs
/// and the round of the block, a letter ('a': the stage's first block).
static void explainInterleaved(int64_t stages, int64_t microbatches,
                               int64_t rounds, int64_t ticks,
                               llvm::raw_ostream &os) {
  os << "  schedule (interleaved): the microbatch each stage runs at each "
        "tick and the round of its block (a: blocks 0.."
     << stages - 1 << ", b: " << stages << ".." << 2 * stages - 1
     << ", ...; '.': zeros); stage 0 takes a microbatch back from stage "
     << stages - 1
     << " for its next round; the backward runs the ticks in reverse\n";
  scheduleTable(
      stages, ticks, 16, 10, 4,
      static_cast<int>(std::to_string(microbatches - 1).size()) + 2,
      [&](int64_t stage, int64_t tick) {
        int64_t entry = tick - stage;
        if (entry < 0 || entry >= rounds * microbatches)
          return std::string(".");
        int64_t inGroup = entry % (rounds * stages);
        int64_t microbatch =
            entry / (rounds * stages) * stages + inGroup % stages;
        return std::to_string(microbatch) +
               std::string(1, static_cast<char>('a' + inGroup / stages));
      },
      os);
}

void explainProgram(mtf::ProgramOp program, ModuleOp spmd,
                    const MemoryPlanStats *plan, const ScratchPlan *scratch,
                    const cost::MachineProfile &machine, bool grouped,
                    llvm::raw_ostream &os) {
  layout::Mesh mesh = toMesh(program.getMeshAttr());
  layout::AxisWeights weights = axisWeightsOf(program, mesh);
  bool unequal = firstUnequalBlocks(program) != nullptr;
  os << "program @" << program.getSymName() << " on mesh "
     << (mesh.rank() ? mesh.str() : std::string("(single device)")) << " ("
     << mesh.numDevices() << " device" << (mesh.numDevices() == 1 ? "" : "s")
     << ")\n";
  if (!weights.isEven())
    os << "device weights " << weights.str(mesh) << "\n";
  if (weights.allowsIndivisible())
    os << "uneven: mesh axes cut sizes they do not divide into the most "
          "even blocks\n";
  for (const PipelineShape &shape : pipelinesOf(program)) {
    int64_t stages = shape.stages, microbatches = shape.microbatches,
            ticks = shape.ticks;
    std::string layers = std::to_string(shape.perStage);
    if (!shape.blocks.empty()) {
      // Uneven stages: each one's layers.
      layers.clear();
      for (int64_t block : shape.blocks)
        layers += (layers.empty() ? "" : "|") + std::to_string(block);
    }
    os << "pipeline over '" << shape.dim << "': " << stages << " stage"
       << (stages == 1 ? "" : "s") << " of ";
    if (shape.virtualStages > 1)
      os << shape.virtualStages << " blocks of ";
    os << layers << " layer" << (layers == "1" ? "" : "s") << ", "
       << microbatches << " microbatch" << (microbatches == 1 ? "" : "es");
    if (shape.virtualStages > 1)
      os << " in " << ticks
         << " ticks of a block each (interleaved: stage s holds the blocks s, "
            "s + "
         << stages << ", ...); each stage computes on zeros in " << stages - 1
         << " of them, a bubble of ";
    else if (shape.schedule == PipelineSchedule::OneFOneB)
      os << " in " << microbatches + 2 * stages - 2
         << " ticks (1F1B: each stage runs a microbatch's backward beside a "
            "later one's forward); each stage idles "
         << stages - 1 << " forwards and " << stages - 1
         << " backwards of them, a bubble of ";
    else
      os << " in " << ticks
         << " ticks (GPipe); each stage computes on zeros in " << stages - 1
         << " of them, a bubble of ";
    os << llvm::format("%.0f", 100.0 * double(stages - 1) / double(ticks))
       << "% (docs/pipeline.md)\n";
    if (shape.virtualStages > 1)
      explainInterleaved(stages, microbatches, shape.virtualStages, ticks, os);
    else if (shape.schedule == PipelineSchedule::OneFOneB)
      explainOneFOneB(stages, microbatches, os);
    else
      explainSchedule(stages, microbatches, ticks, os);
  }
  if (unequal)
    os << "unequal blocks: a split dimension lists its blocks by shard, "
          "separated by '|'; bytes are the largest block's, and the memory "
          "below adds them up (no device holds more)\n";
  os << "\n";

  TensorTable table = collectTensors(program, mesh, weights);
  std::vector<Row> &rows = table.rows;
  const std::vector<std::string> &outputs = table.outputs;
  const int64_t paramBytes = table.paramBytes, slotBytes = table.slotBytes,
                inputBytes = table.inputBytes,
                activationBytes = table.activationBytes,
                paramCount = table.paramCount;
  if (grouped) {
    // A repeat's instances' tensors once each, ×how many instances.
    size_t all = rows.size();
    auto same = groupEqual(rows, [](const Row &row) {
      return row.group + "\n" + row.kind + "\n" + row.type + "\n" + row.layout +
             "\n" + row.slice + "\n" + std::to_string(row.bytes);
    });
    rows.clear();
    for (auto &[row, n] : same) {
      rows.push_back(row);
      if (n > 1) {
        rows.back().name = row.group;
        rows.back().kind += times(n);
      }
    }
    // The gradient pass's and the update's intermediates follow the
    // forward tensors and parameters they come from: counted by phase, not
    // listed.
    std::map<std::string, std::pair<int64_t, int64_t>> folded;
    std::vector<Row> listed;
    for (size_t i = 0; i < same.size(); ++i) {
      const Row &row = rows[i];
      int64_t n = same[i].second;
      if (row.phase != "backward" && row.phase != "update") {
        listed.push_back(row);
        continue;
      }
      folded[row.phase].first += n;
      folded[row.phase].second += row.bytes * row.count * n;
    }
    if (listed.size() != all) {
      os << "tensors (" << all << "; " << listed.size() << " lines";
      if (rows.size() != all)
        os << ", identical ones of a repeat's instances grouped, ×how many";
      if (!folded.empty())
        os << ", the backward and update passes' intermediates counted "
              "below the table";
      os << "; --explain-all lists each):\n";
    }
    printTable(listed, os);
    for (const auto &[phase, entry] : folded)
      os << "  + " << entry.first << " " << phase
         << (phase == "backward" ? " intermediates (gradients and what they "
                                   "are computed from), "
                                 : " intermediates (the optimizer's), ")
         << formatBytes(entry.second) << " summed over the step\n";
  } else {
    printTable(rows, os);
  }

  os << "\nper-device memory:\n";
  os << "  parameters   " << formatBytes(paramBytes) << " (" << paramCount
     << " parameters in the model)\n";
  if (slotBytes)
    os << "  optimizer    " << formatBytes(slotBytes)
       << " (slots: moments, step counter)\n";
  os << "  inputs       " << formatBytes(inputBytes) << "\n";
  os << "  activations  " << formatBytes(activationBytes)
     << " (every global intermediate at once)\n";
  os << "  total        "
     << formatBytes(paramBytes + slotBytes + inputBytes + activationBytes)
     << "\n";
  if (plan)
    os << "  planned arena " << formatBytes(plan->arenaBytes) << " ("
       << plan->buffers << " buffers, " << formatBytes(plan->unplannedBytes)
       << " without reuse, at most " << formatBytes(plan->peakLiveBytes)
       << " live at once)\n";
  if (plan) {
    os << "  at the peak:";
    const char *separator = " ";
    for (size_t use = 0; use < kMemoryUses; ++use) {
      if (plan->peakByUse[use] == 0)
        continue;
      os << separator << memoryUseName(static_cast<MemoryUse>(use)) << " "
         << formatBytes(plan->peakByUse[use]);
      separator = ", ";
    }
    os << "\n";
  }
  if (plan && scratch && scratch->error.empty())
    os << "  scratch      " << formatBytes(scratch->bytes)
       << " (the largest step's temporaries, as the runtime sizes them)\n"
       << "  on a device  " << formatBytes(plan->arenaBytes + scratch->bytes)
       << " (arena + scratch: what meshrun measures against)\n";
  else if (scratch && !scratch->error.empty())
    os << "  scratch      unknown: the runtime's loader rejects the program: "
       << scratch->error << "\n";
  if (spmd) {
    explainCollectives(predictProgram(spmd, mesh, machine), mesh, machine,
                       grouped, os);
    explainFusion(spmd, grouped, os);
  }
  if (!outputs.empty()) {
    os << "\noutputs: ";
    llvm::interleaveComma(outputs, os);
    os << "\n";
  }
}

llvm::json::Value explanationJson(mtf::ProgramOp program, ModuleOp spmd,
                                  const MemoryPlanStats *plan,
                                  const ScratchPlan *scratch,
                                  const cost::MachineProfile &machine) {
  using llvm::json::Array;
  using llvm::json::Object;
  layout::Mesh mesh = toMesh(program.getMeshAttr());
  layout::AxisWeights weights = axisWeightsOf(program, mesh);
  Object out;
  out["program"] = program.getSymName().str();
  Array axes;
  for (size_t axis = 0; axis < mesh.rank(); ++axis)
    axes.push_back(
        Object{{"name", mesh.axisName(axis)}, {"size", mesh.axisSize(axis)}});
  out["mesh"] = std::move(axes);
  out["devices"] = mesh.numDevices();
  if (!weights.isEven() || weights.allowsIndivisible())
    out["device_weights"] = weights.str(mesh);
  if (std::vector<PipelineShape> shapes = pipelinesOf(program);
      !shapes.empty()) {
    Array list;
    for (const PipelineShape &shape : shapes) {
      Object pipeline{
          {"dim", shape.dim},
          {"stages", shape.stages},
          {"per_stage", shape.perStage},
          {"microbatches", shape.microbatches},
          {"ticks", shape.ticks},
          {"schedule", choiceName(scheduleChoices(), shape.schedule)}};
      if (!shape.blocks.empty())
        pipeline["blocks"] = Array(shape.blocks);
      if (shape.virtualStages > 1)
        pipeline["virtual_stages"] = shape.virtualStages;
      list.push_back(std::move(pipeline));
    }
    out["pipelines"] = std::move(list);
  }

  TensorTable table = collectTensors(program, mesh, weights);
  Array tensors;
  for (const Row &row : table.rows)
    tensors.push_back(Object{{"name", row.name},
                             {"kind", row.phase},
                             {"count", row.count},
                             {"type", row.type},
                             {"layout", row.layout},
                             {"slice", row.slice},
                             {"bytes_per_device", row.bytes}});
  out["tensors"] = std::move(tensors);
  Object memory{{"parameters", table.paramBytes},
                {"parameter_count", table.paramCount},
                {"optimizer", table.slotBytes},
                {"inputs", table.inputBytes},
                {"activations", table.activationBytes},
                {"total", table.paramBytes + table.slotBytes +
                              table.inputBytes + table.activationBytes}};
  if (plan) {
    memory["arena"] = plan->arenaBytes;
    memory["arena_without_reuse"] = plan->unplannedBytes;
    memory["buffers"] = plan->buffers;
    memory["peak_live"] = plan->peakLiveBytes;
    Object peak;
    for (size_t use = 0; use < kMemoryUses; ++use)
      if (plan->peakByUse[use])
        peak[snakeCase(memoryUseName(static_cast<MemoryUse>(use)))] =
            plan->peakByUse[use];
    memory["at_the_peak"] = std::move(peak);
    if (scratch && scratch->error.empty()) {
      memory["scratch"] = scratch->bytes;
      memory["on_a_device"] = plan->arenaBytes + scratch->bytes;
    }
  }
  out["memory"] = std::move(memory);

  if (spmd) {
    ProgramCost cost = predictProgram(spmd, mesh, machine);
    Array collectives;
    for (const CollectiveCost &collective : cost.collectives) {
      Array names;
      for (size_t axis : collective.axes)
        names.push_back(mesh.axisName(axis));
      auto reason = collective.op->getAttrOfType<StringAttr>(
          mtf::MtfDialect::kReasonAttrName);
      collectives.push_back(
          Object{{"op", collective.op->getName().stripDialect().str()},
                 {"axes", std::move(names)},
                 {"group", collective.group},
                 {"count", collective.count},
                 {"input_bytes", collective.inBytes},
                 {"received_bytes", collective.received},
                 {"seconds", collective.seconds},
                 {"between_nodes", collective.interNode},
                 {"source", sourceOf(collective.op)},
                 {"why", reason ? reason.getValue().str() : std::string()}});
    }
    out["collectives"] = std::move(collectives);
    const cost::Prediction &p = cost.prediction;
    out["prediction"] = Object{{"machine", machine.name},
                               {"step_seconds", p.total()},
                               {"compute_seconds", p.compute},
                               {"communication_seconds", p.communication},
                               {"exposed_seconds", p.exposed()},
                               {"hidden_seconds", p.hidden},
                               {"overhead_seconds", p.overhead},
                               {"steps", p.steps},
                               {"collectives", p.collectives},
                               {"microbatches", cost.microbatches}};
  }
  out["outputs"] = Array(table.outputs);
  return out;
}

} // namespace meshc
