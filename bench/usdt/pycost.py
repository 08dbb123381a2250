# SPDX-License-Identifier: Apache-2.0
#
# pycost.py MODE CALLS: calls an empty Python function CALLS times and
# prints the time per call in ns. MODE: plain, setprofile (a no-op
# sys.setprofile hook), cprofile (cProfile enabled around the loop).
import sys
import time


def f():
    pass


def loop(n):
    for _ in range(n):
        f()


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    prof = None
    if mode == "setprofile":
        sys.setprofile(lambda *a: None)
    elif mode == "cprofile":
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter_ns()
    loop(n)
    t1 = time.perf_counter_ns()
    sys.setprofile(None)
    if prof:
        prof.disable()
    print(f"ns_per_call={(t1 - t0) / n:.1f}")


main()
