# SPDX-License-Identifier: Apache-2.0
"""Three threads each spin in their own function: the main thread in
spin_main, two others in spin_alpha and spin_beta; the sampler's thread
test expects each function under its own thread's stack.

usage: threads.py SECONDS
"""
import sys
import threading
import time


def work(end):
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i
    return x


def spin_alpha(end):
    return work(end)


def spin_beta(end):
    return work(end)


def spin_main(end):
    return work(end)


def main():
    end = time.monotonic() + float(sys.argv[1])
    threads = [threading.Thread(target=spin_alpha, args=(end,)),
               threading.Thread(target=spin_beta, args=(end,))]
    for t in threads:
        t.start()
    spin_main(end)
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
