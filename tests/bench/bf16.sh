#!/bin/sh
# tests/bench/bf16.sh — bf16 mixed precision (issue #18) beside fp32: `make bench`
# runs it after the fp32 tables (tests/bench/run.sh); by hand, from the
# repository root after `make bench` built the programs:
#   sh tests/bench/bf16.sh            (REPS=3 STEPS_SEED=300 STEPS_WIDE=30 by default)
# Prints: the fp32 FMA limit, the bf16 limit (vdpbf16ps) and, where the CPU
# has AMX, the AMX-BF16 limit (tdpbf16ps) of one core; the path every bf16
# convolution pass and the GEMM take on this CPU by the fixed rule (from
# kernel_bench); and the seed CNN, wide_cnn and ResNet-20 training at 1 and 2
# workers in fp32 and bf16, medians of REPS, beside PyTorch in fp32 and under
# bf16 autocast (../shared/bench/torch_ref.py --bf16, torch_resnet_ref.py
# --bf16), with the bf16/fp32 ratios and the shares of the limits. Each
# repetition runs all four, so they see the same machine.
set -u
. "$(dirname "$0")/lib.sh"
torch_check

echo "== bf16 mixed precision (issue #18) — $(date -u +%Y-%m-%dT%H:%MZ), $model, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
$B/fma_limit > "$tmp/fma" 2>&1
grep -E '^fma 512|^vdpbf16ps|^tdpbf16ps' "$tmp/fma" | sed 's/^/  /'
FMA=$(field gflops "$(grep '^FMA_LIMIT ' "$tmp/fma")"); [ -n "$FMA" ] || FMA=nan
BF=$(field gflops "$(grep '^BF16_LIMIT ' "$tmp/fma")"); [ -n "$BF" ] || BF=nan
AMX=$(field gflops "$(grep '^AMX_LIMIT ' "$tmp/fma")"); [ -n "$AMX" ] || AMX=0
echo "  limits per core: fp32 FMA $FMA GFLOP/s, bf16 (vdpbf16ps) $BF GFLOP/s, AMX-BF16 (tdpbf16ps) $AMX GFLOP/s (0: no AMX)"

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
echo "  (MATMUL: the AVX512-BF16 GEMM whenever this CPU has it; the fixed rule only: runs measure every candidate,"
echo "   oneDNN's among them, and keep the fastest, AMX where the CPU has it)"

# torch_pair NAME PROCS I: PyTorch fp32 then bf16 autocast for one repetition
torch_pair() {
    [ $have_torch = 1 ] || return 0
    for prec in fp32 bf16; do
        flag=; [ $prec = bf16 ] && flag=--bf16
        if [ "$1" = resnet20 ]; then
            on_cpus $2 $3 /usr/bin/python3 tests/bench/torch_resnet_ref.py --procs $2 --bench-seconds 8 $flag 2>/dev/null
        else
            on_cpus $2 $3 /usr/bin/python3 "$REF" --bench --model "$1" --threads 1 --procs $2 --bench-seconds 6 \
                --infer-seconds 1 $flag 2>/dev/null
        fi | grep '^RESULT' >> "$tmp/t.$1.$2.$prec"
    done
}

