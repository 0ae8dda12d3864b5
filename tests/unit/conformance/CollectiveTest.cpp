//===- CollectiveTest.cpp - Collectives and slice against plain loops -----===//
//
// all_reduce, all_gather, reduce_scatter, all_to_all, slice and
// collective_permute on every
// device of a 2x3 mesh (b:2, m:3) of the backend under test, at once, with
// the backend's communicators, against loops over the members of each group
// written here: groups over m, over b and over both; every dtype; sum and
// max; dims cut evenly and into unequal blocks (the variable-count
// collectives of device weights); inner and outer dims; the combined forms
// ("bufs", "parts"); permutations that shift, rotate, swap and keep (a
// member no pair targets keeps its out). Values are small integers, so sums are
// exact in every dtype and whatever order a backend adds them in.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <cmath>
#include <numeric>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

const std::vector<std::string> kAllDtypes = {"f32", "i32", "bf16", "f16"};
const std::vector<std::vector<std::string>> kGroupAxes = {
    {"m"}, {"b"}, {"b", "m"}};

/// The test value of element `i` on device `d`: a small integer.
float value(int64_t d, int64_t i, int64_t salt = 0) {
  return static_cast<float>((d * 7 + i * 3 + salt * 5) % 11) - 5.0f;
}

/// The members of device `d`'s group over `axes` on mesh b:2, m:3 (none:
/// groups of one), in rank order, and `d`'s rank among them.
std::vector<int64_t> membersOf(int64_t d, const std::vector<std::string> &axes,
                               int64_t &rank) {
  int64_t b = d / 3, m = d % 3;
  std::vector<int64_t> members;
  if (axes == std::vector<std::string>{"m"}) {
    members = {3 * b, 3 * b + 1, 3 * b + 2};
    rank = m;
  } else if (axes == std::vector<std::string>{"b"}) {
    members = {m, 3 + m};
    rank = b;
  } else if (axes.empty()) {
    members = {d};
    rank = 0;
  } else {
    members = {0, 1, 2, 3, 4, 5};
    rank = d;
  }
  return members;
}

/// Where block `k` of `blocks` starts.
int64_t offsetOf(const std::vector<int64_t> &blocks, int64_t k) {
  return std::accumulate(blocks.begin(), blocks.begin() + k, int64_t(0));
}

/// Even blocks of `size` over `count` members, or the unequal `uneven`.
std::vector<int64_t> blocksOf(bool even, int64_t size, int64_t count,
                              const std::vector<int64_t> &uneven) {
  return even ? std::vector<int64_t>(size_t(count), size / count) : uneven;
}

/// Unequal blocks for a group of `count` members (some empty).
std::vector<int64_t> unequalBlocks(int64_t count) {
  if (count == 2)
    return {1, 4};
  if (count == 3)
    return {2, 0, 3};
  return {1, 0, 2, 1, 0, 1};
}

TEST_P(Conformance, AllReduce_SumAndMaxInEveryDtypeOverEveryGroup) {
  for (const std::string &dtype : kAllDtypes)
    for (const char *reduction : {"sum", "max"})
      for (const std::vector<std::string> &axes : kGroupAxes)
        for (int64_t count : {1, 7, 1001}) {
          SCOPED_TRACE(dtype + " " + reduction + " over " + json(axes).dump() +
                       " of " + std::to_string(count));
          MeshHarness h = mesh({{"b", 2}, {"m", 3}});
          int64_t buf = h.buffer(dtype, count);
          for (int64_t d = 0; d < h.devices(); ++d) {
            std::vector<float> values(count);
            for (int64_t i = 0; i < count; ++i)
              values[i] = value(d, i);
            h.set(buf, d, values);
          }
          h.run({{"op", "all_reduce"},
                 {"buf", buf},
                 {"axes", axes},
                 {"reduction", reduction}});
          for (int64_t d = 0; d < h.devices(); ++d) {
            int64_t rank;
            std::vector<float> want(count);
            for (int64_t i = 0; i < count; ++i) {
              float acc = std::string(reduction) == "sum" ? 0.0f : -1e9f;
              for (int64_t member : membersOf(d, axes, rank))
                acc = std::string(reduction) == "sum"
                          ? acc + value(member, i)
                          : std::max(acc, value(member, i));
              want[i] = acc;
            }
            ASSERT_EQ(h.get(buf, d), want) << "device " << d;
          }
        }
}

