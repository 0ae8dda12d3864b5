//===- Attention.cpp - The geometry of attention steps --------------------===//
//
// Roles from named shapes, their checks, and the offset tables.
//
//===----------------------------------------------------------------------===//

#include "runtime/Attention.h"

#include "runtime/Error.h"
#include "runtime/Program.h"

#include <algorithm>

namespace meshc::runtime {

namespace {

bool contains(const std::vector<std::string> &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// The names of `shape` that are not in any of `skip`, in its order.
std::vector<std::string>
namesBut(const NamedShape &shape,
         std::initializer_list<const std::vector<std::string> *> skip) {
  std::vector<std::string> names;
  for (const std::string &name : shape.names)
    if (std::none_of(skip.begin(), skip.end(),
                     [&](const std::vector<std::string> *list) {
                       return contains(*list, name);
                     }))
      names.push_back(name);
  return names;
}

/// The roles of each operand.
constexpr bool kIndexes[kAttentionOperands][kAttentionRoles] = {
    // G, M, N, D, E
    {true, true, false, true, false},  // q
    {true, false, true, true, false},  // k
    {true, false, true, false, true},  // v
    {true, true, true, false, false},  // bias
    {true, true, false, false, true},  // o
    {true, true, false, false, false}, // lse
    {true, true, false, false, true},  // dout
    {true, true, false, true, false},  // dq
    {true, false, true, true, false},  // dk
    {true, false, true, false, true},  // dv
};

} // namespace

const char *attentionOperandName(AttentionOperand operand) {
  static const char *const names[kAttentionOperands] = {
      "q", "k", "v", "bias", "o", "lse", "dout", "dq", "dk", "dv"};
  return names[operand];
}

bool attentionIndexes(AttentionOperand operand, AttentionRole role) {
  return kIndexes[operand][role];
}

AttentionGeometry::AttentionGeometry() {
  for (auto &row : start)
    row.fill(-1);
  for (auto &row : stride)
    row.fill(-1);
}

std::optional<AttentionIssue>
planAttention(const std::array<const NamedShape *, kAttentionOperands> &shapes,
              const std::string &key, const std::vector<std::string> &head,
              AttentionGeometry &geometry) {
  auto operandIssue = [](AttentionOperand operand, std::string message) {
    AttentionIssue issue;
    issue.operand = operand;
    issue.message = std::move(message);
    return issue;
  };
  auto attrIssue = [](const char *attr, int index, std::string message) {
    AttentionIssue issue;
    issue.attr = attr;
    issue.index = index;
    issue.message = std::move(message);
    return issue;
  };
  const NamedShape &q = *shapes[kQ], &k = *shapes[kK], &v = *shapes[kV];
  if (!k.has(key))
    return attrIssue("key", -1,
                     "key dim '" + key + "' is not a dim of k " + k.str());
  for (size_t i = 0; i < head.size(); ++i) {
    const std::string &name = head[i];
    int at = static_cast<int>(i);
    if (std::find(head.begin(), head.begin() + i, name) != head.begin() + i)
      return attrIssue("head", at, "head dim '" + name + "' is listed twice");
    if (name == key)
      return attrIssue("head", at,
                       "'" + name +
                           "' is the key dim; the head dims are the dims q "
                           "and k contract");
    if (!q.has(name))
      return attrIssue("head", at,
                       "head dim '" + name + "' is not a dim of q " + q.str());
    if (!k.has(name))
      return attrIssue("head", at,
                       "head dim '" + name + "' is not a dim of k " + k.str());
  }
  if (q.has(key))
    return operandIssue(kQ, "q " + q.str() + " has the key dim '" + key + "'");
  const std::vector<std::string> keyDims = {key};
  std::vector<std::string> group = namesBut(k, {&keyDims, &head});
  for (const std::string &name : group)
    if (!q.has(name))
      return operandIssue(kQ, "q " + q.str() + " lacks the group dim '" + name +
                                  "' (a dim of k that is neither the key "
                                  "nor a head dim)");
  std::vector<std::string> query = namesBut(q, {&group, &head});
  if (!v.has(key))
    return operandIssue(kV,
                        "v " + v.str() + " lacks the key dim '" + key + "'");
  for (const std::string &name : group)
    if (!v.has(name))
      return operandIssue(kV, "v " + v.str() + " lacks the group dim '" + name +
                                  "'");
  std::vector<std::string> value = namesBut(v, {&group, &keyDims});
  for (const std::string &name : value)
    if (contains(query, name))
      return operandIssue(
          kV, "v's value dim '" + name + "' is a query dim of q " + q.str() +
                  "; the value dims (v's dims but the group and key dims) "
                  "and the query dims (q's but the group and head dims) "
                  "differ");
  // The operands whose dims are fixed by the roles.
  auto join =
      [](std::initializer_list<const std::vector<std::string> *> parts) {
        std::vector<std::string> names;
        for (const std::vector<std::string> *part : parts)
          names.insert(names.end(), part->begin(), part->end());
        return names;
      };
  std::vector<std::string> rows = join({&group, &query, &value});
  std::vector<std::string> lse = join({&group, &query});
  struct Expected {
    AttentionOperand operand;
    std::vector<std::string> names;
    std::string what;
  };
  const Expected expected[] = {
      {kO, rows, "the group, query and value dims"},
      {kLse, lse, "the group and query dims"},
      {kDOut, rows, "the group, query and value dims"},
      {kDQ, q.names, "the dims of q"},
      {kDK, k.names, "the dims of k"},
      {kDV, v.names, "the dims of v"},
  };
  for (const Expected &want : expected) {
    const NamedShape *shape = shapes[want.operand];
    if (!shape)
      continue;
    bool same = shape->names.size() == want.names.size();
    for (const std::string &name : shape->names)
      same = same && contains(want.names, name);
    if (!same)
      return operandIssue(
          want.operand, std::string(attentionOperandName(want.operand)) + " " +
                            shape->str() + " must have exactly " + want.what +
                            " " + quoted(want.names) + " (in any order)");
  }
  if (const NamedShape *bias = shapes[kBias])
    for (const std::string &name : bias->names)
      if (name != key && !contains(group, name) && !contains(query, name))
        return operandIssue(kBias,
                            "bias dim '" + name + "' of bias " + bias->str() +
                                " is not a group, query or key dim (bias is "
                                "broadcast along the ones it lacks)");

  // The roles' dims and sizes, from the operands that define them.
  geometry = AttentionGeometry();
  geometry.dims = {group, query, keyDims, head, value};
  const NamedShape *definers[kAttentionRoles] = {&k, &q, &k, &q, &v};
  auto overflow = [&] {
    return attrIssue("sizes", -1,
                     "the sizes of the attention step are too large: its "
                     "offset tables or working memory overflow 64 bits");
  };
  for (int role = 0; role < kAttentionRoles; ++role) {
    int64_t size = 1;
    for (const std::string &name : geometry.dims[role]) {
      int64_t dim = definers[role]->sizes[definers[role]->position(name)];
      geometry.dimSizes[role].push_back(dim);
      if (__builtin_mul_overflow(size, dim, &size))
        return overflow();
    }
    geometry.size[role] = size;
  }
  for (int operand = 0; operand < kAttentionOperands; ++operand) {
    const NamedShape *shape = shapes[operand];
    if (!shape)
      continue;
    // Row-major strides of the operand's own dims.
    std::vector<int64_t> strides(shape->names.size());
    int64_t stride = 1;
    for (size_t d = shape->names.size(); d-- > 0;) {
      strides[d] = stride;
      if (__builtin_mul_overflow(stride, shape->sizes[d], &stride))
        return overflow();
    }
    for (int role = 0; role < kAttentionRoles; ++role) {
      if (!kIndexes[operand][role])
        continue;
      const std::vector<std::string> &dims = geometry.dims[role];
      std::vector<int64_t> &steps = geometry.steps[operand][role];
      steps.assign(dims.size(), 0);
      for (size_t d = 0; d < dims.size(); ++d)
        if (int at = shape->position(dims[d]); at >= 0)
          steps[d] = strides[size_t(at)];
      geometry.start[operand][role] = geometry.tableEntries;
      if (__builtin_add_overflow(geometry.tableEntries, geometry.size[role],
                                 &geometry.tableEntries))
        return overflow();
      // Entry i is sum(index_d * steps[d]) with i = sum(index_d * inner_d):
      // i * s exactly when steps[d] = s * inner_d along every dim of more
      // than one index.
      int64_t affine = -2, inner = 1;
      const std::vector<int64_t> &sizes = geometry.dimSizes[role];
      for (size_t d = dims.size(); d-- > 0 && affine != -1;) {
        if (sizes[d] <= 1)
          continue;
        int64_t expected = 0;
        if (affine == -2)
          affine = steps[d] % inner == 0 ? steps[d] / inner : -1;
        else if (__builtin_mul_overflow(affine, inner, &expected) ||
                 steps[d] != expected)
          affine = -1;
        inner *= sizes[d];
      }
      geometry.stride[operand][role] =
          affine == -2 || geometry.size[role] <= 1 ? 0 : affine;
    }
  }
  if (attentionScratchBytes(geometry, /*grad=*/shapes[kDQ] != nullptr) < 0)
    return overflow();
  return std::nullopt;
}

void AttentionGeometry::fillTables(int64_t *tables) const {
  for (int operand = 0; operand < kAttentionOperands; ++operand)
    for (int role = 0; role < kAttentionRoles; ++role) {
      if (start[operand][role] < 0)
        continue;
      const std::vector<int64_t> &sizes = dimSizes[role];
      const std::vector<int64_t> &step = steps[operand][role];
      int64_t *table = tables + start[operand][role];
      std::vector<int64_t> index(sizes.size(), 0);
      int64_t offset = 0;
      for (int64_t i = 0; i < size[role]; ++i) {
        table[i] = offset;
        // The next index, row-major.
        for (size_t d = sizes.size(); d-- > 0;) {
          offset += step[d];
          if (++index[d] < sizes[d])
            break;
          offset -= step[d] * index[d];
          index[d] = 0;
        }
      }
    }
}

AttentionWork attentionWork(const AttentionGeometry &geometry, bool grad) {
  const int64_t M = geometry.size[kQueryRole], N = geometry.size[kKeyRole],
                D = geometry.size[kHeadRole], E = geometry.size[kValueRole];
  AttentionWork work;
  work.queryBlock = std::clamp<int64_t>(M, 1, kAttentionQueryBlock);
  work.keyBlock = std::clamp<int64_t>(N, 1, kAttentionKeyBlock);
  const int64_t bm = work.queryBlock, bn = work.keyBlock;
  int64_t end = 0;
  bool overflow = false;
  // A part of rows x cols floats, from a 64-byte line.
  auto part = [&](int64_t rows, int64_t cols) {
    int64_t at = end, floats = 0;
    overflow = overflow || __builtin_mul_overflow(rows, cols, &floats) ||
               __builtin_add_overflow(floats, 15, &floats) ||
               __builtin_add_overflow(end, floats / 16 * 16, &end);
    return at;
  };
  work.q = part(bm, D);
  work.k = part(bn, D);
  work.v = part(bn, E);
  work.o = part(bm, E);
  work.scores = part(bm, bn);
  work.rowsA = part(bm, 1);
  work.rowsB = part(bm, 1);
  if (grad) {
    work.dout = part(bm, E);
    work.dscores = part(bm, bn);
    work.dk = part(bn, D);
    work.dv = part(bn, E);
    work.dq = part(std::max(M, bm), D);
  }
  work.total = overflow ? -1 : end;
  return work;
}

int64_t attentionWorkFloats(const AttentionGeometry &geometry, bool grad) {
  return attentionWork(geometry, grad).total;
}

int64_t attentionTableBytes(const AttentionGeometry &geometry) {
  return (geometry.tableEntries * int64_t(sizeof(int64_t)) + 63) / 64 * 64;
}

int64_t attentionScratchBytes(const AttentionGeometry &geometry, bool grad) {
  int64_t floats = attentionWorkFloats(geometry, grad), bytes = 0, tables = 0;
  // The tables' bytes, rounded up to a line, without overflowing.
  if (floats < 0 ||
      __builtin_mul_overflow(geometry.tableEntries, int64_t(sizeof(int64_t)),
                             &tables) ||
      __builtin_add_overflow(tables, 63, &tables) ||
      __builtin_mul_overflow(floats, int64_t(sizeof(float)), &bytes) ||
      __builtin_add_overflow(bytes, tables / 64 * 64, &bytes))
    return -1;
  return bytes;
}

} // namespace meshc::runtime
