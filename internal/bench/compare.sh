#!/usr/bin/env bash
# make bench-compare: measure two builds of hookd side by side.
#
# Builds hookd at BEFORE and AFTER (git revisions; "." is the working tree),
# then runs `hookd bench --spawn` PAIRS times for each, alternating (ABBA:
# before-after, after-before, …) so drift on a shared or throttled machine
# falls on both sides alike, and prints every run's figures, each side's
# median and the after/before ratio. Both runs use AFTER's load generator
# and receiver (`--hookd` picks the served binary), so only the server
# differs (BEFORE's when AFTER adds migrations: see GEN).
#
#   make bench-compare BEFORE=main AFTER=. PAIRS=4 \
#     ARGS='--db postgres://postgres@127.0.0.1:5432/test?sslmode=disable --batch 1 --concurrency 32 --publish-only --events 5000'
#
# REUSE=1 keeps the two binaries already in OUT (default bin/compare), to
# run other scenarios with the same builds.
#
# GEN=path runs the load generator and receiver of that hookd binary
# instead of AFTER's: for builds older than `hookd bench --spawn --hookd`.
# Unset, it is BEFORE's when AFTER adds database migrations (below).
#
# PGBENCH=N also runs, before each pair, pgbench's one-row-commit rate at N
# clients on the same PostgreSQL (the publish path's ceiling), printed
# beside the figures.
set -euo pipefail
set -f # ARGS holds URLs with ? and &: no globbing

before=${BEFORE:-main}
after=${AFTER:-.}
pairs=${PAIRS:-4}
args=${ARGS:---batch 1 --concurrency 32 --publish-only --events 5000}
out=${OUT:-bin/compare}
[ "${out#/}" = "$out" ] && out=$(pwd)/$out
mkdir -p "$out/runs"

build() { # build REV DEST
	if [ "$1" = . ]; then
		go build -o "$2" ./cmd/hookd
		return
	fi
	local tmp
	tmp=$(mktemp -d)
	git worktree add --detach -q "$tmp" "$1"
	(cd "$tmp" && go build -o "$2" ./cmd/hookd)
	git worktree remove --force "$tmp"
}

if [ -n "${REUSE:-}" ] && [ -x "$out/before" ] && [ -x "$out/after" ]; then
	echo "reusing the builds in $out"
else
	echo "building before ($before) and after ($after)"
	build "$before" "$out/before"
	build "$after" "$out/after"
fi

# The generator sets up each run's schema with its own build's migrations,
# and the served build applies whatever it has on top when it starts. So
# when the two builds' migrations differ, the generator must be the build
# with fewer of them: with the other's, the older build would run on the
# newer schema (a dropped index or key in AFTER would be measured on both
# sides) and nothing would say so.
migrations() { # REV: the names of its hookd migrations, one a line
	if [ "$1" = . ]; then
		ls internal/store/migrations
	else
		git ls-tree --name-only "$1" internal/store/migrations/ | xargs -n1 basename
	fi
}
if [ -z "${GEN:-}" ]; then
	only_before=$(comm -23 <(migrations "$before" | sort) <(migrations "$after" | sort))
	only_after=$(comm -13 <(migrations "$before" | sort) <(migrations "$after" | sort))
	if [ -n "$only_after" ] && [ -z "$only_before" ]; then
		GEN=$out/before
		echo "after adds migrations ($(echo $only_after)): the load generator is before's, so each run's schema is before's and after applies its own at start"
	elif [ -n "$only_after" ] && [ -n "$only_before" ]; then
		echo "warning: each build has migrations the other lacks; the schema is after's for both (set GEN to choose)" >&2
	fi
fi

db=$(sed -n 's/.*--db[ =]\([^ ]*\).*/\1/p' <<<"$args")
pgbench_rate() { # one-row commits/s at $PGBENCH clients on $db
	local url=${db%%\?*} sql
	sql=$(mktemp)
	echo "INSERT INTO hookd_pgbench_one (v) VALUES ('x');" >"$sql"
	psql -q "$url" -c 'CREATE TABLE IF NOT EXISTS hookd_pgbench_one (id bigserial PRIMARY KEY, v text)' >/dev/null
	pgbench -n -c "$PGBENCH" -j 2 -T 10 -f "$sql" "$url" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	psql -q "$url" -c 'DROP TABLE hookd_pgbench_one' >/dev/null
	rm -f "$sql"
}

# figure FILE NAME: a run's figure, durations in ms.
figure() {
	awk -v name="$2" '
		function ms(v) {
			if (v ~ /µs$/) return v / 1000
			if (v ~ /ms$/) return v + 0
			if (v ~ /s$/) return v * 1000
			return v + 0
		}
		substr($0, 1, 23) ~ "^" name " *$" {
			v = substr($0, 24); split(v, f, " ")
			if (name ~ /^(latency|publish request)/) print ms(f[1]); else print f[1] + 0
		}' "$1"
}

names=("publish" "publish request p99" "deliveries" "latency p99" "cpu hookd" "cpu postgres" "cpu per delivery" "cpu per publish" "cpu stack per delivery" "cpu stack per publish")
declare -A vals
for i in $(seq 1 "$pairs"); do
	if [ -n "${PGBENCH:-}" ]; then
		echo "pair $i: pgbench -c $PGBENCH one-row commits: $(pgbench_rate)/s"
	fi
	order="before after"
	if [ $((i % 2)) -eq 0 ]; then
		order="after before"
	fi
	for side in $order; do
		f="$out/runs/$i-$side.txt"
		# shellcheck disable=SC2086 # ARGS is a list of flags
		"${GEN:-$out/after}" bench --spawn --hookd "$out/$side" $args >"$f" 2>"$f.log" || { echo "run $i $side failed:"; tail -5 "$f.log"; exit 1; }
		line="pair $i $side:"
		for n in "${names[@]}"; do
			v=$(figure "$f" "$n")
			if [ -z "$v" ]; then
				continue
			fi
			vals["$side|$n"]+="$v "
			line+=" $n=$v"
		done
		echo "$line"
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit; print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
echo "$(head -1 "$out/runs/1-after.txt")"
printf '%-22s %14s %14s %8s   %s\n' figure "before" "after" ratio "(medians of $pairs runs each; ms for times)"
for n in "${names[@]}"; do
	# A figure one scenario does not print (cpu per publish while
	# delivering) has no values: median's grep then fails, which must
	# not end the script (set -e) with the status 1 make reports.
	b=$(median <<<"${vals["before|$n"]:-}" || true)
	a=$(median <<<"${vals["after|$n"]:-}" || true)
	if [ -z "$b" ] || [ -z "$a" ]; then
		continue
	fi
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }')
	printf '%-22s %14s %14s %8s   before: %s| after: %s\n' "$n" "$b" "$a" "$ratio" "${vals["before|$n"]}" "${vals["after|$n"]}"
done
