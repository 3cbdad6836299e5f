# lib.sh — what the bench scripts share (sourced by run.sh, ab.sh, bf16.sh):
# one BLAS thread per worker, a scratch directory removed on exit ($tmp), and
# the helpers that read train_bench's "RESULT key=value ..." lines.
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# field NAME LINE -> value of NAME=... in a RESULT line
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
med() { # file key -> the median of key over the file's RESULT lines
    while read -r l; do field "$2" "$l"; done < "$1" | median
}