TEST_P(Conformance, AllReduce_CombinedBuffersPackedEndToEnd) {
  for (std::string dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    MeshHarness h = mesh({{"b", 2}, {"m", 3}});
    std::vector<int64_t> counts = {5, 1, 130};
    std::vector<int64_t> bufs;
    for (size_t k = 0; k < counts.size(); ++k) {
      bufs.push_back(h.buffer(dtype, counts[k]));
      for (int64_t d = 0; d < h.devices(); ++d) {
        std::vector<float> values(counts[k]);
        for (int64_t i = 0; i < counts[k]; ++i)
          values[i] = value(d, i, int64_t(k));
        h.set(bufs.back(), d, values);
      }
    }
    h.run({{"op", "all_reduce"},
           {"bufs", bufs},
           {"axes", {"m"}},
           {"reduction", "sum"}});
    for (int64_t d = 0; d < h.devices(); ++d)
      for (size_t k = 0; k < counts.size(); ++k) {
        int64_t rank;
        std::vector<float> want(counts[k], 0.0f);
        for (int64_t member : membersOf(d, {"m"}, rank))
          for (int64_t i = 0; i < counts[k]; ++i)
            want[i] += value(member, i, int64_t(k));
        ASSERT_EQ(h.get(bufs[k], d), want)
            << "device " << d << ", buffer " << k;
      }
  }
}

/// Two started collectives (a combined all_reduce, which packs in its own
/// scratch, and a collective_permute), a step between them and their
/// wait that uses other buffers (and the scratch, as every staged bf16
/// step does), then the wait: the results are the blocking ones.
TEST_P(Conformance, Wait_StartedCollectivesEndAsBlockingOnes) {
  for (std::string dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    MeshHarness h = mesh({{"b", 2}, {"m", 3}});
    int64_t a = h.buffer(dtype, 7), b = h.buffer(dtype, 130);
    int64_t in = h.buffer(dtype, 9), out = h.buffer(dtype, 9);
    int64_t x = h.buffer(dtype, 33), y = h.buffer(dtype, 33);
    for (int64_t d = 0; d < h.devices(); ++d) {
      auto fill = [&](int64_t buf, int64_t count, int64_t salt) {
        std::vector<float> values(count);
        for (int64_t i = 0; i < count; ++i)
          values[i] = value(d, i, salt);
        h.set(buf, d, values);
      };
      fill(a, 7, 0);
      fill(b, 130, 1);
      fill(in, 9, 2);
      fill(x, 33, 3);
    }
    h.run(json::array({{{"op", "all_reduce"},
                        {"bufs", {a, b}},
                        {"axes", {"m"}},
                        {"reduction", "sum"},
                        {"start", 0}},
                       {{"op", "collective_permute"},
                        {"in", in},
                        {"out", out},
                        {"axes", {"b"}},
                        {"pairs", {{0, 1}, {1, 0}}},
                        {"start", 1}},
                       {{"op", "unary"}, {"fn", "exp"}, {"in", x}, {"out", y}},
                       {{"op", "wait"}, {"tickets", {1, 0}}}}));
    for (int64_t d = 0; d < h.devices(); ++d) {
      int64_t rank;
      std::vector<float> wantA(7, 0.0f), wantB(130, 0.0f);
      for (int64_t member : membersOf(d, {"m"}, rank)) {
        for (int64_t i = 0; i < 7; ++i)
          wantA[i] += value(member, i, 0);
        for (int64_t i = 0; i < 130; ++i)
          wantB[i] += value(member, i, 1);
      }
      ASSERT_EQ(h.get(a, d), wantA) << "device " << d;
      ASSERT_EQ(h.get(b, d), wantB) << "device " << d;
      int64_t other = (d + 3) % 6; // its partner over b
      std::vector<float> wantOut(9), wantY(33);
      for (int64_t i = 0; i < 9; ++i)
        wantOut[i] = value(other, i, 2);
      ASSERT_EQ(h.get(out, d), wantOut) << "device " << d;
      std::vector<float> got = h.get(y, d);
      for (int64_t i = 0; i < 33; ++i)
        ASSERT_NEAR(got[i], std::exp(value(d, i, 3)),
                    storedTolerance(dtype) * std::exp(value(d, i, 3)))
            << "device " << d << " element " << i;
    }
  }
}

