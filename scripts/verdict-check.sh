#!/usr/bin/env bash
# verdict-check.sh shows that coldstart's verdicts can be acted on, on this
# machine, from a clean commit:
#   - cold start (bench/verdictcheck): the same binary under two arm names
#     over CAMPAIGNS small campaigns (false-positive rate), static vs upx
#     (detected every time?), and a server sleeping a known extra 2 ms before
#     it listens (detected? do the intervals cover the truth?);
#   - steady: CAMPAIGNS small `steady run --rounds` campaigns of the same
#     binary under two arm names (--bin a=PATH --bin b=PATH), each judged by
#     `coldstart report -o json` (false-positive rate of steady's verdicts).
# Every file lands in results/ with the load recorded per window. Run it on
# a quiet machine for figures to publish.
#
#   scripts/verdict-check.sh                     # 20 campaigns each
#   CAMPAIGNS=5 RUNS=6 scripts/verdict-check.sh  # a quick look
#   STEADY_ONLY=1 scripts/verdict-check.sh       # the steady A/A alone
set -euo pipefail
cd "$(dirname "$0")/.."

CAMPAIGNS=${CAMPAIGNS:-20}
RUNS=${RUNS:-10}
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-5000}

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "verdict-check: the tree has uncommitted changes; results for publication come from a clean commit" >&2
	exit 1
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for t in cmd/coldstart cmd/steady bench/verdictcheck; do
	go build -o "$bin/$(basename "$t")" "./$t"
done
echo "verdict-check: load before: $(cat /proc/loadavg)" >&2

if [ -z "${STEADY_ONLY:-}" ]; then
	"$bin/verdictcheck" -campaigns "$CAMPAIGNS" -runs "$RUNS" -experiments aa,upx,sleep --results-dir results
fi

# Steady A/A: one static binary under two arm names, rounds interleaved.
static=$("$bin/coldstart" build --arms static -o json -q | sed -n 's/.*"path": *"\([^"]*\)".*/\1/p' | head -1)
dir=$(mktemp -d results/.steady-aa-XXXXXX)
trap 'rm -rf "$bin" "$dir"' EXIT
detected=0 comparisons=0 positives=0
for i in $(seq 1 "$CAMPAIGNS"); do
	"$bin/steady" run --bin "a=$static" --bin "b=$static" --rounds "$ROUNDS" --calls "$CALLS" \
		--scenario sequential,throughput --concurrency 1,32 --budget cpus=0 --results-dir "$dir" >/dev/null
	f=$(ls -t "$dir"/*_steady.jsonl | head -1)
	json=$("$bin/coldstart" report -o json "$f")
	n=$(grep -c '"verdict": "\(faster\|slower\|lower\|higher\)"' <<<"$json" || true)
	comparisons=$((comparisons + $(grep -c '"verdict"' <<<"$json" || true)))
	positives=$((positives + n))
	if [ "$n" -gt 0 ]; then detected=$((detected + 1)); fi
	echo "verdict-check steady A/A $i/$CAMPAIGNS: $n comparison(s) with a difference detected (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
# Named apart from campaign files: these rows are A/A checks, not figures.
for f in "$dir"/*_steady.jsonl; do
	mv "$f" "results/$(basename "${f%_steady.jsonl}")_steady-aa.jsonl"
done
echo "steady A/A: $positives/$comparisons comparisons said a difference was detected (false positives); $detected/$CAMPAIGNS campaigns had at least one"
