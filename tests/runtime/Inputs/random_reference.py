# The .mprog random generator (docs/mprog.md, "Random values") transcribed
# from the formulas, independently of runtime/core/Random.cpp.
import math

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def key(seed, name):
    return splitmix64(seed ^ fnv1a64(name))


def uniform(k, i, j):
    return (splitmix64((k + (2 * i + j) * GOLDEN) & MASK) >> 11) * 2.0**-53


def normal(seed, name, count, mean=0.0, std=1.0):
    k = key(seed, name)
    return [mean + std * math.sqrt(-2.0 * math.log(1.0 - uniform(k, i, 0)))
            * math.cos(2.0 * math.pi * uniform(k, i, 1)) for i in range(count)]


def uniform_int(seed, name, count, lo, hi):
    k = key(seed, name)
    return [min(lo + math.floor(uniform(k, i, 0) * (hi - lo)), hi - 1)
            for i in range(count)]


def run_key(seed, name, run):
    return splitmix64((key(seed, name) + run) & MASK)


def dropout_scale(seed, name, run, count, rate):
    k = run_key(seed, name, run)
    return [1.0 / (1.0 - rate) if uniform(k, i, 0) >= rate else 0.0
            for i in range(count)]


def epoch_permutation(seed, epoch, n):
    k = run_key(seed, "shuffle", epoch)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = min(math.floor(uniform(k, i, 0) * (i + 1)), i)
        order[i], order[j] = order[j], order[i]
    return order
