#!/bin/bash
# run_fuzz.sh -- runs every libFuzzer target for its share of a time budget (`make fuzz`).
#
#     tests/fuzz/run_fuzz.sh BUILD SECONDS RSS_MB NAME=WEIGHT=SEEDDIR[:SEEDDIR...]...
#
# Target NAME is BUILD/fuzz/fuzz_NAME and runs for SECONDS * WEIGHT / (sum of the
# weights), at least 1 s.  Its corpus grows in BUILD/fuzz-corpus/NAME/ (kept between
# runs; the seed directories are read, never written); what it finds (crash-, leak-,
# timeout-, oom- files) goes to BUILD/fuzz-findings/NAME/, its output to
# BUILD/fuzz-logs/NAME.log.  One input may take 10 s and RSS_MB of memory.
# Every target runs even after one has found something; the exit status is 1 when any
# did, and each reproducer's path is printed with the command that replays it.
set -u

if [ $# -lt 4 ]; then
    echo "usage: $0 BUILD SECONDS RSS_MB NAME=WEIGHT=SEEDDIR[:SEEDDIR...]..." >&2
    exit 2
fi
build=$1 seconds=$2 rss=$3
shift 3

total=0
for spec in "$@"; do
    w=${spec#*=}
    w=${w%%=*}
    total=$((total + w))
done

failed=0
for spec in "$@"; do
    name=${spec%%=*}
    rest=${spec#*=}
    weight=${rest%%=*}
    seeds=${rest#*=}
    secs=$((seconds * weight / total))
    [ "$secs" -ge 1 ] || secs=1
    bin=$build/fuzz/fuzz_$name
    corpus=$build/fuzz-corpus/$name
    findings=$build/fuzz-findings/$name
    log=$build/fuzz-logs/$name.log
    mkdir -p "$corpus" "$findings" "$(dirname "$log")"
    stamp=$findings/.started
    touch "$stamp"
    dirs=()
    IFS=: read -r -a seed_dirs <<<"$seeds"
    for d in "${seed_dirs[@]}"; do
        [ -d "$d" ] && dirs+=("$d")
    done
    echo "== fuzz $name: ${secs}s (log: $log)"
    "$bin" "$corpus" "${dirs[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb="$rss" \
        -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    # The last status line (executions, coverage, corpus) and the final counts.
    grep -E '^#[0-9]+' "$log" | tail -n 1
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | tr '\n' ' '
    echo
    found=$(find "$findings" -maxdepth 1 -type f -newer "$stamp" \
        \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    if [ -n "$found" ]; then
        failed=1
        for f in $found; do
            echo "FINDING in $name: $f"
            echo "    reproduce: $bin $f"
        done
        grep -E 'ERROR|runtime error|SUMMARY' "$log" | head -n 5
    elif [ "$rc" -ne 0 ]; then
        failed=1
        echo "FAILED: fuzz_$name exited with status $rc and left no reproducer; see $log"
        tail -n 20 "$log"
    fi
done
if [ "$failed" -ne 0 ]; then
    echo "make fuzz: findings above (add each reproducer to the target's corpus once fixed)"
    exit 1
fi
echo "make fuzz: no findings"
