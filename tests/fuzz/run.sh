#!/bin/sh
# run.sh — run the libFuzzer harnesses built by the Makefile (make fuzz, make fuzz-regress).
#
#   sh tests/fuzz/run.sh regress BUILD_DIR TARGET...   replay corpus/ and regressions/, no mutation
#   FUZZ_SECONDS=N sh tests/fuzz/run.sh fuzz BUILD_DIR TARGET...
#                                                      fuzz each target for N seconds
#
# Campaigns start from tests/fuzz/corpus/TARGET and write what they discover
# to BUILD_DIR/corpus/TARGET (scratch, never the tree); a finding (crash,
# sanitizer report, leak, timeout > 10 s, RSS > 2 GB) is saved under
# BUILD_DIR/artifacts/TARGET/ with the reproducer command. Each target gets
# one line; the last line is "fuzz: N passed, N failed" (or
# "fuzz-regress: ...") and the exit status is non-zero on any failure.
set -u
cd "$(dirname "$0")/../.." || exit 2
mode=$1 dir=$2
shift 2
secs=${FUZZ_SECONDS:-60}
passed=0 failed=0
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
# the training code is not reached here, but keep BLAS quiet and single-threaded
export OPENBLAS_NUM_THREADS=1
opts="-rss_limit_mb=2048 -timeout=10 -print_final_stats=1"

dict_for() {
    case $1 in config|spec) echo "-dict=tests/fuzz/yaml.dict" ;; esac
}

for t in "$@"; do
    bin=$dir/fuzz_$t
    log=$dir/logs/$t.$mode.log
    art=$dir/artifacts/$t/
    mkdir -p "$dir/logs" "$art"
    if [ ! -x "$bin" ]; then
        echo "fuzz_$t: FAILED (no binary $bin; run make fuzz-build)"
        failed=$((failed + 1))
        continue
    fi
    if [ "$mode" = regress ]; then
        # every file, each run once as it is (a directory argument would also be run once,
        # but file arguments make the log name each input)
        files=$(find "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" -type f ! -name '.*' 2>/dev/null | sort)
        n=$(printf '%s\n' "$files" | grep -c .)
        # shellcheck disable=SC2086
        if "$bin" $opts -artifact_prefix="$art" $files >"$log" 2>&1; then
            echo "fuzz_$t: $n inputs replayed, ok"
            passed=$((passed + 1))
        else
            echo "fuzz_$t: FAILED replaying $n inputs; see $log:"
            grep -E '^(==[0-9]+==ERROR|SUMMARY|Running:|fuzz invariant|.*runtime error)' "$log" | tail -n 5 | sed 's/^/    /'
            failed=$((failed + 1))
        fi
    else
        scratch=$dir/corpus/$t
        mkdir -p "$scratch"
        # shellcheck disable=SC2086
        "$bin" $opts $(dict_for "$t") -max_total_time="$secs" -artifact_prefix="$art" \
            "$scratch" "tests/fuzz/corpus/$t" >"$log" 2>&1
        rc=$?
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
        if [ $rc -eq 0 ]; then
            echo "fuzz_$t: ${execs:-?} execs in ${secs} s, coverage ${cov:-?}, no findings"
            passed=$((passed + 1))
        else
            found=$(sed -n 's/^.*Test unit written to //p' "$log" | tail -n 1)
            echo "fuzz_$t: FINDING after ${execs:-?} execs: ${found:-(no artifact; see $log)}; see $log:"
            grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz invariant|.*runtime error)' "$log" | head -n 5 | sed 's/^/    /'
            failed=$((failed + 1))
        fi
    fi
done
label=fuzz
[ "$mode" = regress ] && label=fuzz-regress
echo "$label: $passed passed, $failed failed"
[ $failed -eq 0 ]