/// x[r, c] of member `rank` for the gathering cases: its block of c.
float blockValue(int64_t rank, int64_t r, int64_t c) {
  return value(rank, r * 10 + c);
}

/// all_gather of dim `dim` (r, outer, or c, inner) of x[r, c], R = 2 rows
/// and C columns joined, evenly or in unequal blocks.
TEST_P(Conformance, AllGather_InnerAndOuterDimsEvenAndUnequal) {
  for (const std::string &dtype : kAllDtypes)
    for (const std::vector<std::string> &axes : kGroupAxes)
      for (const char *dim : {"r", "c"})
        for (bool even : {true, false}) {
          SCOPED_TRACE(dtype + " over " + json(axes).dump() + " dim " + dim +
                       (even ? " even" : " unequal"));
          MeshHarness h = mesh({{"b", 2}, {"m", 3}});
          int64_t rank0;
          int64_t G = int64_t(membersOf(0, axes, rank0).size());
          std::vector<int64_t> blocks =
              blocksOf(even, 2 * G, G, unequalBlocks(G));
          int64_t joined = offsetOf(blocks, G);
          bool outer = std::string(dim) == "r";
          // Sizes of out: the joined dim and the other (3).
          int64_t R = outer ? joined : 3, C = outer ? 3 : joined;
          int64_t in = h.buffer(dtype, R * C), out = h.buffer(dtype, R * C);
          for (int64_t d = 0; d < h.devices(); ++d) {
            int64_t rank;
            membersOf(d, axes, rank);
            int64_t own = blocks[size_t(rank)];
            int64_t rows = outer ? own : R, cols = outer ? C : own;
            std::vector<float> values;
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t c = 0; c < cols; ++c)
                values.push_back(blockValue(d, r, c));
            h.set(in, d, values);
          }
          json step = {{"op", "all_gather"},
                       {"in", operand(in, {"r", "c"})},
                       {"out", operand(out, {"r", "c"})},
                       {"dim", dim},
                       {"axes", axes},
                       {"sizes", {{"r", R}, {"c", C}}}};
          if (!even)
            step["blocks"] = blocks;
          h.run(step);
          for (int64_t d = 0; d < h.devices(); ++d) {
            int64_t rank;
            std::vector<int64_t> members = membersOf(d, axes, rank);
            std::vector<float> want;
            for (int64_t r = 0; r < R; ++r)
              for (int64_t c = 0; c < C; ++c) {
                int64_t at = outer ? r : c, k = 0;
                while (at >= offsetOf(blocks, k + 1))
                  ++k;
                int64_t local = at - offsetOf(blocks, k);
                want.push_back(outer ? blockValue(members[k], local, c)
                                     : blockValue(members[k], r, local));
              }
            ASSERT_EQ(h.get(out, d), want) << "device " << d;
          }
        }
}

