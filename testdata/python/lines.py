# SPDX-License-Identifier: Apache-2.0
"""Prints, for every code object compiled from a source with long jumps,
backward lines and lines without code, the table the interpreter keeps
and the line of every instruction as the interpreter itself computes it,
one JSON object a line: internal/python's line table test decodes the
tables and compares.
"""
import dis
import json
import sys
import types

SOURCE = '''
import functools

def plain(a, b):
    c = a + b
    return c * 2

def decorated_target(x):
    return x

@functools.lru_cache(
    maxsize=None)
def decorated(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        else:
            total -= (
                i *
                2)
    return total

class Outer:
    def method(self, v):
        def inner(w):
            return [q for q in range(w)
                    if q > 1]
        return inner(v)

def far(x):
    y = x
''' + "\n" * 300 + '''    y += 1
    try:
        y = y / 0
    except ZeroDivisionError:
        y = -1
    finally:
        y += 2
    return (lambda z:
            z + y)(3)
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def lines(co):
    v = sys.version_info[:2]
    n = len(co.co_code)
    if v >= (3, 11):
        return [p[0] if p[0] is not None else -1 for p in co.co_positions()]
    if v == (3, 10):
        out = [-1] * n
        for start, end, line in co.co_lines():
            for off in range(start, end):
                out[off] = line if line is not None else -1
        return out[::2]
    starts = dict(dis.findlinestarts(co))
    out, line = [], co.co_firstlineno
    for off in range(0, n, 2):
        line = starts.get(off, line)
        out.append(line)
    return out


def main():
    top = compile(SOURCE, "source.py", "exec")
    for co in codes(top):
        table = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
        print(json.dumps({"name": co.co_name, "first": co.co_firstlineno,
                          "table": table.hex(), "lines": lines(co)}))


main()
