#!/bin/sh
# tests/bench/avx2.sh — the AVX2-only CPUs most users have (issue #59), stood in
# for on this one: xlatrain capped with XLATRAIN_ISA=avx2 (and OpenBLAS with
# OPENBLAS_CORETYPE=Haswell, which it reads as it loads) beside PyTorch capped
# the same way (ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2, which
# ../shared/bench/torch_ref.py and torch_resnet_ref.py leave to PyTorch), and the
# share of the 256-bit FMA limit that tests/bench/fma_limit.c measures.
# `make bench` runs it after the bf16 tables (tests/bench/run.sh); by hand,
# from the repository root after `make bench` built the programs:
#   sh tests/bench/avx2.sh     (REPS=3 STEPS_SEED=300 STEPS_WIDE=30 STEPS_R20=10 TORCH_SECONDS=6 by default)
# Not here: the uncapped figures (run.sh's tables of the same make bench).
set -u
TORCH_SECONDS=${TORCH_SECONDS:-6}
. "$(dirname "$0")/lib.sh"
torch_check
XCAP="XLATRAIN_ISA=avx2 OPENBLAS_CORETYPE=Haswell"
TCAP="ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2"

echo "== AVX2 cap (issue #59) — $(date -u +%Y-%m-%dT%H:%MZ), $model, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  xlatrain: $XCAP; PyTorch: $TCAP"
$B/fma_limit > "$tmp/fma" 2>&1
FMA2=$(awk '/^fma 256-bit:/ { print $3 }' "$tmp/fma")
[ -n "$FMA2" ] || FMA2=nan
echo "  the AVX2 limit: fp32 FMA 256-bit $FMA2 GFLOP/s per core (tests/bench/fma_limit.c)"

# Each repetition runs xlatrain and then PyTorch, both capped (one worker on the
# same CPU), so both see the same machine.
for m in seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE resnet20:models/resnet20.yaml:$STEPS_R20; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for p in 1 2; do
        x="$tmp/$name.$p.x"; t="$tmp/$name.$p.t"
        : > "$x"; : > "$t"
        i=0
        while [ $i -lt "$REPS" ]; do
            on_cpus $p $i env $XCAP $B/train_bench "$spec" --procs $p --steps "$steps" --infer-steps 0 >> "$x" 2>>"$tmp/err" ||
                echo "train_bench $spec --procs $p under $XCAP failed: $(tail -n 1 "$tmp/err")" >&2
            if [ $have_torch = 1 ]; then
                if [ $name = resnet20 ]; then
                    on_cpus $p $i env $TCAP /usr/bin/python3 tests/bench/torch_resnet_ref.py --procs $p \
                        --bench-seconds "$TORCH_SECONDS" 2>/dev/null | grep '^RESULT' >> "$t"
                else
                    on_cpus $p $i env $TCAP /usr/bin/python3 "$REF" --bench --model $name --threads 1 --procs $p \
                        --bench-seconds "$TORCH_SECONDS" --infer-seconds 1 > "$tmp/torch.out" 2>/dev/null
                    grep '^RESULT' "$tmp/torch.out" >> "$t"
                    grep -m1 'CPU capability' "$tmp/torch.out" | sed 's/^[# -]*//' > "$tmp/torch.cap"
                fi
            fi
            i=$((i + 1))
        done
    done
done

printf '\n== training at the AVX2 cap, side by side (batch 128 per worker, %s repetitions, medians; %s)\n' "$REPS" "$model"
[ -s "$tmp/torch.cap" ] && echo "  PyTorch reports: $(cat "$tmp/torch.cap")"
printf '%-9s %-5s %6s %11s %11s %7s %9s %8s\n' model procs isa xla_avx2 torch_avx2 ratio GFLOP/s "%avx2lim"
for name in seed_cnn wide_cnn resnet20; do
    for p in 1 2; do
        x="$tmp/$name.$p.x"; t="$tmp/$name.$p.t"
        [ -s "$x" ] || continue
        tt=nan
        [ -s "$t" ] && tt=$(tmed "$t" 'samples_per_s')
        l=$(head -n 1 "$x")
        awk -v n=$name -v p=$p -v isa="$(field isa "$l")" -v a="$(med "$x" train_sps)" -v b="$tt" -v m="$(field fwd_macs "$l")" \
            -v f="$FMA2" 'BEGIN{ r = (b+0 > 0) ? sprintf("%.2fx", a/b) : "-"; g = a*6*m/1e9;
                printf "%-9s %-5s %6s %11.1f %11s %7s %9.1f %7.0f%%\n", n, p, isa, a, b, r, g, 100*g/(f*p) }'
    done
done
[ $have_torch = 1 ] || echo "  (PyTorch reference not run: install Debian's python3-torch to compare)"
echo "  (isa: the level train_bench's kernels ran at, which must read avx2; GFLOP/s: 6 FLOPs per forward multiply-add"
echo "   per trained sample, from the spec; %avx2lim: share of that many cores' 256-bit FMA limit)"
# where the capped seed CNN step spends its time (the kernels issue #59 item 2 is about)
printf '\n== seed_cnn training step kernel by kernel at the AVX2 cap (1 worker, 20 profiled steps; train_bench --kernels 20)\n'
if env $XCAP $B/train_bench models/fashion_cnn.yaml --procs 1 --steps 5 --infer-steps 0 --kernels 20 > "$tmp/kernels" 2>>"$tmp/err"; then
    grep -v '^RESULT' "$tmp/kernels" | sed 's/^/  /'
else
    echo "train_bench --kernels under $XCAP failed: $(tail -n 1 "$tmp/err")" >&2
fi

# precision: bf16 where the CPU has no AVX512-BF16: each bf16 node's one kernel
# is the widening reference, so a measured compile keeps the nodes whose fp32
# kernel is faster in fp32 (issue #55 item 4: never slower by asking for bf16)
printf '\n== precision bf16 against fp32 at the AVX2 cap (seed CNN, 1 worker, %s repetitions interleaved, medians)\n' "$REPS"
i=0
while [ $i -lt "$REPS" ]; do
    for prec in fp32 bf16; do
        on_cpus 1 $i env $XCAP $B/train_bench models/fashion_cnn.yaml --procs 1 --steps "$STEPS_SEED" --infer-steps 0 \
            --precision $prec >> "$tmp/prec.$prec" 2>>"$tmp/err" || echo "train_bench --precision $prec under $XCAP failed" >&2
    done
    i=$((i + 1))
done
if [ -s "$tmp/prec.fp32" ] && [ -s "$tmp/prec.bf16" ]; then
    awk -v a="$(med "$tmp/prec.fp32" train_sps)" -v b="$(med "$tmp/prec.bf16" train_sps)" \
        -v k="$(field kept_fp32 "$(head -n 1 "$tmp/prec.bf16")")" \
        'BEGIN{ printf "  fp32 %.1f samples/s, bf16 %.1f (%.2fx of fp32), %s convolutions and products kept fp32\n", a, b, b/a, k }'
fi
