#!/bin/sh
# tests/bench/bf16.sh — bf16 mixed precision (issue #18) beside fp32: `make bench`
# runs it after the fp32 tables (tests/bench/run.sh); by hand, from the
# repository root after `make bench` built the programs:
#   sh tests/bench/bf16.sh            (REPS=3 STEPS_SEED=300 STEPS_WIDE=30 by default)
# Prints: the fp32 FMA limit and the bf16 limit (vdpbf16ps) of one core, the
# path every bf16 convolution pass and the GEMM take on this CPU (AVX512-BF16
# direct, AVX512-BF16 im2col + GEMM, or reference, from kernel_bench), and both models' training at 1 and 2
# workers in fp32 and bf16, medians of REPS, with the bf16/fp32 ratio and the
# share of the bf16 limit. xlatrain's own train_bench runs both precisions in
# the same repetition loop, so they see the same machine.
set -u
B=${BENCH_DIR:-build/release/bench}
REPS=${REPS:-3}
STEPS_SEED=${STEPS_SEED:-300}
STEPS_WIDE=${STEPS_WIDE:-30}
. "$(dirname "$0")/lib.sh"

model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "== bf16 mixed precision (issue #18) — $(date -u +%Y-%m-%dT%H:%MZ), $model, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
$B/fma_limit > "$tmp/fma" 2>&1
grep -E '^fma 512|^vdpbf16ps' "$tmp/fma" | sed 's/^/  /'
FMA=$(field gflops "$(grep '^FMA_LIMIT ' "$tmp/fma")"); [ -n "$FMA" ] || FMA=nan
BF=$(field gflops "$(grep '^BF16_LIMIT ' "$tmp/fma")"); [ -n "$BF" ] || BF=nan
echo "  limits per core: fp32 FMA $FMA GFLOP/s, bf16 (vdpbf16ps) $BF GFLOP/s"

echo
echo "== the path each bf16 kernel takes here (kernel_bench; GFLOP/s per path, one core, batch 128)"
$B/kernel_bench bf16 > "$tmp/k" 2>&1
grep -E '^bf16 path|^bf16 gemm' "$tmp/k" | sed 's/^/  /'
for conv in "seed conv1" "seed conv2" "wide conv1" "wide conv2"; do
    awk -v c="bf16 $conv," 'index($0, c) == 1 {on = 1; printf "  %s:", substr(c, 6, length(c) - 6); next}
         on && /^  (fwd|bwd_data|bwd_weight):/ {p = $1; next}
         on && /->/ {sub(/.*-> /, ""); printf " %s %s", p, $0; next}
         on && /^$/ {on = 0; printf "\n"}
         END {if (on) printf "\n"}' "$tmp/k"
done
echo "  (MATMUL: the AVX512-BF16 GEMM whenever this CPU has it; AMX-BF16: not implemented, no CPU here has it)"

for m in seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for p in 1 2; do
        for prec in fp32 bf16; do : > "$tmp/$name.$p.$prec"; done
        i=0
        while [ $i -lt "$REPS" ]; do
            for prec in fp32 bf16; do
                on_cpus $p $i $B/train_bench "$spec" --procs $p --steps "$steps" --infer-steps 0 --precision $prec >> "$tmp/$name.$p.$prec" 2>>"$tmp/err" ||
                    echo "train_bench $spec --procs $p --precision $prec failed: $(tail -n 1 "$tmp/err")" >&2
            done
            i=$((i + 1))
        done
    done
done

printf '\n== training, fp32 and bf16 side by side (batch 128 per worker, %s repetitions, medians; %s)\n' "$REPS" "$model"
printf '%-9s %-5s %11s %11s %7s %10s %8s %8s %10s\n' model procs fp32_train bf16_train ratio bf16_GF/s "%bf16lim" "%fp32lim" convert_ms
for name in seed_cnn wide_cnn; do
    for p in 1 2; do
        a="$tmp/$name.$p.fp32"; b="$tmp/$name.$p.bf16"
        [ -s "$a" ] && [ -s "$b" ] || continue
        macs=$(field fwd_macs "$(head -n 1 "$b")")
        awk -v n=$name -v p=$p -v a="$(med "$a" train_sps)" -v b="$(med "$b" train_sps)" -v m="$macs" -v bf="$BF" -v f="$FMA" \
            -v c="$(med "$b" convert_ms)" 'BEGIN{ g = b*6*m/1e9;
                printf "%-9s %-5s %11.1f %11.1f %6.2fx %10.1f %7.0f%% %7.0f%% %10.3f\n", n, p, a, b, (a > 0 ? b/a : 0), g,
                       100*g/(bf*p), 100*g/(f*p), c }'
    done
done
echo "  (GFLOP/s: 6 FLOPs per forward multiply-add per trained sample, from the spec; %bf16lim / %fp32lim: share of"
echo "   that many cores' bf16 / fp32 limit; convert_ms: the step's fp32 -> bf16 casts, 1 worker's profile)"
