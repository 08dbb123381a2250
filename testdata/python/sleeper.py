# SPDX-License-Identifier: Apache-2.0
"""Sleeps at a known stack, for internal/python's test that walks the
frame chain from user space and names its frames: K.h (line of the
sleep) <- g <- f <- <module>. Prints "ready" once there.
"""
import sys
import time


class K:
    def h(self):
        print("ready", flush=True)
        time.sleep(60)  # sleep line


def g():
    K().h()  # g's call


def f():
    g()  # f's call


f()  # module's call
sys.exit(0)
