#!/bin/sh
# tests/bench/choice.sh — measured kernel choice against the fixed rules
# (issue #55: "the measured choice never picks a candidate slower than
# fixed's by more than noise; print both"): the seed CNN, wide_cnn and
# ResNet-20 trained by one worker in fp32 and bf16, under
# XLATRAIN_KERNEL_CHOICE=measured and =fixed, interleaved run by run (the same
# CPU for both in a repetition), medians of REPS.
# `make bench` runs it after the bf16 tables (tests/bench/run.sh); by hand,
# from the repository root after `make bench` built the programs:
#   sh tests/bench/choice.sh     (REPS=3 STEPS_SEED=300 STEPS_WIDE=30 STEPS_R20=10 by default)
# Not here: which implementation each node got (the kernel reports of run.sh
# and bf16.sh), the candidates' times (the log's "kernel choice:" lines).
set -u
. "$(dirname "$0")/lib.sh"
# timings of a measured run come from the choice cache after the first: a
# cache of this run's own, so the first run times every candidate here
export XLATRAIN_CACHE_DIR="$tmp/cache"

for m in seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE resnet20:models/resnet20.yaml:$STEPS_R20; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for prec in fp32 bf16; do
        i=0
        while [ $i -lt "$REPS" ]; do
            for how in measured fixed; do
                XLATRAIN_KERNEL_CHOICE=$how on_cpus 1 $i $B/train_bench "$spec" --procs 1 --steps "$steps" --infer-steps 0 \
                    --precision $prec >> "$tmp/$name.$prec.$how" 2>>"$tmp/err" ||
                    echo "train_bench $spec --precision $prec ($how) failed: $(tail -n 1 "$tmp/err")" >&2
            done
            i=$((i + 1))
        done
    done
done

printf '== kernel choice measured against the fixed rules (1 worker, batch 128, %s repetitions interleaved, medians; %s)\n' "$REPS" "$model"
printf '%-9s %-5s %11s %11s %9s %9s\n' model prec measured fixed "meas/fix" kept_fp32
for name in seed_cnn wide_cnn resnet20; do
    for prec in fp32 bf16; do
        a="$tmp/$name.$prec.measured"; b="$tmp/$name.$prec.fixed"
        [ -s "$a" ] && [ -s "$b" ] || continue
        awk -v n=$name -v p=$prec -v a="$(med "$a" train_sps)" -v b="$(med "$b" train_sps)" -v k="$(field kept_fp32 "$(head -n 1 "$a")")" \
            'BEGIN{ printf "%-9s %-5s %11.1f %11.1f %8.2fx %9s\n", n, p, a, b, a/b, k }'
    done
done
echo "  (samples/s; meas/fix below 1 by more than the run-to-run spread would be a measured choice that lost;"
echo "   kept_fp32: bf16 convolutions and products measured faster in fp32 here and run so)"
