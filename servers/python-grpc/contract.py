"""The workload contract's data, re-implemented byte for byte from internal/contract (Go).

Every server must return identical bytes, so these two functions follow the Go ones exactly;
internal/servertest's tests compare their output with the Go functions'.
"""

PATTERN = b"protobench-payload-0123456789abcdefghijklmnopqrstuvwxyz\n"


def payload(n):
    """Return n deterministic bytes: contract.Payload(n)."""
    reps = n // len(PATTERN) + 1
    return (PATTERN * reps)[:n]


def user_by_id(user_id):
    """Return (id, name, email, age) as contract.UserByID(id) computes them.

    Go computes the age as 18 + uint64(id) % 63: a negative id wraps to its two's-complement
    unsigned value, which is id mod 2**64 here.
    """
    name = "user-%d" % user_id
    return user_id, name, name + "@example.com", 18 + (user_id % (1 << 64)) % 63
