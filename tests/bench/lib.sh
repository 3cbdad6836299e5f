# lib.sh — what the bench scripts share (sourced by run.sh, ab.sh, bf16.sh,
# avx2.sh, choice.sh): the knobs and their defaults, one BLAS thread per
# worker, a scratch directory removed on exit ($tmp), whether the PyTorch
# reference can run, and the helpers that read train_bench's and PyTorch's
# "RESULT key=value ..." lines and that pin a one-worker run to a CPU.
export OPENBLAS_NUM_THREADS=1
# The knobs the training benches take from the environment, with their defaults
# (a script wanting another default sets it before sourcing this file), and the
# CPU every figure is printed beside.
B=${BENCH_DIR:-build/release/bench}
REPS=${REPS:-3}
STEPS_SEED=${STEPS_SEED:-300}
STEPS_WIDE=${STEPS_WIDE:-30}
STEPS_R20=${STEPS_R20:-10}
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The PyTorch reference: the script at REF under Debian's python3-torch (/usr/bin/python3); torch_check sets
# have_torch=1 when both are there (called by the scripts that compare: importing torch takes a second);
# tmed FILE KEYS -> the median of the first of KEYS (a regex) over its RESULT lines.
REF=../shared/bench/torch_ref.py
have_torch=0
torch_check() {
    have_torch=0
    if [ -f "$REF" ] && /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then have_torch=1; fi
}
tmed() {
    while read -r l; do echo "$l" | tr ' ' '\n' | grep -E "^($2)=" | head -n 1 | cut -d= -f2; done < "$1" | median
}
# field NAME LINE -> value of NAME=... in a RESULT line
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
med() { # file key -> the median of key over the file's RESULT lines
    while read -r l; do field "$2" "$l"; done < "$1" | median
}
# nth_cpu LIST I -> the (I mod n)-th of the n CPUs in LIST, a Cpus_allowed_list
# such as "0-1" or "0,2-3"; nothing for an empty LIST (tests/test_bench_lib.c)
nth_cpu() {
    echo "$1" | tr ',' '\n' |
        awk -F- -v i="$2" '/^[0-9]/ { hi = ($2 == "") ? $1 : $2; for (c = $1 + 0; c <= hi + 0; c++) cpu[n++] = c }
                           END { if (n) print cpu[i % n] }'
}
# cpu_of I -> the (I mod n)-th of the n CPUs this shell may run on, or nothing
# when it cannot tell
cpu_of() {
    nth_cpu "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status 2>/dev/null)" "$1"
}
# pinned I CMD ARGS... — CMD on CPU cpu_of(I) (taskset, from util-linux), or
# unpinned where taskset is missing or refused.
# Why: this VM's two vCPUs sit on cores whose neighbours differ, and by more
# than a bar's margin: on 2026-11-28 the seed CNN trained at batch 1024 in
# 22 ms a step on one and 17.7 on the other, then the faster one became the
# slower. Unpinned, the scheduler may run batch 128 on one and batch 1024 on
# the other, and a ratio measures the cores, not the batch size.
pinned() {
    _pin_cpu=$(cpu_of "$1"); shift
    if [ -n "$_pin_cpu" ] && command -v taskset >/dev/null 2>&1 && taskset -c "$_pin_cpu" true 2>/dev/null; then
        taskset -c "$_pin_cpu" "$@"
    else
        "$@"
    fi
}
# on_cpus PROCS I CMD ARGS... — one worker runs pinned (repetition I on CPU
# cpu_of(I)), so a repetition's figures come from one core; more run unpinned
on_cpus() {
    if [ "$1" = 1 ]; then shift; pinned "$@"; else shift 2; "$@"; fi
}
