#!/bin/sh
# make bench — xlatrain and the PyTorch reference measured side by side in one
# run (the machines are shared and noisy: compare ratios, not absolutes).
# Medians of REPS repetitions. PyTorch needs Debian's python3-torch and
# /usr/bin/python3; without it xlatrain's figures are printed alone.
set -u
. "$(dirname "$0")/lib.sh"
torch_check

# Each repetition runs xlatrain and then PyTorch (on the same CPU for one
# worker), so both see the same machine: RESULT lines in $tmp/x.<spec>.<procs>
# and $tmp/t.<name>.<procs>.
run_pair() { # name spec procs steps
    x="$tmp/x.$(basename "$2" .yaml).$3"; t="$tmp/t.$1.$3"
    : > "$x"; : > "$t"
    i=0
    while [ $i -lt "$REPS" ]; do
        on_cpus "$3" $i $B/train_bench "$2" --procs "$3" --steps "$4" --infer-steps 10 >> "$x" 2>>"$tmp/err" ||
            echo "train_bench $2 --procs $3 failed: $(tail -n 1 "$tmp/err")" >&2
        [ $have_torch = 1 ] && on_cpus "$3" $i /usr/bin/python3 "$REF" --bench --model "$1" --threads 1 --procs "$3" \
            --bench-seconds 6 --infer-seconds 3 2>/dev/null | grep '^RESULT' >> "$t"
        i=$((i + 1))
    done
}

echo "xlatrain benchmark — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $REPS repetitions (medians)"
echo
echo "== the arithmetic limit: fp32 FMA throughput of one core (tests/bench/fma_limit.c)"
FMA=nan
if [ -x $B/fma_limit ]; then
    $B/fma_limit --cores "$(nproc)" > "$tmp/fma" 2>&1
    grep -v '^FMA_LIMIT' "$tmp/fma"
    FMA=$(field gflops "$(grep '^FMA_LIMIT ' "$tmp/fma")")
    BUSY=$(field gflops "$(grep '^FMA_LIMIT_BUSY ' "$tmp/fma")")
    echo "  FMA limit: $FMA GFLOP/s per core on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores here;" \
        "${BUSY:-not measured} per core with all of them busy; the shares below are of the one-core limit)"
fi
[ -n "$FMA" ] || FMA=nan
echo
echo "== sgemm (one core; a second reference: it depends on the kernels OpenBLAS picked for this CPU) and kernels"
if [ -x $B/kernel_bench ]; then
    $B/kernel_bench > "$tmp/kernels" 2>&1
    grep -i '^sgemm' "$tmp/kernels"
    echo "  the engine's MATMUL (k_sgemm, src/kernels/sgemm.c) beside OpenBLAS on the models' linear layers:"
    grep '^matmul' "$tmp/kernels"
    grep -v -i -e '^sgemm' -e '^matmul' "$tmp/kernels" | tail -n 25
fi
PEAK=$(grep -i '^sgemm 1024' "$tmp/kernels" 2>/dev/null | awk '{for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") print $(i-1)}')
[ -n "$PEAK" ] || PEAK=nan
echo
echo "== loader (batch 128), and the folder dataset's first pass and cache beside IDX (#58)"
[ -x $B/loader_bench ] && $B/loader_bench 2>&1 | grep -v '^synthetic:' 
echo
echo "== all-reduce"
[ -x $B/allreduce_bench ] && $B/allreduce_bench 2>&1 | tail -n 8
echo

for m in seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for p in 1 2; do run_pair "$name" "$spec" $p "$steps"; done
done

printf '\n== training and inference, side by side (batch 128 per worker; inference batch 1000)\n'
printf '%-9s %-5s %12s %12s %7s %12s %12s %7s %8s %8s\n' model procs xla_train torch_train ratio xla_infer torch_infer ratio xla_rss torch_rss
for name in seed_cnn wide_cnn; do
    spec=fashion_cnn; [ $name = wide_cnn ] && spec=wide_cnn
    for p in 1 2; do
        x="$tmp/x.$spec.$p"; t="$tmp/t.$name.$p"
        xt=$(med "$x" train_sps); xi=$(med "$x" infer_sps); xr=$(med "$x" rss_mb)
        tt=nan; ti=nan; tr=nan
        if [ -s "$t" ]; then
            tt=$(tmed "$t" 'samples_per_s'); ti=$(tmed "$t" 'infer_samples_per_s'); tr=$(tmed "$t" 'peak_rss_mb|rss_max_mb|rss_mb')
        fi
        r1=$(awk -v a="$xt" -v b="$tt" 'BEGIN{ if (b+0>0) printf "%.2fx", a/b; else print "-" }')
        r2=$(awk -v a="$xi" -v b="$ti" 'BEGIN{ if (b+0>0) printf "%.2fx", a/b; else print "-" }')
        printf '%-9s %-5s %12s %12s %7s %12s %12s %7s %8s %8s\n' $name $p "$xt" "$tt" "$r1" "$xi" "$ti" "$r2" "$xr" "$tr"
    done
