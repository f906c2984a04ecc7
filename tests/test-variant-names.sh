#!/bin/sh
# test-variant-names.sh — every variant's name is spelt in its own file only.
#
# A variant (a policy, topology, collective algorithm, straggler model,
# optimizer, model kind or data set) is one file plus one registry line that
# names its C symbol, so its name as a string literal ("ring", with the
# quotes; comments count too) belongs in that file and in no other C source
# outside tests/, bench/ and fuzz/.  Another file that needs the variant's
# behaviour asks its registry entry (a flag or a hook), never its name.
#
# The names come from the registries themselves: the choices `dtsim keys`
# lists for each family's key.  A registry key's default is left unset in
# the key table and means the registry's first entry (base/keys.h), so no
# default spells a variant's name either.
#
# The same word may name something of another family: the topology "ring"
# and the collective algorithm "ring", gossip's graph "ring", the straggler
# model "none" and the contention "none".  A file may therefore hold a name
# where it defines that word, and only there:
#   .name = "N"            a registry entry (its own file)
#   #define X_NAME "N"     the same through a macro
#   "N", "description"     a registry entry written by position
#   { "N", VALUE, FALSE }  a choice of an enumerated key (BaseChoice)
#   ... BASE_KEY_ENUM, 0, "N"   an enumerated key's own default
#   { "section", "N", ...  or .key = "N"   a scenario key called N
# A file that defines N as a registry entry is N's own file and may spell it
# anywhere.  Every other line holding "N" is printed as file:line.  A name
# may have at most as many own files as the keys that list it (registry
# keys, and enumerated keys that take it as a keyword): two entries of one
# variant is a violation too.
#
# Environment (AM_TESTS_ENVIRONMENT in Makefile.am): DTSIM_BIN, the dtsim to
# ask; DTSIM_SRCDIR, the source tree to read.  Output is TAP.

set -u
: "${DTSIM_BIN:?DTSIM_BIN names the dtsim binary (run through make check)}"
: "${DTSIM_SRCDIR:?DTSIM_SRCDIR names the source tree (run through make check)}"

# One key names its default variant: [model] kind's default, softmax, is
# its registry's second entry (linear, softmax, mlp, timing), and making it
# the first would change the order in which `dtsim keys`, the manual and the
# error messages list the kinds; so that key row alone may spell it.
named_defaults="model.kind"

# The families this rule covers, as "section.key" of their registry key.
families="policy.kind network.topology policy.algorithm stragglers.model
model.optimizer model.kind model.dataset"

echo "1..3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-names.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# "section.key<TAB>kind<TAB>choice" for every choice of every key with
# choices: kind "name" for a registry key (its entries' descriptions follow
# its doc as "`name`: ..."), "enum" otherwise.
if ! "$DTSIM_BIN" keys | awk '
    /^### \[[a-z_]+\]$/ { section = substr ($2, 2, length ($2) - 2); next }
    /^## / { section = "" }
    section != "" && /^[|] `/ {
      line = $0
      gsub (/ \\[|] /, "\001", line)    # "a \| b": the choices of one cell
      n = split (line, cell, / [|] /)
      key = cell[1]; gsub (/^[|] `|`$/, "", key)
      if (cell[2] !~ /\001/)
        next
      m = split (cell[2], c, "\001")
      # a registry key lists its entries after its doc as "`name`: ..."
      kind = index (cell[4], "`" c[1] "`: ") ? "name" : "enum"
      for (i = 1; i <= m; i++)
        printf "%s.%s\t%s\t%s\n", section, key, kind, c[i]
    }' > "$work/choices" || ! [ -s "$work/choices" ]; then
  echo "not ok 1 - dtsim keys lists the families' names"
  echo "# $DTSIM_BIN keys failed or listed no choices"
  exit 0
fi

missing=""
for f in $families; do
  grep -q "^$f	name	" "$work/choices" || missing="$missing $f"
done
if [ -n "$missing" ]; then
  echo "not ok 1 - dtsim keys lists the families' names"
  echo "# no registry choices for:$missing"
  exit 0
fi
echo "ok 1 - dtsim keys lists the families' names"

# The C sources the rule covers: all but the tests, benchmarks, fuzzers and
# build trees.
find "$DTSIM_SRCDIR" \( -path "$DTSIM_SRCDIR/tests" -o -path "$DTSIM_SRCDIR/bench" \
       -o -path "$DTSIM_SRCDIR/fuzz" -o -name '.git' -o -name build -o -name '_build' \
       -o -name 'dtsim-resources.c' \) -prune -o \( -name '*.c' -o -name '*.h' \) -print \
  | sort > "$work/sources"

: > "$work/violations"
: > "$work/twice"
for f in $families; do
  for name in $(awk -F '\t' -v f="$f" '$1 == f && $2 == "name" { print $3 }' "$work/choices"); do
    q=$(printf '%s' "$name" | sed 's/[.[\*^$+?(){}|/]/\\&/g')
    entry="(\\.name *= *\"$q\"|#define [A-Z0-9_]+ +\"$q\"|^[ {]*\"$q\", *\"|= *\\{ *\"$q\", *\")"
    other="(\\{ *\"$q\", *[A-Za-z0-9_]+, *(TRUE|FALSE) *\\}|BASE_KEY_ENUM, *0, *\"$q\"|\\{ *\"[a-z_]+\", *\"$q\",|\\.key *= *\"$q\")"
    case " $named_defaults " in
      *" $f "*)
        sec=${f%%.*} key=${f#*.}
        other="$other|\\{ *\"$sec\", *\"$key\", *BASE_KEY_NAME, *0, *\"$q\","
        other="($other)" ;;
    esac
    own=0
    xargs grep -l -F "\"$name\"" < "$work/sources" > "$work/files" 2>/dev/null
    while IFS= read -r file; do
      rel=${file#"$DTSIM_SRCDIR"/}
      if grep -q -E "$entry" "$file"; then
        own=$((own + 1))
        continue
      fi
      grep -n -F "\"$name\"" "$file" | grep -v -E "$other" \
        | sed "s|^|$rel:|; s|\$|   ($f $name)|" >> "$work/violations"
    done < "$work/files"
    # the keys that list this name: registry keys (families) of any
    # section, and enumerated keys whose keyword it is too ("auto" names a
    # collective selector, a protocol selector and the keyword of keys such
    # as [policy] channels, spelt once for them in base/keys.h)
    fams=$(awk -F '\t' -v n="$name" '$3 == n' "$work/choices" | wc -l)
    if [ "$own" -gt "$fams" ]; then
      echo "\"$name\" ($f) is defined as an entry in $own files for $fams families:" \
           $(xargs grep -l -E "$entry" < "$work/files" | sed "s|^$DTSIM_SRCDIR/||") >> "$work/twice"
    fi
  done
done

if [ -s "$work/violations" ]; then
  echo "not ok 2 - each variant's name is spelt only in its own file"
  echo "# a file other than the variant's own spells its name; ask the registry entry instead:"
  sort -u "$work/violations" | sed 's/^/# /'
else
  echo "ok 2 - each variant's name is spelt only in its own file"
fi
if [ -s "$work/twice" ]; then
  echo "not ok 3 - each variant is defined once"
  sed 's/^/# /' "$work/twice"
else
  echo "ok 3 - each variant is defined once"
fi