/// reduce_scatter of dim c of x[r, c] (or slice, which keeps block `rank`
/// of the device's own x without reducing).
void expectScatter(MeshHarness &h, const std::string &op,
                   const std::string &dtype,
                   const std::vector<std::string> &axes, const char *dim,
                   const char *reduction, bool even) {
  int64_t rank0;
  int64_t G = int64_t(membersOf(0, axes, rank0).size());
  std::vector<int64_t> blocks = blocksOf(even, 2 * G, G, unequalBlocks(G));
  int64_t cut = offsetOf(blocks, G);
  bool outer = std::string(dim) == "r";
  int64_t R = outer ? cut : 3, C = outer ? 3 : cut;
  int64_t in = h.buffer(dtype, R * C), out = h.buffer(dtype, R * C);
  for (int64_t d = 0; d < h.devices(); ++d) {
    std::vector<float> values;
    for (int64_t i = 0; i < R * C; ++i)
      values.push_back(value(d, i));
    h.set(in, d, values);
  }
  json step = {{"op", op},
               {"in", operand(in, {"r", "c"})},
               {"out", operand(out, {"r", "c"})},
               {"dim", dim},
               {"axes", axes},
               {"sizes", {{"r", R}, {"c", C}}}};
  if (op == "reduce_scatter")
    step["reduction"] = reduction;
  if (!even)
    step["blocks"] = blocks;
  h.run(step);
  for (int64_t d = 0; d < h.devices(); ++d) {
    int64_t rank;
    std::vector<int64_t> members = membersOf(d, axes, rank);
    if (op == "slice")
      members = {d};
    int64_t own = blocks[size_t(rank)], from = offsetOf(blocks, rank);
    int64_t rows = outer ? own : R, cols = outer ? C : own;
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = outer ? (from + r) * C + c : r * C + from + c;
        float acc = std::string(reduction) == "sum" ? 0.0f : -1e9f;
        for (int64_t member : members)
          acc = std::string(reduction) == "sum"
                    ? acc + value(member, i)
                    : std::max(acc, value(member, i));
        want.push_back(acc);
      }
    std::vector<float> got = h.get(out, d);
    got.resize(want.size());
    ASSERT_EQ(got, want) << "device " << d;
  }
}

TEST_P(Conformance, ReduceScatter_SumAndMaxEvenAndUnequal) {
  for (const std::string &dtype : kAllDtypes)
    for (const char *reduction : {"sum", "max"})
      for (const std::vector<std::string> &axes : kGroupAxes)
        for (const char *dim : {"r", "c"})
          for (bool even : {true, false}) {
            SCOPED_TRACE(dtype + " " + reduction + " over " +
                         json(axes).dump() + " dim " + dim +
                         (even ? " even" : " unequal"));
            MeshHarness h = mesh({{"b", 2}, {"m", 3}});
            expectScatter(h, "reduce_scatter", dtype, axes, dim, reduction,
                          even);
          }
}

TEST_P(Conformance, Slice_KeepsTheRanksBlockEvenAndUnequal) {
  for (const std::string &dtype : kAllDtypes)
    for (const std::vector<std::string> &axes : kGroupAxes)
      for (const char *dim : {"r", "c"})
        for (bool even : {true, false}) {
          SCOPED_TRACE(dtype + " over " + json(axes).dump() + " dim " + dim +
                       (even ? " even" : " unequal"));
          MeshHarness h = mesh({{"b", 2}, {"m", 3}});
          expectScatter(h, "slice", dtype, axes, dim, "sum", even);
        }
}