done
[ $have_torch = 1 ] || echo "(PyTorch reference not run: install Debian's python3-torch to compare)"

printf '\n== the seed CNN step, 1 worker: where the time goes (ms per step, medians)\n'
x="$tmp/x.fashion_cnn.1"
for k in step_ms trace_ms host_ms exec_ms conv_ms gemm_ms pool_ms norm_ms ew_ms reduce_ms allreduce_ms other_ms; do
    printf '  %-14s %8s\n' "$k" "$(med "$x" $k)"
done
echo "  (step_ms .. exec_ms: the timed steps; conv_ms .. other_ms: the kernel classes of a separate pass with"
echo "   every kernel timed, PROFILED_STEPS_MIN steps in train_bench.c, so they need not sum to the step)"
st=$(med "$x" step_ms); tr=$(med "$x" trace_ms)
awk -v s="$st" -v t="$tr" 'BEGIN{ printf "  trace+hash+lookup (trace_ms) = %.2f%% of the step (goal < 1%%)\n", 100*t/s }'
l=$(head -n 1 "$x")
echo "  IR nodes $(field ir_nodes "$l") -> kernels $(field kernels "$l") ($(field fused "$l") fused elementwise groups)"
echo "  arena $(field arena_kb "$l") KiB for $(field intermediates_kb "$l") KiB of intermediates"
x2="$tmp/x.fashion_cnn.2"
awk -v a="$(med "$x2" train_sps)" -v b="$(med "$x" train_sps)" -v ar="$(med "$x2" allreduce_ms)" -v s2="$(med "$x2" step_ms)" \
    'BEGIN{ if (b>0) printf "  scaling 1 -> 2 workers: %.2fx (goal >= 1.85x); all-reduce %.2f%% of the 2-worker step (goal < 2%%)\n", a/b, 100*ar/s2 }'
echo "  (the all-reduce share includes waiting at its barrier for the slower worker; the zero-copy collective itself: see == all-reduce)"

# The per-kernel table (engine/kernel_report.c) of both models' training step:
# which convolution pass or GEMM is how far from the FMA limit, and what else
# the step spends its time on. One run of 20 profiled steps each, 1 worker.
for m in seed_cnn:models/fashion_cnn.yaml wide_cnn:models/wide_cnn.yaml; do
    printf '\n== %s training step kernel by kernel (1 worker, 20 profiled steps; train_bench --kernels 20)\n' "${m%%:*}"
    if $B/train_bench "${m#*:}" --procs 1 --steps 5 --infer-steps 0 --kernels 20 > "$tmp/kernels" 2>>"$tmp/err"; then
        grep -v '^RESULT' "$tmp/kernels" | sed 's/^/  /'
    else
        echo "train_bench ${m#*:} --kernels failed: $(tail -n 1 "$tmp/err")" >&2
    fi
done

printf '\n== against the FMA limit (%s GFLOP/s per core; FLOPs from each spec: 2 per multiply-add, training = 3x forward)\n' "$FMA"
for name in seed_cnn wide_cnn; do
    spec=fashion_cnn; [ $name = wide_cnn ] && spec=wide_cnn
    for p in 1 2; do
        x="$tmp/x.$spec.$p"
        [ -s "$x" ] || continue
        macs=$(field fwd_macs "$(head -n 1 "$x")")
        ex=$(field sample_macs_executed "$(head -n 1 "$x")")
        awk -v n=$name -v p=$p -v m="$macs" -v e="${ex:-0}" -v t="$(med "$x" train_sps)" -v i="$(med "$x" infer_sps)" -v f="$FMA" -v s="$PEAK" \
            'BEGIN{ tf=t*6*m/1e9; inf=i*2*m/1e9; te=t*2*e/1e9;
                    printf "  %-9s %d worker(s): %.3f MFLOP/sample; train %6.1f GFLOP/s = %5.1f%% of the FMA limit of %d core(s) (%3.0f%% of sgemm); infer %6.1f GFLOP/s = %5.1f%%\n",
                           n, p, 6*m/1e6, tf, 100*tf/(f*p), p, 100*tf/(s*p), inf, 100*inf/(f*p);
                    if (e > 0) printf "  %-9s %d worker(s): executed %.3f MFLOP/sample (the passes as run); train %6.1f GFLOP/s = %5.1f%% of the FMA limit\n",
                                      "", p, 2*e/1e6, te, 100*te/(f*p) }'
    done
