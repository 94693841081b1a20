#!/usr/bin/env bash
# Runs `make test` N times, each in a fresh clone of this repository's HEAD, while a CPU
# hog keeps every core busy, and reports every test that failed in any run.
#
#   tests/repeat.sh [N]          (make test-repeat N=3)
#
# The hog is one busy loop per core at the tests' own priority, so the suite shares the
# machine the way it does with a noisy neighbour in CI.  Each run's output is kept in
# $REPEAT_DIR (default build/repeat) as run-K.log; the summary lists per run its exit
# status, wall time and the failed tests (pytest's FAILED/ERROR lines, a unit test
# binary or transparency check that failed), then every test that failed at least once.
# Exit status: 0 when every run passed, 1 otherwise.
set -uo pipefail

n=${1:-3}
case $n in ''|*[!0-9]*) echo "usage: $0 [N]  (N a positive number of runs)" >&2; exit 2;; esac
[ "$n" -ge 1 ] || { echo "usage: $0 [N]  (N a positive number of runs)" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${REPEAT_DIR:-$repo/build/repeat}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/pyprof-repeat.XXXXXX")
hogs=()

cleanup() {
    for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cores=$(nproc)
for _ in $(seq "$cores"); do
    sh -c 'while :; do :; done' &
    hogs+=($!)
done
echo "test-repeat: $n run(s) of make test, each in a fresh clone of $repo's HEAD as it is when the run starts, $cores busy loop(s) hogging the cores"

declare -a status secs
failed_any=0
for k in $(seq "$n"); do
    clone=$work/run-$k
    log=$out/run-$k.log
    git clone -q "$repo" "$clone" || { echo "run $k: git clone failed" >&2; exit 1; }
    commit=$(git -C "$clone" rev-parse --short HEAD)
    start=$(date +%s)
    (cd "$clone" && CI=true make test) >"$log" 2>&1
    status[$k]=$?
    secs[$k]=$(( $(date +%s) - start ))
    [ "${status[$k]}" -eq 0 ] || failed_any=1
    rm -rf "$clone"
    printf 'run %d (%s): exit %d, %dm%02ds wall (%s)\n' "$k" "$commit" "${status[$k]}" \
        $(( secs[k] / 60 )) $(( secs[k] % 60 )) "$log"
    # The closing lines of each runner, so a passing run shows what it ran.
    grep -E '^(=+ )?[0-9]+ (passed|failed)|^\[  (PASSED|FAILED)  \]|^transparency' "$log" \
        | sed 's/^/    /'
done

failures=$(for k in $(seq "$n"); do
    grep -hE '^(FAILED|ERROR) |^\[  FAILED  \] |^transparency: .*FAIL|^make(\[[0-9]+\])?: \*\*\*' \
        "$out/run-$k.log" | sed "s/^/run $k: /"
done)
echo
if [ -n "$failures" ]; then
    echo "failed in some run:"
    echo "$failures" | sed 's/^/  /'
    echo
    echo "tests failed at least once (count of runs):"
    echo "$failures" | sed -E 's/^run [0-9]+: //; s/ - .*//' | sort | uniq -c | sort -rn | sed 's/^/  /'
elif [ "$failed_any" -ne 0 ]; then
    echo "a run exited non-zero without a failed test named: see its log"
else
    echo "every run passed"
fi
exit "$failed_any"
