#!/usr/bin/env bash
# bench-quickstart.sh times the README's quick start as a fresh machine
# pays for it: scripts/setup.sh, then `go run ./cmd/coldstart run` with
# empty Go caches (module cache, build cache) and an empty coldstart build
# cache, each in a temporary directory removed afterwards. It prints a
# Markdown table of the steps; with -w it also writes that table into the
# README's timings block.
#
# What it cannot make fresh: Debian packages already installed stay (setup.sh
# then only checks them; the table says whether it installed anything), and
# the Go toolchain itself. Run it on a quiet machine: every figure is one
# wall-clock reading, and the table records the load average.
#
#   scripts/bench-quickstart.sh        # print the table
#   scripts/bench-quickstart.sh -w     # and write it into README.md
set -euo pipefail
cd "$(dirname "$0")/.."

write=0
[ "${1:-}" = -w ] && write=1

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOCACHE="$tmp/gocache" GOMODCACHE="$tmp/gomodcache" XDG_CACHE_HOME="$tmp/xdg"
mkdir -p "$GOCACHE" "$GOMODCACHE" "$XDG_CACHE_HOME"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
load_before=$(cut -d' ' -f1 /proc/loadavg)

t0=$(now)
setup_out=$(bash scripts/setup.sh 2>&1)
t1=$(now)
installed="nothing (all present)"
if grep -q 'installed' <<<"$setup_out"; then
	installed=$(grep 'installed' <<<"$setup_out" | sed 's/^setup: installed //' | tr '\n' ' ')
fi

# The modules the compile needs, as `go run` fetches them (go mod download
# would also fetch what only the tests need).
go list -deps ./cmd/coldstart >/dev/null
t2=$(now)
go build -o "$tmp/coldstart" ./cmd/coldstart
t3=$(now)
deps=$(go list -deps ./cmd/coldstart | wc -l)
kube=$(go list -deps ./cmd/coldstart | grep -cE '^(k8s\.io|knative\.dev|sigs\.k8s\.io)/' || true)

"$tmp/coldstart" run -q --results-dir "$tmp/results" >"$tmp/run.txt" 2>"$tmp/run.err" || {
	cat "$tmp/run.err" >&2
	exit 1
}
t4=$(now)
arms=$(grep -h '"kind":"artifact"' "$tmp"/results/*_coldstart.jsonl | grep -o '^{"kind":"artifact","arm":"[a-z]*"' | cut -d'"' -f8 | awk '!seen[$0]++' | paste -sd, | sed 's/,/, /g')
# Counted rounds and why they stopped (--runs auto, the default), from the
# results file's stop record; plus the uncounted warm-up round.
stop=$(grep -h '"kind":"stop"' "$tmp"/results/*_coldstart.jsonl | head -1)
rounds=$(($(grep -o '"rounds":[0-9]*' <<<"$stop" | cut -d: -f2) + 1))
reason=$(grep -o '"reason":"[a-z-]*"' <<<"$stop" | cut -d'"' -f4)
load_after=$(cut -d' ' -f1 /proc/loadavg)

table=$(
	cat <<EOF
| step (fresh caches, $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)) | seconds |
|---|---|
| \`scripts/setup.sh\` (installed: ${installed% }) | $(secs "$t0" "$t1") |
| the modules \`cmd/coldstart\` needs, from the proxy (as \`go run\` fetches them) | $(secs "$t1" "$t2") |
| compile \`cmd/coldstart\` ($deps packages, $kube of them Kubernetes and Knative clients) | $(secs "$t2" "$t3") |
| the first \`coldstart run\`: build the default arms of the sample ($arms), $rounds rounds (stopped on $reason) | $(secs "$t3" "$t4") |
| **total** | **$(secs "$t0" "$t4")** |

Load average $load_before before, $load_after after. \`go run\` compiles and then runs, so the
quick start's command pays the last three rows; \`--arms all\` adds the pgo arm, a 10 s profile
and a rebuild of every package with it.
EOF
)
echo "$table"
if [ "$write" = 1 ]; then
	python3 - "$table" <<'PY'
import sys
table = sys.argv[1]
begin = "<!-- BEGIN timings: measured by scripts/bench-quickstart.sh; see its header -->\n"
end = "<!-- END timings -->"
doc = open("README.md").read()
i = doc.index(begin) + len(begin)
j = doc.index(end, i)
open("README.md", "w").write(doc[:i] + "\n" + table + "\n\n" + doc[j:])
PY
fi
