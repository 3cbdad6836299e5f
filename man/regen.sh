#!/bin/sh
# regen.sh BINARY PAGE... — rewrite the generated blocks of man pages in place.
#
# Is: for every block of a PAGE, the lines between
#   .\" BEGIN GENERATED NAME ...   and   .\" END GENERATED NAME
# become the output of `BINARY --man-block name` (src/run/man_blocks.h), so
# the page follows the key table and models/. `make man` runs it with
# ./xlatrain; tests/test_docs.c fails while a page differs from what it would
# write. Is not: a check (that is the test) or a writer of anything outside
# the blocks. A page is replaced only when every block was printed and every
# BEGIN has its END, so a failure leaves the page as it was.
set -eu
bin=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for page in "$@"; do
    for name in $(sed -n 's/^\.\\" BEGIN GENERATED \([A-Z_]*\).*/\1/p' "$page"); do
        lower=$(printf '%s' "$name" | tr 'A-Z' 'a-z')
        "$bin" --man-block "$lower" > "$tmp/$name" || {
            echo "regen.sh: $bin --man-block $lower failed; $page left as it was" >&2
            exit 1
        }
    done
    awk -v dir="$tmp" '
        /^\.\\" BEGIN GENERATED / {
            print; open = $4; f = dir "/" open
            while ((getline line < f) > 0) print line
            close(f); next
        }
        /^\.\\" END GENERATED / {
            if ($4 != open) { print FILENAME ":" FNR ": END GENERATED " $4 " without its BEGIN" > "/dev/stderr"; exit 1 }
            open = ""
        }
        open == "" { print }
        END { if (open != "") { print FILENAME ": BEGIN GENERATED " open " has no END" > "/dev/stderr"; exit 1 } }
    ' "$page" > "$tmp/page"
    if ! cmp -s "$tmp/page" "$page"; then
        cat "$tmp/page" > "$page"
        echo "regen.sh: $page: generated blocks rewritten"
    fi
done
