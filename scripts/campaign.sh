#!/usr/bin/env bash
# campaign.sh reproduces the published campaign (PERFORMANCE.md) on this
# machine: the bundled sample server, every arm, budgets cpus=0, cpus=0-1 and
# cores=0.5 (cores= needs root), cold start, density, steady state, and the
# prober cross-check; then the report. About 15 minutes on 2 cores.
#
#   scripts/campaign.sh            # writes results/<ts>_*.jsonl and PERFORMANCE.md
#   RUNS=5 CALLS=5000 scripts/campaign.sh   # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-20}
CALLS=${CALLS:-20000}
BUDGETS=${BUDGETS:-cpus=0;cpus=0-1;cores=0.5}
ARMS=${ARMS:-default,static,upx,pgo,image}

bash scripts/setup.sh
go build -o bin/coldstart ./cmd/coldstart
go build -o bin/steady ./cmd/steady

# Each step writes into a fresh directory, so the report reads exactly this
# campaign's files; they are then moved into results/.
out=$(mktemp -d results/.campaign-XXXXXX)
trap 'rm -rf "$out"' EXIT

bin/coldstart run -n "$RUNS" --arms "$ARMS" --budget "$BUDGETS" --results-dir "$out"
bin/coldstart density --instances 8 --arms "$ARMS" --results-dir "$out"
bin/steady run --arms "$ARMS" --budget "$BUDGETS" --protocol grpc,http1 \
	--scenario sequential,throughput,stream --concurrency 1,32 --calls "$CALLS" --results-dir "$out"
go run ./bench/crosscheck -n "$RUNS" -arms default,static,upx --results-dir "$out"

files=$(cd "$out" && ls *.jsonl | sed 's|^|results/|' | tr '\n' ' ')
mv "$out"/*.jsonl results/
# docs/performance-notes.md holds what the people who ran the campaign doubt
# and checked; rewrite it for a new campaign.
bin/coldstart report --title Performance --notes docs/performance-notes.md --out PERFORMANCE.md --plots docs/img $files
echo "campaign: $files -> PERFORMANCE.md" >&2
