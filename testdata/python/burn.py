# SPDX-License-Identifier: Apache-2.0
"""Two functions with identical bodies burn CPU 3:1 by their iteration
counts; the sampler's Python tests expect burn_a's share near 0.75.

usage: burn.py SECONDS  (run rounds until the process has run SECONDS on
CPU, so that a loaded machine stretches the run rather than thinning its
samples)
"""
import sys
import time


class Worker:
    def burn_a(self, n):
        x = 0
        for i in range(n):
            x += i * i
        return x

    def burn_b(self, n):
        x = 0
        for i in range(n):
            x += i * i
        return x


def main():
    end = time.process_time() + float(sys.argv[1])
    w = Worker()
    while time.process_time() < end:
        w.burn_a(30000)
        w.burn_b(10000)


if __name__ == "__main__":
    main()
