#!/usr/bin/env bash
# Where one delivery's CPU goes (docs/performance.md, "CPU per delivery,
# from outside"): runs `hookd bench --spawn` and, from the bench's
# "measuring" line to its end, attaches perf to the spawned hookd serve and
# to its PostgreSQL backends (found by the run's application_name).
#
#   MODE=trace  (default) perf trace -s: every syscall, counted per process
#   MODE=record perf record -e cpu-clock -g: a sampled profile of each
#
#   scripts/cpu-breakdown.sh ./hookd "$PG" --batch 1 --concurrency 32 --events 6000 --endpoints 10 --owners 1
#
# Output in OUT (default bin/cpu-breakdown): bench.txt (the run's figures,
# whose "expected deliveries" divides the counts), hookd.* and pg.*.
# perf attaches a few tens of ms after the measured run starts, so the
# window misses its first publishes (about 1 % of a 10 s run); perf trace
# slows the traced processes (counts are exact, times are not).
set -euo pipefail
hookd=$1 pg=$2
shift 2
mode=${MODE:-trace}
out=${OUT:-bin/cpu-breakdown}
mkdir -p "$out"
: >"$out/bench.log"
"$hookd" bench --db "$pg" --spawn "$@" >"$out/bench.txt" 2>"$out/bench.log" &
bench=$!
until grep -q '^bench: measuring' "$out/bench.log"; do
	kill -0 "$bench" 2>/dev/null || { tail -5 "$out/bench.log"; exit 1; }
	sleep 0.02
done
serve=$(pgrep -P "$bench" | head -1)
schema=$(tr '\0' '\n' <"/proc/$serve/cmdline" | grep -A1 -x -- --schema | tail -1)
backends=$(psql "${pg%%\?*}" -Atc "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = 'hookd_$schema'")
echo "hookd serve $serve, schema $schema, backends $backends" >"$out/pids.txt"
perfs=()
case $mode in
trace)
	perf trace -s -p "$serve" -o "$out/hookd.trace" 2>/dev/null & perfs+=($!)
	perf trace -s -p "$backends" -o "$out/pg.trace" 2>/dev/null & perfs+=($!)
	;;
record)
	perf record -q -e cpu-clock -F 499 -g -p "$serve" -o "$out/hookd.perf" 2>/dev/null & perfs+=($!)
	perf record -q -e cpu-clock -F 499 -g -p "$backends" -o "$out/pg.perf" 2>/dev/null & perfs+=($!)
	;;
*) echo "MODE: trace or record" >&2; exit 2 ;;
esac
wait "$bench" || { tail -5 "$out/bench.log"; }
for p in "${perfs[@]}"; do
	kill -INT "$p" 2>/dev/null || true
	wait "$p" || true
done
grep -E '^(expected deliveries|deliveries|cpu)' "$out/bench.txt"
