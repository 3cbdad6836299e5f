#!/bin/sh
# tests/bench/mpi.sh — make bench's multi-host part (only for a ./xlatrain
# built with MPI=1): the real binary on the seed CNN, synthetic data, as
# 1 host x 2 workers and as 2 MPI ranks x 1 worker on loopback. Prints
# training samples/s (results.json) and the all-reduce's share of training
# time (the AllReduceTime metric of metrics_debug, summed over the run, over
# results.json's train_time_s; it includes waiting for the slower worker).
set -u
REPS=${REPS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > "$tmp/b.yaml" <<'YAML'
dataset: synthetic
synthetic_train_size: 25600
synthetic_test_size: 1000
num_epochs: 1
batch_size: 128
log_steps: 0
metrics_debug: true
model: models/fashion_cnn.yaml
YAML
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
# "02s120ms003.000us" / "013ms352.041us" -> seconds
secs() { echo "$1" | awk '{ s = 0; if (match($0, /[0-9]+s[0-9]/)) s += substr($0, RSTART, RLENGTH - 2);
                           if (match($0, /[0-9]+ms/)) s += substr($0, RSTART, RLENGTH - 2) / 1e3;
                           if (match($0, /[0-9.]+us/)) s += substr($0, RSTART, RLENGTH - 2) / 1e6; print s }'; }
json() { sed 's/[{}]//g' "$2" | tr ',' '\n' | awk -F: -v k="\"$1\"" '$1 == k { print $2 }'; }

one() { # label dir stdout-file -> "sps share" line in $tmp/<label>
    r="$2/results.json"
    [ -f "$r" ] || { echo "  $1: no results.json (see $3)" >&2; return; }
    acc=$(grep -A2 '^Metric: AllReduceTime' "$3" | sed -n 's/.*Accumulator: //p' | tail -n 1)
    echo "$(json samples_per_sec "$r") $(secs "$acc") $(json train_time_s "$r")" >> "$tmp/$1"
}

i=0
while [ $i -lt "$REPS" ]; do
    ./xlatrain --config "$tmp/b.yaml" --set num_cores=2 --set output_dir="$tmp/a$i" > "$tmp/a$i.out" 2>&1
    one host1x2 "$tmp/a$i" "$tmp/a$i.out"
    mpirun --oversubscribe --bind-to none -np 2 --output-filename "$tmp/m$i.out" ./xlatrain --config "$tmp/b.yaml" \
        --set num_cores=1 --set output_dir="$tmp/m$i" > /dev/null 2>&1
    one ranks2x1 "$tmp/m$i" "$tmp/m$i.out/1/rank.0/stdout"
    i=$((i + 1))
done
echo "== multi-host: 1 host x 2 workers vs 2 MPI ranks x 1 worker on loopback (seed CNN, batch 128 per worker, $REPS repetitions, medians)"
for l in host1x2 ranks2x1; do
    [ -s "$tmp/$l" ] || continue
    sps=$(awk '{print $1}' "$tmp/$l" | median)
    share=$(awk '$3 > 0 {print 100 * $2 / $3}' "$tmp/$l" | median)
    printf '  %-9s %10.0f samples/s   all-reduce %5.1f%% of training time\n' "$l" "$sps" "$share"
done
