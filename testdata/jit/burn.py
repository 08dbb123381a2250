# SPDX-License-Identifier: Apache-2.0
#
# burn.py SECONDS TRUTH: burn_a and burn_b have identical bodies; the loop
# calls burn_a three times for each call of burn_b, for SECONDS, and writes
# the CPU time spent in each (time.thread_time_ns around each call) to TRUTH
# as "ns_a N" and "ns_b N" lines. Run with -X perf (CPython 3.12+).
import sys
import time


def burn_a(n):
    s = 0.0
    for i in range(n):
        s += i * 1.0001
    return s


def burn_b(n):
    s = 0.0
    for i in range(n):
        s += i * 1.0001
    return s


def main():
    end = time.perf_counter_ns() + int(float(sys.argv[1]) * 1e9)
    ns_a = ns_b = 0
    sink = 0.0
    clock = time.thread_time_ns
    while time.perf_counter_ns() < end:
        for _ in range(3):
            t0 = clock()
            sink += burn_a(20000)
            ns_a += clock() - t0
        t0 = clock()
        sink += burn_b(20000)
        ns_b += clock() - t0
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(f"ns_a {ns_a}\nns_b {ns_b}\nsink {int(sink > 0)}\n")


main()
