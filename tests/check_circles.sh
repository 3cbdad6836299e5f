#!/bin/sh
# check_circles.sh — fails when .c files depend on each other in a circle.
#
#   sh tests/check_circles.sh OBJ_DIR [SRC_DIR]      (SRC_DIR: src)
#
# Each .c file under SRC_DIR is a node; SRC_DIR/P.c's object is
# OBJ_DIR/SRC_DIR/P.o, as the Makefile's $(REL_DIR)/%.o: %.c builds it (so
# run it from the top of the tree the objects were built from, after the
# build: a stale object shows stale edges). A.c -> B.c when
#   - A's object references a global symbol B's object defines (nm), or
#   - A.c #includes B.h, the header beside B.c: A uses B's types or inline code.
# A strongly connected component of two or more files is a circle: neither
# side can be understood, tested or replaced without the other, which is
# what layering is for. Each circle is reported on one line, with an edge
# that closes it from each file, and the exit status is 1; 0 when there is
# none; 2 on a usage error or when no object is found (build first: a check
# that finds nothing to check must not pass).
#
# What it is not: a check of headers on their own (a header with no .c
# beside it is no node; its inline code shows in the objects that use it),
# nor of tests/ or the benchmarks.
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: sh tests/check_circles.sh OBJ_DIR [SRC_DIR]" >&2
    exit 2
fi
obj=${1%/} src=${2:-src}
src=${src%/}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_circles.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM

find "$src" -name '*.c' | sort > "$tmp/sources"
# A .c without an object is one this build leaves out (cluster_mpi.c
# without MPI=1): its symbols are nobody's, but its includes still count.
while read -r c; do
    o=$obj/${c%.c}.o
    [ -f "$o" ] && echo "$o"
done < "$tmp/sources" > "$tmp/objects"
if [ ! -s "$tmp/objects" ]; then
    echo "check_circles: no objects of $src/*.c under $obj (build first)" >&2
    exit 2
fi
# -A: each line starts with its object; -g: global symbols (defined and
# undefined) only, as no other object can reference a local one.
# shellcheck disable=SC2046
if ! nm -A -P -g $(cat "$tmp/objects") > "$tmp/nm"; then
    echo "check_circles: nm failed on the objects under $obj" >&2
    exit 2
fi

# Edges, one a line: "A.c B.c why" (why: the first symbol or include seen).
awk -v obj="$obj/" '
    {
        f = $1
        sub(/:$/, "", f)
        f = substr(f, length(obj) + 1)
        sub(/\.o$/, ".c", f)
        if ($3 == "U" || $3 == "w") { nref++; rfile[nref] = f; rsym[nref] = $2 }
        else if (!($2 in def)) def[$2] = f
    }
    END {
        for (i = 1; i <= nref; i++)
            if ((rsym[i] in def) && def[rsym[i]] != rfile[i]) print rfile[i], def[rsym[i]], rsym[i]
    }' "$tmp/nm" > "$tmp/edges"
# #include "x.h": beside the including file, else under SRC_DIR (-Isrc).
awk -v src="$src/" '
    FNR == NR { is_c[$0] = 1; next }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
        split($0, q, "\"")
        dir = FILENAME
        sub(/[^\/]*$/, "", dir)
        h = dir q[2]
        if (!(h ~ /\.h$/)) next
        c = h
        sub(/\.h$/, ".c", c)
        if (!(c in is_c)) {
            c = src q[2]
            sub(/\.h$/, ".c", c)
        }
        if ((c in is_c) && c != FILENAME) print FILENAME, c, "#include:" q[2]
    }' "$tmp/sources" $(cat "$tmp/sources") >> "$tmp/edges"

# Tarjan's strongly connected components over the edges.
awk '
    function strong(v,   i, w, n, members, k, j, t, why, line) {
        idx[v] = low[v] = ++counter
        stack[++sp] = v
        onstack[v] = 1
        for (i = 1; i <= nout[v]; i++) {
            w = out[v, i]
            if (!(w in idx)) {
                strong(w)
                if (low[w] < low[v]) low[v] = low[w]
            } else if (onstack[w] && idx[w] < low[v]) low[v] = idx[w]
        }
        if (low[v] != idx[v]) return
        n = 0
        do {
            w = stack[sp--]
            onstack[w] = 0
            members[++n] = w
            comp[w] = v
        } while (w != v)
        if (n < 2) return
        for (k = 2; k <= n; k++)            # insertion sort: a stable order
            for (j = k; j > 1 && members[j - 1] > members[j]; j--) {
                t = members[j]; members[j] = members[j - 1]; members[j - 1] = t
            }
        line = "check_circles: circle of " n " files: " members[1]
        for (k = 2; k <= n; k++) line = line " " members[k]
        why = ""
        for (k = 1; k <= n; k++)            # one edge inside the circle from each file
            for (i = 1; i <= nout[members[k]]; i++) {
                w = out[members[k], i]
                if ((w in comp) && comp[w] == v) {
                    why = why (why == "" ? "" : "; ") members[k] " -> " w " (" reason[members[k], w] ")"
                    break
                }
            }
        print line " [" why "]"
        circles++
    }
    {
        if (($1, $2) in reason) next
        reason[$1, $2] = $3
        out[$1, ++nout[$1]] = $2
        if (!($1 in seen)) { seen[$1] = 1; order[++nnodes] = $1 }
    }
    END {
        for (k = 1; k <= nnodes; k++)
            if (!(order[k] in idx)) strong(order[k])
        exit circles ? 1 : 0
    }' "$tmp/edges"