done
echo "  (the first line counts the model's FLOPs, 3x the forward, as the issue and PyTorch-style MFU figures do;"
echo "   the second what the kernels multiply: no backward-data for a first layer, and under a max pool a weight"
echo "   gradient and a backward-data that visit only the kept pixel of each window, a quarter of the dense"
echo "   multiply-adds, the backward-data's counted as if no gradient were zero, though it skips those too; as"
echo "   they skip work, the first line can pass 100%)"

printf '\n== the seed CNN across batch sizes (1 worker, 51,200 samples per point, %s repetitions, medians; ratio to batch 128)\n' "$REPS"
# each repetition runs every batch size, and batch 1024 once more with tiling off (XLATRAIN_NO_TILING=1), all
# on one CPU (repetition i on cpu_of(i), lib.sh), so a repetition's ratios compare runs that saw the same core
# at nearly the same time; the ratio printed is the median of the repetitions' own ratios (until 2026-11-28
# the ratio of the medians, over unpinned runs: the two vCPUs here then differed by up to 20%). Each point
# trains 51,200 samples (about 0.8 s; 25,600 until 2026-11-27: a burst of another machine's load then
# decided a point more often), its steps cycling over 8 distinct batches (train_bench's --batches default;
# one batch until 2026-11-29, which kept batch 128's images in L2 from step to step: tests/bench/HISTORY.md)
# what one core reads per second by footprint (tests/bench/read_bw.c): where its L3 share ends on this
# machine today, which is what the large batches' arenas (plus their images) are set against
if [ -x $B/read_bw ]; then
    $B/read_bw > "$tmp/read_bw" 2>/dev/null
    awk '/^READ_BW/ { split($2, m, "="); split($3, g, "="); split($4, w, "="); s = s sep m[2] " MB " sprintf("%.0f", g[2]); sep = ", "; width = w[2] }
         END { if (s != "") printf "  one core reads (GB/s, by footprint; %s loads, tests/bench/read_bw.c): %s\n", width, s }' "$tmp/read_bw"
fi
SWEEP="16 32 64 128 256 512 1024 1024u"
for bsz in $SWEEP; do : > "$tmp/sweep.$bsz"; : > "$tmp/ratio.$bsz"; done
i=0
while [ $i -lt "$REPS" ]; do
    for bsz in $SWEEP; do
        b=${bsz%u}; nt=0; [ "$bsz" = "$b" ] || nt=1
        l=$(pinned $i env XLATRAIN_NO_TILING=$nt $B/train_bench models/fashion_cnn.yaml --procs 1 --batch $b \
            --steps $((51200 / b)) --infer-steps 0 2>>"$tmp/err" | grep '^RESULT')
        [ -n "$l" ] || echo "train_bench --batch $b failed: $(tail -n 1 "$tmp/err")" >&2
        echo "$l" > "$tmp/rep.$bsz"
        [ -n "$l" ] && echo "$l" >> "$tmp/sweep.$bsz"
    done
    r=$(field train_sps "$(cat "$tmp/rep.128")")
    for bsz in $SWEEP; do
        v=$(field train_sps "$(cat "$tmp/rep.$bsz")")
        [ -n "$v" ] && [ -n "$r" ] && awk -v v="$v" -v r="$r" 'BEGIN{ printf "%.3f\n", v / r }' >> "$tmp/ratio.$bsz"
    done
    i=$((i + 1))
done
for bsz in $SWEEP; do
    [ -s "$tmp/sweep.$bsz" ] || continue
    l=$(head -n 1 "$tmp/sweep.$bsz")
    note="micro-batch tiles of $(field tile_rows "$l")-$(field tile_rows_max "$l") samples ($(field tiled_kernels "$l") kernels in $(field tile_runs "$l") stretches)"
    [ "$(field tile_runs "$l")" = 0 ] && note="not tiled"
    [ "$bsz" = 1024u ] && note="tiling off (XLATRAIN_NO_TILING=1)"
    awk -v b=${bsz%u} -v v="$(med "$tmp/sweep.$bsz" train_sps)" -v r="$(median < "$tmp/ratio.$bsz")" -v n="$note" \
        -v a="$(med "$tmp/sweep.$bsz" arena_kb)" -v x="$(field input_kb "$l")" -v each="$(tr '\n' ' ' < "$tmp/ratio.$bsz" | sed 's/ $//')" \
        'BEGIN{ printf "  batch %5d: %9.1f samples/s  %.3f of batch 128 (%s)  arena %5.1f MB + images %4.1f MB  %s\n", b, v, r, each, a / 1024, x / 1024, n }'
done