/// all_to_all of x[s, c]: s (whole on every member) is cut, c (each
/// member's block) joined, evenly or in unequal blocks of both.
TEST_P(Conformance, AllToAll_EvenAndUnequalBlocks) {
  for (const std::string &dtype : kAllDtypes)
    for (const std::vector<std::string> &axes : kGroupAxes)
      for (bool even : {true, false})
        for (bool splitOuter : {true, false}) {
          SCOPED_TRACE(dtype + " over " + json(axes).dump() +
                       (even ? " even" : " unequal") +
                       (splitOuter ? " split outer" : " split inner"));
          MeshHarness h = mesh({{"b", 2}, {"m", 3}});
          int64_t rank0;
          int64_t G = int64_t(membersOf(0, axes, rank0).size());
          std::vector<int64_t> split =
              blocksOf(even, 2 * G, G, unequalBlocks(G));
          std::vector<int64_t> concat =
              even ? std::vector<int64_t>(size_t(G), 2)
                   : std::vector<int64_t>(split.rbegin(), split.rend());
          int64_t S = offsetOf(split, G), joined = offsetOf(concat, G);
          // x[s, c] row-major when the split dim is outer, x[c, s] else.
          std::vector<std::string> dims =
              splitOuter ? std::vector<std::string>{"s", "c"}
                         : std::vector<std::string>{"c", "s"};
          int64_t in = h.buffer(dtype, S * joined),
                  out = h.buffer(dtype, S * joined);
          auto inValue = [&](int64_t member, int64_t s, int64_t c) {
            return value(member, s * 10 + c);
          };
          json sizesByDevice = json::array();
          for (int64_t d = 0; d < h.devices(); ++d) {
            int64_t rank;
            membersOf(d, axes, rank);
            int64_t own = concat[size_t(rank)];
            std::vector<float> values;
            for (int64_t i = 0; i < S * own; ++i) {
              int64_t s = splitOuter ? i / own : i % S,
                      c = splitOuter ? i % own : i / S;
              values.push_back(inValue(d, s, c));
            }
            h.set(in, d, values);
          }
          json step = {{"op", "all_to_all"},
                       {"in", operand(in, dims)},
                       {"out", operand(out, dims)},
                       {"split_dim", "s"},
                       {"concat_dim", "c"},
                       {"axes", axes},
                       {"sizes", {{"s", S}, {"c", 2}}}};
          if (!even) {
            // This device's c is its own block: a per-device size, one
            // block per shard over the group's axes.
            step["sizes"]["c"] = {{"axes", axes}, {"blocks", concat}};
            step["split_blocks"] = split;
            step["concat_blocks"] = concat;
            step["concat_size"] = joined;
          }
          h.run(step);
          for (int64_t d = 0; d < h.devices(); ++d) {
            int64_t rank;
            std::vector<int64_t> members = membersOf(d, axes, rank);
            int64_t own = split[size_t(rank)], from = offsetOf(split, rank);
            std::vector<float> want(size_t(own * joined));
            for (int64_t s = 0; s < own; ++s)
              for (int64_t c = 0; c < joined; ++c) {
                int64_t k = 0;
                while (c >= offsetOf(concat, k + 1))
                  ++k;
                float v =
                    inValue(members[k], from + s, c - offsetOf(concat, k));
                want[size_t(splitOuter ? s * joined + c : c * own + s)] = v;
              }
            std::vector<float> got = h.get(out, d);
            got.resize(want.size());
            ASSERT_EQ(got, want) << "device " << d;
          }
        }
}

/// Combined all_gather and reduce_scatter: two tensors in "parts", one
/// joined along its inner dim, one along its outer.
TEST_P(Conformance, AllGather_CombinedParts) {
  MeshHarness h = mesh({{"b", 2}, {"m", 3}});
  int64_t a = h.buffer("f32", 2), bigA = h.buffer("f32", 6),
          b = h.buffer("f32", 4), bigB = h.buffer("f32", 12);
  for (int64_t d = 0; d < h.devices(); ++d) {
    h.set(a, d, {value(d, 0), value(d, 1)}); // a[c] block of 2
    h.set(b, d, {value(d, 2), value(d, 3), value(d, 4), value(d, 5)});
  }
  h.run({{"op", "all_gather"},
         {"axes", {"m"}},
         {"parts",
          {{{"in", operand(a, {"c"})},
            {"out", operand(bigA, {"c"})},
            {"dim", "c"},
            {"sizes", {{"c", 6}}}},
           {{"in", operand(b, {"r", "c"})},
            {"out", operand(bigB, {"r", "c"})},
            {"dim", "c"},
            {"sizes", {{"r", 2}, {"c", 6}}}}}}});
  for (int64_t d = 0; d < h.devices(); ++d) {
    int64_t rank;
    std::vector<int64_t> members = membersOf(d, {"m"}, rank);
    std::vector<float> wantA, wantB;
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t i = 0; i < 2; ++i)
        wantA.push_back(value(members[k], i));
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t c = 0; c < 2; ++c)
          wantB.push_back(value(members[k], 2 + r * 2 + c));
    ASSERT_EQ(h.get(bigA, d), wantA) << "device " << d;
    ASSERT_EQ(h.get(bigB, d), wantB) << "device " << d;
  }
}

