#!/usr/bin/env bash
# Per-core scaling (issue 48 §4; docs/scale-out.md): the breadth benchmark
# with PostgreSQL given 1 core and then 2 (taskset on the postmaster and
# every child; new backends inherit the postmaster's mask), and hookd
# nodes 1, 2 and 3 (hookd bench --nodes), RUNS runs each.
#
#   scripts/scaling.sh ./hookd "$PG" [RUNS]
#
# Every PostgreSQL process is restored to all cores at the end (and on
# Ctrl-C). While PostgreSQL is on one core, so is everyone else's use of it.
set -euo pipefail
hookd=$1 pg=$2 runs=${3:-2}
post=$(head -1 /var/run/postgresql/*.pid 2>/dev/null || pgrep -o -x postgres)
all=$(cut -d- -f2 /sys/devices/system/cpu/online)
pin() { # CPUS: the postmaster and all its children
	taskset -a -cp "$1" "$post" >/dev/null
	for c in $(pgrep -P "$post"); do taskset -a -cp "$1" "$c" >/dev/null 2>&1 || true; done
}
trap 'pin 0-'"$all" EXIT
for cores in 0 "0-$all"; do
	pin "$cores"
	for nodes in 1 2 3; do
		for r in $(seq 1 "$runs"); do
			f=$(mktemp)
			load=$(cut -d' ' -f1-3 /proc/loadavg)
			"$hookd" bench --db "$pg" --spawn --nodes "$nodes" --batch 1 --concurrency 32 --events 1000 --endpoints 1000 --owners 10 >"$f" 2>/dev/null || echo "run failed"
			printf 'pg cpus %-4s nodes %d run %d  %s  load %s  %s\n' "$cores" "$nodes" "$r" "$(date -u +%H:%M:%S)" "$load" \
				"$(grep -E '^(deliveries|cpu per delivery|cpu stack per delivery|cpu hookd|cpu postgres |lost)' "$f" | sed -E 's/ +/ /g; s/\(([^)]{0,30})[^)]*\)/(\1…)/' | tr '\n' '|')"
			rm -f "$f"
		done
	done
done