printf '\n== data wait in a real training run (synthetic 25,600 images, 1 epoch, 1 and 2 workers)\n'
for p in 1 2; do
    ./xlatrain --config configs/smoke.yaml --set synthetic_train_size=25600 --set synthetic_test_size=1000 --set num_epochs=1 \
        --set num_cores=$p --set log_steps=0 --set target_accuracy=0 --set output_dir="$tmp/run$p" >/dev/null 2>&1
    r="$tmp/run$p/results.json"
    if [ -f "$r" ]; then
        sed 's/[{}]//g' "$r" | tr ',' '\n' | awk -F: -v p=$p '/"train_time_s"/{t=$2} /"data_wait_s"/{w=$2} /"samples_per_sec"/{s=$2}
            END{ printf "  %d worker(s): %.0f samples/s end to end; data wait %.3f s of %.3f s training (%.1f%%)\n", p, s, w, t, 100*w/t }'
    fi
done

# ResNet-20 (models/resnet20.yaml) on synthetic 3x32x32 batches, beside PyTorch's
# same network (tests/bench/torch_resnet_ref.py); each repetition runs xlatrain
# and then PyTorch, so both see the same machine (one worker: the same CPU).
printf '\n== ResNet-20 training (synthetic 3x32x32, batch 128 per worker, %s repetitions, medians; PyTorch: tests/bench/torch_resnet_ref.py)\n' "$REPS"
for p in 1 2; do
    : > "$tmp/r20x.$p"
    : > "$tmp/r20t.$p"
    i=0
    while [ $i -lt "$REPS" ]; do
        on_cpus $p $i $B/train_bench models/resnet20.yaml --procs $p --steps "$STEPS_R20" --infer-steps 0 >> "$tmp/r20x.$p" 2>>"$tmp/err" ||
            echo "train_bench resnet20 --procs $p failed: $(tail -n 1 "$tmp/err")" >&2
        [ $have_torch = 1 ] && on_cpus $p $i /usr/bin/python3 tests/bench/torch_resnet_ref.py --procs $p --bench-seconds 8 2>/dev/null |
            grep '^RESULT' >> "$tmp/r20t.$p"
        i=$((i + 1))
    done
done
printf '%-9s %-5s %12s %12s %7s %10s %8s %7s %9s\n' model procs xla_train torch_train ratio GFLOP/s "%FMA" graphs step_ms
for p in 1 2; do
    x="$tmp/r20x.$p"
    [ -s "$x" ] || continue
    xt=$(med "$x" train_sps); tt=nan
    [ -s "$tmp/r20t.$p" ] && tt=$(tmed "$tmp/r20t.$p" 'samples_per_s')
    macs=$(field fwd_macs "$(head -n 1 "$x")")
    awk -v p=$p -v a="$xt" -v b="$tt" -v m="$macs" -v f="$FMA" -v g="$(field graphs "$(head -n 1 "$x")")" -v s="$(med "$x" step_ms)" \
        'BEGIN{ r = (b+0 > 0) ? sprintf("%.2fx", a/b) : "-"; gf = a*6*m/1e9;
                printf "%-9s %-5s %12s %12s %7s %10.1f %7.0f%% %7s %9s\n", "resnet20", p, a, b, r, gf, 100*gf/(f*p), g, s }'
done
echo "  (FLOPs from models/resnet20.yaml via xt_spec_forward_macs: 6 per multiply-add of the forward pass per trained sample;"
echo "   %FMA: share of the FMA limit of that many cores; graphs: distinct graphs compiled, 1 = the train step compiled once)"
x="$tmp/r20x.1"
if [ -s "$x" ]; then
    printf '  1-worker step split (ms):'
    for k in conv_ms ew_ms norm_ms reduce_ms pool_ms other_ms trace_ms; do printf ' %s %s' "${k%_ms}" "$(med "$x" $k)"; done
    printf '\n'
fi

# bf16 mixed precision beside fp32 (issue #18)
echo
BENCH_DIR=$B REPS=$REPS STEPS_SEED=$STEPS_SEED STEPS_WIDE=$STEPS_WIDE sh tests/bench/bf16.sh

# measured kernel choice beside the fixed rules (issue #55)
echo
BENCH_DIR=$B REPS=$REPS STEPS_SEED=$STEPS_SEED STEPS_WIDE=$STEPS_WIDE STEPS_R20=$STEPS_R20 sh tests/bench/choice.sh

# the AVX2-only CPUs most users have, stood in for by capping this one (issue #59)
echo
BENCH_DIR=$B REPS=$REPS STEPS_SEED=$STEPS_SEED STEPS_WIDE=$STEPS_WIDE STEPS_R20=$STEPS_R20 sh tests/bench/avx2.sh

# multi-host figures when ./xlatrain was built with make MPI=1 (tests/bench/mpi.sh)
if ./xlatrain --version | grep -q 'Open MPI' && command -v mpirun >/dev/null 2>&1; then
    echo
    sh tests/bench/mpi.sh
else
    printf '\n(multi-host figures: make MPI=1 bench)\n'
fi