for m in seed_cnn:models/fashion_cnn.yaml:$STEPS_SEED wide_cnn:models/wide_cnn.yaml:$STEPS_WIDE resnet20:models/resnet20.yaml:$STEPS_R20; do
    name=${m%%:*}; rest=${m#*:}; spec=${rest%%:*}; steps=${rest#*:}
    for p in 1 2; do
        for prec in fp32 bf16; do : > "$tmp/$name.$p.$prec"; : > "$tmp/t.$name.$p.$prec"; done
        i=0
        while [ $i -lt "$REPS" ]; do
            for prec in fp32 bf16; do
                on_cpus $p $i $B/train_bench "$spec" --procs $p --steps "$steps" --infer-steps 0 --precision $prec >> "$tmp/$name.$p.$prec" 2>>"$tmp/err" ||
                    echo "train_bench $spec --procs $p --precision $prec failed: $(tail -n 1 "$tmp/err")" >&2
            done
            torch_pair $name $p $i
            i=$((i + 1))
        done
    done
done

printf '\n== training, fp32 and bf16 side by side, xlatrain and PyTorch (batch 128 per worker, %s repetitions, medians; %s)\n' "$REPS" "$model"
printf '%-9s %-5s %10s %10s %6s %10s %10s %6s %9s %9s %8s %8s %7s\n' model procs xla_fp32 xla_bf16 ratio torch_fp32 torch_bf16 ratio \
    fp32/torch bf16/torch bf16_GF/s "%bf16lim" "%amxlim"
for name in seed_cnn wide_cnn resnet20; do
    for p in 1 2; do
        a="$tmp/$name.$p.fp32"; b="$tmp/$name.$p.bf16"
        [ -s "$a" ] && [ -s "$b" ] || continue
        macs=$(field fwd_macs "$(head -n 1 "$b")")
        tf=nan; tb=nan
        [ -s "$tmp/t.$name.$p.fp32" ] && tf=$(tmed "$tmp/t.$name.$p.fp32" samples_per_s)
        [ -s "$tmp/t.$name.$p.bf16" ] && tb=$(tmed "$tmp/t.$name.$p.bf16" samples_per_s)
        [ -n "$tf" ] || tf=nan; [ -n "$tb" ] || tb=nan
        awk -v n=$name -v p=$p -v a="$(med "$a" train_sps)" -v b="$(med "$b" train_sps)" -v tf="$tf" -v tb="$tb" -v m="$macs" \
            -v bf="$BF" -v amx="$AMX" 'function r(x, y) { return (x + 0 > 0 && y + 0 > 0) ? sprintf("%.2fx", x / y) : "-" }
            BEGIN{ g = b*6*m/1e9;
                printf "%-9s %-5s %10.1f %10.1f %6s %10s %10s %6s %9s %9s %8.1f %7.0f%% %6s\n", n, p, a, b, r(b, a), tf, tb, r(tb, tf),
                       r(a, tf), r(b, tb), g, 100*g/(bf*p), (amx + 0 > 0) ? sprintf("%.1f%%", 100*g/(amx*p)) : "-" }'
    done
done
echo "  (ratio: bf16 / fp32 of the same trainer; fp32/torch, bf16/torch: xlatrain / PyTorch in that precision (PyTorch bf16:"
echo "   torch.autocast on the CPU, oneDNN with AMX where the CPU has it); GFLOP/s: 6 FLOPs per forward multiply-add per trained"
echo "   sample, from the spec; %bf16lim / %amxlim: share of that many cores' vdpbf16ps / tdpbf16ps limit)"
x="$tmp/resnet20.1.bf16"
if [ -s "$x" ]; then
    l=$(head -n 1 "$x")
    echo "  ResNet-20 bf16, 1 worker: kernel choice $(field kernel_choice "$l"), $(field kept_fp32 "$l") nodes kept fp32 where faster"
fi

# Which implementation each of ResNet-20's bf16 nodes got (engine/kernel_report.c): on a CPU with AMX the big
# convolutions should read onednn-bf16-blocked [brgconv:avx512_core_amx_bf16]; elsewhere the fastest of the rest.
printf '\n== ResNet-20 bf16 training step kernel by kernel (1 worker, 10 profiled steps; train_bench --precision bf16 --kernels 10)\n'
if $B/train_bench models/resnet20.yaml --procs 1 --steps 3 --infer-steps 0 --precision bf16 --kernels 10 > "$tmp/kernels" 2>>"$tmp/err"; then
    grep -v '^RESULT' "$tmp/kernels" | sed 's/^/  /'
else
    echo "train_bench models/resnet20.yaml --kernels failed: $(tail -n 1 "$tmp/err")" >&2
fi
