#!/bin/sh
# ab.sh — before/after: the training benchmark of two builds of xlatrain,
# interleaved run by run on the same machine in one session (the machines
# here are shared and noisy, so only ratios measured side by side mean
# anything). Prints medians per build and the ratio after/before.
#
#   sh tests/bench/ab.sh BEFORE_TREE AFTER_TREE     # each with build/release/bench/train_bench built
#   MODELS="resnet20:models/resnet20.yaml:10" sh tests/bench/ab.sh ...   # other models (name:spec:steps ...)
#
# e.g. git worktree add /tmp/before <commit> && make -C /tmp/before _build _bench_bins
set -u
[ $# -eq 2 ] || { echo "usage: $0 BEFORE_TREE AFTER_TREE" >&2; exit 2; }
REPS=${REPS:-5}
. "$(dirname "$0")/lib.sh"

echo "ab.sh — $(date -u +%Y-%m-%dT%H:%MZ), $model, $REPS interleaved repetitions"
printf '%-9s %-5s %12s %12s %7s %10s %10s\n' model procs before after ratio before_ms after_ms
MODELS=${MODELS:-"seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE"}
for m in $MODELS; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for p in 1 2; do
        for side in before after; do : > "$tmp/$side"; done
        i=0
        while [ $i -lt "$REPS" ]; do
            for side in before after; do
                tree=$1; [ $side = after ] && tree=$2
                (cd "$tree" && on_cpus $p $i build/release/bench/train_bench "$spec" --procs $p --steps $steps --infer-steps 2) 2>/dev/null |
                    grep '^RESULT' >> "$tmp/$side"
            done
            i=$((i + 1))
        done
        b=$(while read -r l; do field train_sps "$l"; done < "$tmp/before" | median)
        a=$(while read -r l; do field train_sps "$l"; done < "$tmp/after" | median)
        bs=$(while read -r l; do field step_ms "$l"; done < "$tmp/before" | median)
        as=$(while read -r l; do field step_ms "$l"; done < "$tmp/after" | median)
        r=$(awk -v a="$a" -v b="$b" 'BEGIN{ if (b+0>0) printf "%.3fx", a/b; else print "-" }')
        printf '%-9s %-5s %12s %12s %7s %10s %10s\n' $name $p "$b" "$a" "$r" "$bs" "$as"
    done
done
