"""HyperLogLog registers for ``hyperloglog(x)`` in windows (TDengine SQL manual, HYPERLOGLOG:
"an estimated cardinality with a standard error of 0.81%").

A window's state stays an exact count of its distinct values (``engine/extended.py``) up to
``EXACT_MAX`` of them, then becomes ``M`` = 2^14 one-byte registers (16 KiB, the size TDengine's
and Redis's HLL use for a 0.81 % standard error), merged by taking the maximum per register. The
estimate is Ertl's improved estimator (the one Redis's ``hllCount`` uses): exact up to
``EXACT_MAX`` distinct values, within about 1 % above.

Values hash with splitmix64 of their 64-bit pattern (numbers and booleans; integers as int64,
floats as their IEEE bits) or BLAKE2b (text), so a value hashes alike in every micro-batch and
process.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

P = 14
M = 1 << P
Q = 64 - P
EXACT_MAX = 4096
_ALPHA_INF = 0.5 / math.log(2.0)


def hashes(values: np.ndarray) -> np.ndarray:
    """uint64 hashes of distinct values (a numeric, boolean or object-of-text array)."""
    if values.dtype == object:
        return np.array(
            [
                int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=8).digest(), "little")
                for v in values
            ],
            np.uint64,
        )
    bits = (
        values.astype(np.float64).view(np.uint64)
        if values.dtype.kind == "f"
        else values.astype(np.int64).view(np.uint64)
    )
    z = bits + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def registers(values: np.ndarray) -> np.ndarray:
    """The 2^14 registers (uint8) of a set of distinct values."""
    h = hashes(values)
    idx = (h >> np.uint64(Q)).astype(np.int64)
    rest = h & np.uint64((1 << Q) - 1)
    # rank = leading zeros of the Q low bits + 1 (Q + 1 when they are all zero)
    exp = np.frexp(rest.astype(np.float64))[1]  # floor(log2(rest)) + 1, exact below 2^53
    rank = np.where(rest > 0, Q - exp + 1, Q + 1).astype(np.uint8)
    reg = np.zeros(M, np.uint8)
    np.maximum.at(reg, idx, rank)
    return reg


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        prev = z
        z += x * y
        y += y
        if z == prev:
            return z


def _tau(x: float) -> float:
    if x in (0.0, 1.0):
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        prev = z
        y *= 0.5
        z -= (1.0 - x) ** 2 * y
        if z == prev:
            return z / 3.0


def estimate(reg: np.ndarray) -> int:
    """Ertl's improved HyperLogLog estimate of the registers' cardinality."""
    c = np.bincount(reg, minlength=Q + 2).astype(np.float64)
    z = M * _tau((M - c[Q + 1]) / M)
    for k in range(Q, 0, -1):
        z = 0.5 * (z + c[k])
    z += M * _sigma(c[0] / M)
    return round(_ALPHA_INF * M * M / z)