TEST_P(Conformance, ReduceScatter_CombinedParts) {
  MeshHarness h = mesh({{"b", 2}, {"m", 3}});
  int64_t a = h.buffer("i32", 6), smallA = h.buffer("i32", 3),
          b = h.buffer("i32", 12), smallB = h.buffer("i32", 6);
  for (int64_t d = 0; d < h.devices(); ++d) {
    std::vector<float> va, vb;
    for (int64_t i = 0; i < 6; ++i)
      va.push_back(value(d, i));
    for (int64_t i = 0; i < 12; ++i)
      vb.push_back(value(d, i, 1));
    h.set(a, d, va);
    h.set(b, d, vb);
  }
  h.run({{"op", "reduce_scatter"},
         {"axes", {"b"}},
         {"reduction", "sum"},
         {"parts",
          {{{"in", operand(a, {"c"})},
            {"out", operand(smallA, {"c"})},
            {"dim", "c"},
            {"sizes", {{"c", 6}}}},
           {{"in", operand(b, {"r", "c"})},
            {"out", operand(smallB, {"r", "c"})},
            {"dim", "r"},
            {"sizes", {{"r", 4}, {"c", 3}}}}}}});
  for (int64_t d = 0; d < h.devices(); ++d) {
    int64_t rank;
    std::vector<int64_t> members = membersOf(d, {"b"}, rank);
    std::vector<float> wantA(3, 0.0f), wantB(6, 0.0f);
    for (int64_t member : members) {
      for (int64_t i = 0; i < 3; ++i)
        wantA[i] += value(member, rank * 3 + i);
      for (int64_t i = 0; i < 6; ++i)
        wantB[i] += value(member, rank * 6 + i, 1);
    }
    ASSERT_EQ(h.get(smallA, d), wantA) << "device " << d;
    ASSERT_EQ(h.get(smallB, d), wantB) << "device " << d;
  }
}

/// collective_permute: each pair's source sends its whole in to its
/// target's out; a member no pair targets keeps its out.
TEST_P(Conformance, CollectivePermute_ShiftsRotationsSwapsAndSelf) {
  struct Case {
    std::vector<std::string> axes;
    std::vector<std::pair<int64_t, int64_t>> pairs;
  };
  const std::vector<Case> cases = {
      {{"m"}, {{0, 1}, {1, 2}}},                       // a pipeline shift
      {{"m"}, {{2, 1}, {1, 0}}},                       // and back
      {{"m"}, {{0, 1}, {1, 2}, {2, 0}}},               // a rotation
      {{"b"}, {{0, 1}, {1, 0}}},                       // a swap
      {{"m"}, {{1, 1}}},                               // to itself
      {{}, {{0, 0}}},                                  // groups of one
      {{"b", "m"}, {{0, 5}, {5, 3}, {3, 1}, {1, 2}}}}; // over both axes
  for (std::string dtype : {"f32", "i32", "bf16", "f16"})
    for (const Case &c : cases)
      for (int64_t count : {1, 1001}) {
        SCOPED_TRACE(dtype + " over " + json(c.axes).dump() + " pairs " +
                     json(c.pairs).dump() + " of " + std::to_string(count));
        MeshHarness h = mesh({{"b", 2}, {"m", 3}});
        int64_t in = h.buffer(dtype, count), out = h.buffer(dtype, count);
        for (int64_t d = 0; d < h.devices(); ++d) {
          std::vector<float> mine(count), kept(count);
          for (int64_t i = 0; i < count; ++i) {
            mine[i] = value(d, i);
            kept[i] = value(d, i, 1);
          }
          h.set(in, d, mine);
          h.set(out, d, kept);
        }
        h.run({{"op", "collective_permute"},
               {"in", in},
               {"out", out},
               {"axes", c.axes},
               {"pairs", c.pairs}});
        for (int64_t d = 0; d < h.devices(); ++d) {
          int64_t rank;
          std::vector<int64_t> members = membersOf(d, c.axes, rank);
          // From the source whose target is this member, else kept.
          int64_t from = -1;
          for (auto [source, target] : c.pairs)
            if (target == rank)
              from = members[size_t(source)];
          std::vector<float> want(count);
          for (int64_t i = 0; i < count; ++i)
            want[i] = from >= 0 ? value(from, i) : value(d, i, 1);
          ASSERT_EQ(h.get(out, d), want) << "device " << d;
          std::vector<float> mine(count);
          for (int64_t i = 0; i < count; ++i)
            mine[i] = value(d, i);
          ASSERT_EQ(h.get(in, d), mine) << "device " << d << " in";
        }
      }
}

} // namespace
