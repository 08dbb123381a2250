# SPDX-License-Identifier: Apache-2.0
#
# timed.py SECONDS [TRUTH]: calls work (a loop of 2,000 additions) and a
# recursion of depth 3 whose every level calls work (500 additions), for
# SECONDS; work measures its own time per call with time.perf_counter_ns
# (first and last statement) and the program prints, and writes to TRUTH,
# "calls=N inner_mean_ns=X". A generator and a namesake work in another
# module's file are not timed as work of this file.
import sys
import time

total = 0
calls = 0


def work(n):
    global total, calls
    t0 = time.perf_counter_ns()
    s = 0
    for i in range(n):
        s += i
    total += time.perf_counter_ns() - t0
    calls += 1
    return s


def rec(depth):
    if depth > 0:
        rec(depth - 1)
    return work(500)


def gen(n):
    for i in range(n):
        yield i


def main():
    end = time.perf_counter_ns() + int(float(sys.argv[1]) * 1e9)
    while time.perf_counter_ns() < end:
        work(2000)
        rec(3)
        sum(gen(10))
    line = f"calls={calls} inner_mean_ns={total / calls:.1f}"
    print(line)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(line + "\n")


main()
