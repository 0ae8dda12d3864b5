//===- Program.cpp - A loaded and validated .mprog ------------------------===//
//
// Names and small queries of the program model.
//
//===----------------------------------------------------------------------===//

#include "runtime/Program.h"

#include <algorithm>

namespace meshc::runtime {

int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "";
}

bool isFloat(DType dtype) { return dtype != DType::I32; }

bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

int64_t NamedShape::elements() const {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

int NamedShape::position(const std::string &name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return static_cast<int>(i);
  return -1;
}

std::string NamedShape::str() const {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i)
      text += ", ";
    if (i < names.size())
      text += names[i] + "=";
    text += std::to_string(sizes[i]);
  }
  return text + "]";
}

const char *roleName(Role role) {
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Param:
    return "param";
  case Role::Output:
    return "output";
  }
  return "";
}

std::vector<int64_t> Tensor::globalShape() const {
  std::vector<int64_t> shape;
  for (const layout::Dim &dim : dims)
    shape.push_back(dim.size);
  return shape;
}

std::vector<int64_t> Tensor::declaredShape() const {
  std::vector<int64_t> shape;
  for (const layout::Dim &dim : declaredDims())
    shape.push_back(dim.size);
  return shape;
}

bool declaresDims(const std::vector<layout::Dim> &dims,
                  const std::vector<layout::Dim> &declared) {
  if (declared.empty() || declared.size() >= dims.size() ||
      declared[0].name.empty())
    return false;
  size_t lead = dims.size() - declared.size() + 1;
  int64_t merged = 1;
  for (size_t d = 0; d < lead; ++d)
    merged *= dims[d].size;
  if (declared[0].size != merged)
    return false;
  for (size_t d = 1; d < declared.size(); ++d)
    if (declared[d].name != dims[lead + d - 1].name ||
        declared[d].size != dims[lead + d - 1].size)
      return false;
  return true;
}

std::vector<DeclaredBox> declaredBoxes(const std::vector<layout::Dim> &dims,
                                       const std::vector<layout::Dim> &declared,
                                       const std::vector<int64_t> &offset,
                                       const std::vector<int64_t> &shape) {
  if (declared.empty() || declared.size() >= dims.size())
    return {{offset, shape, 0}};
  // dims [d0, ..., d(lead-1), rest...] declared as [d0 * ... * d(lead-1),
  // rest...]: a run along d(lead-1) per index of the dims before it.
  size_t lead = dims.size() - declared.size() + 1;
  int64_t rest = 1;
  for (size_t d = lead; d < dims.size(); ++d)
    rest *= shape[d];
  int64_t runs = 1;
  for (size_t d = 0; d + 1 < lead; ++d)
    runs *= shape[d];
  std::vector<DeclaredBox> boxes;
  std::vector<int64_t> index(lead - 1, 0);
  for (int64_t run = 0; run < runs; ++run) {
    int64_t merged = 0;
    for (size_t d = 0; d + 1 < lead; ++d)
      merged = merged * dims[d].size + offset[d] + index[d];
    merged = merged * dims[lead - 1].size + offset[lead - 1];
    int64_t start = run * shape[lead - 1] * rest;
    if (!boxes.empty() &&
        boxes.back().offset[0] + boxes.back().shape[0] == merged)
      boxes.back().shape[0] += shape[lead - 1];
    else {
      DeclaredBox box{{merged}, {shape[lead - 1]}, start};
      box.offset.insert(box.offset.end(), offset.begin() + lead, offset.end());
      box.shape.insert(box.shape.end(), shape.begin() + lead, shape.end());
      boxes.push_back(std::move(box));
    }
    for (size_t d = lead - 1; d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return boxes;
}

std::vector<int64_t> Tensor::blockShape(const layout::Mesh &mesh,
                                        int64_t deviceId) const {
  return layout.blockShape(dims, mesh, blocks, deviceId);
}

std::vector<int64_t> Tensor::blockOffset(const layout::Mesh &mesh,
                                         int64_t deviceId) const {
  return layout.blockOffset(dims, mesh, blocks, deviceId);
}

std::vector<int64_t> Tensor::maxBlockShape(const layout::Mesh &mesh) const {
  return layout.maxBlockShape(dims, mesh, blocks);
}

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Update:
    return "update";
  }
  return "";
}

