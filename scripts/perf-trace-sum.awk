# Sums a `perf trace -s` summary over its threads: calls and errors per
# syscall, most called first, and the total (scripts/cpu-breakdown.sh).
#   awk -v per=40000 -f scripts/perf-trace-sum.awk hookd.trace
$1 ~ /^[a-z_0-9]+$/ && NF >= 8 && $2 ~ /^[0-9]+$/ { calls[$1] += $2; errs[$1] += $3; total += $2 }
END {
	if (per == "") per = 1
	n = 0
	for (s in calls) order[++n] = s
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (calls[order[j]] > calls[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
	printf "%-18s %10s %8s %10s\n", "syscall", "calls", "errors", "per unit"
	for (i = 1; i <= n; i++) printf "%-18s %10d %8d %10.2f\n", order[i], calls[order[i]], errs[order[i]], calls[order[i]] / per
	printf "%-18s %10d %8s %10.2f\n", "total", total, "", total / per
}
