#!/usr/bin/env python3
"""Statements per delivery from a PostgreSQL log written with
log_min_duration_statement=0 (docs/performance.md, "CPU per delivery, from
outside"): counts each statement's parse, bind and execute messages and sums
their durations.

    scripts/pg-statements.py small.log large.log DELIVERIES

prints, per statement, (large - small) / DELIVERIES: the difference of two
runs that differ only in their event count cancels the setup's statements.
"""
import collections
import re
import sys

LINE = re.compile(r'^\S+ \S+ UTC \[\d+\] \S+ LOG:  duration: ([0-9.]+) ms  (parse|bind|execute|statement)([^:]*): (.*)$')


def read(path):
    calls, ms = collections.Counter(), collections.Counter()
    cur = None
    for raw in open(path, errors='replace'):
        m = LINE.match(raw.rstrip('\n'))
        if m:
            dur, phase, _, text = m.groups()
            cur = [phase, text, float(dur)]
            key = (phase, ' '.join(text.split())[:90])
            calls[key] += 1
            ms[key] += float(dur)
        # continuation lines (a statement's next lines) are ignored: the
        # first 90 characters name a statement well enough
    return calls, ms


def main():
    small, large, per = sys.argv[1], sys.argv[2], float(sys.argv[3])
    c1, m1 = read(small)
    c2, m2 = read(large)
    rows = []
    for k in set(c1) | set(c2):
        n = (c2[k] - c1[k]) / per
        t = (m2[k] - m1[k]) / per
        if abs(n) >= 0.005:
            rows.append((k, n, t))
    rows.sort(key=lambda r: -r[2])
    tot = collections.Counter()
    for (phase, text), n, t in rows:
        tot[phase, 'n'] += n
        tot[phase, 't'] += t
        print(f'{n:7.3f}/delivery {1000 * t:8.1f} µs/delivery  {phase:9s} {text}')
    for phase in ('parse', 'bind', 'execute', 'statement'):
        print(f'total {phase:9s}: {tot[phase, "n"]:.2f} a delivery, {1000 * tot[phase, "t"]:.1f} µs a delivery (server-side duration)')


main()