std::vector<Operand *> Step::outputs() {
  std::vector<Operand *> written;
  if (std::holds_alternative<WaitAttrs>(attrs))
    return written;
  if (auto *fused = std::get_if<FusedAttrs>(&attrs)) {
    for (Operand &out : fused->outs)
      written.push_back(&out);
    return written;
  }
  written.push_back(&out);
  if (auto *attention = std::get_if<AttentionAttrs>(&attrs))
    written.push_back(&attention->lse);
  if (auto *grad = std::get_if<AttentionGradAttrs>(&attrs)) {
    written.push_back(&grad->dk);
    written.push_back(&grad->dv);
  }
  return written;
}

std::vector<const Operand *> Step::outputs() const {
  std::vector<const Operand *> written;
  for (Operand *out : const_cast<Step *>(this)->outputs())
    written.push_back(out);
  return written;
}

std::vector<const Operand *> Step::operands() const {
  std::vector<const Operand *> operands;
  for (const Operand &operand : in)
    operands.push_back(&operand);
  for (const Operand *out : outputs())
    operands.push_back(out);
  if (const auto *reduce = std::get_if<AllReduceAttrs>(&attrs))
    for (const Operand &buffer : reduce->buffers)
      operands.push_back(&buffer);
  auto parts = [&](const std::vector<MovePart> &list) {
    for (const MovePart &part : list) {
      operands.push_back(&part.in);
      operands.push_back(&part.out);
    }
  };
  if (const auto *gather = std::get_if<AllGatherAttrs>(&attrs))
    parts(gather->parts);
  if (const auto *scatter = std::get_if<ReduceScatterAttrs>(&attrs))
    parts(scatter->parts);
  return operands;
}

std::optional<size_t> Step::group() const {
  return std::visit(
      [](const auto &kind) -> std::optional<size_t> {
        if constexpr (std::is_base_of_v<GroupAttrs,
                                        std::decay_t<decltype(kind)>>)
          return kind.group;
        else
          return std::nullopt;
      },
      attrs);
}

const Tensor *Program::findTensor(Role role, const std::string &name) const {
  for (const Tensor &tensor : tensors)
    if (tensor.role == role && tensor.name == name)
      return &tensor;
  return nullptr;
}

std::vector<std::vector<int64_t>>
Program::blockOffsets(int64_t deviceId) const {
  std::vector<std::vector<int64_t>> offsets(stepCount());
  auto note = [&](const Step &step) {
    if (step.op() == OpKind::Dropout) {
      const DropoutAttrs &dropout = step.as<DropoutAttrs>();
      offsets[step.index] = dropout.layout.blockOffset(
          dropout.dims, mesh, dropout.blocks, deviceId);
    } else if (step.op() == OpKind::OneHot) {
      const OneHotAttrs &hot = step.as<OneHotAttrs>();
      offsets[step.index] = hot.layout.blockOffset({{hot.dim, hot.classes}},
                                                   mesh, hot.blocks, deviceId);
    }
  };
  for (const Step &step : steps)
    note(step);
  for (const std::vector<Step> &body : loopBodies)
    for (const Step &step : body)
      note(step);
  return offsets;
}

const Step &Program::step(size_t index) const {
  if (index < steps.size())
    return steps[index];
  if (index < stepCount()) {
    auto [body, position] = bodySteps[index - steps.size()];
    return loopBodies[body][position];
  }
  return training->sync->steps[index - stepCount()];
}

std::string Program::stepLabel(size_t index) const {
  if (index < steps.size())
    return "step " + std::to_string(index);
  if (index >= stepCount())
    return "training.sync";
  auto [body, position] = bodySteps[index - steps.size()];
  // The loop step whose body it is: the one naming that body.
  for (size_t i = 0; i < stepCount(); ++i) {
    const Step &loop = step(i);
    if (loop.op() == OpKind::Loop && loop.as<LoopAttrs>().body == body)
      return stepLabel(i) + " (loop) body step " + std::to_string(position);
  }
  return "body step " + std::to_string(position);
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

bool isAccumulator(const Program &program, const Tensor &tensor) {
  if (tensor.role != Role::Param || !program.training ||
      !program.training->microbatches)
    return false;
  const std::vector<size_t> &sums =
      program.training->microbatches->accumulators;
  return std::find(sums.begin(), sums.end(), tensor.buffer) != sums.end();
}

std::vector<const Tensor *> paramsOf(const Program &program) {
  std::vector<const Tensor *> params;
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Param && !isAccumulator(program, tensor))
      params.push_back(&tensor);
  return params;
}

} // namespace meshc::runtime
