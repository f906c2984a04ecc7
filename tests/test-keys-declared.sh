#!/bin/sh
# test-keys-declared.sh — every key name the C sources write is a declared key.
#
# Registry keys are read and set by name: base_values_int (values,
# "policy.staleness").  A name no key row declares aborts when it is reached
# (base/keys.c), but only on the path that reaches it; this test reads every
# call of base_values_int/_double/_string/_list/_has/_set_* and of
# pol_check_resolve_int in the C sources (tests included) whose name is a
# string literal, and checks that literal
# against the keys `dtsim keys` lists, so a misspelt name fails here even on
# a path no test runs.  It prints file:line and the name of each that is not
# declared.  Names given through a variable are left to the run-time check
# (tests/test-keys.c passes its deliberately undeclared names that way).
#
# Environment (AM_TESTS_ENVIRONMENT in Makefile.am): DTSIM_BIN, the dtsim to
# ask; DTSIM_SRCDIR, the source tree to read.  Output is TAP.

set -u
: "${DTSIM_BIN:?DTSIM_BIN names the dtsim binary (run through make check)}"
: "${DTSIM_SRCDIR:?DTSIM_SRCDIR names the source tree (run through make check)}"

echo "1..1"
keys=$(mktemp) || exit 1
trap 'rm -f "$keys" "$keys.count"' EXIT

# "section.key" of every row of the reference: a "### [section]" heading,
# then table rows "| `key` | ...".
if ! "$DTSIM_BIN" keys | awk '
    /^### \[[a-z_]+\]$/ { section = substr ($2, 2, length ($2) - 2); next }
    /^## / { section = "" }
    section != "" && /^\| `[a-z0-9_]+` \|/ {
      split ($0, cell, "`"); print section "." cell[2] }' > "$keys"; then
  echo "not ok 1 - dtsim keys failed"
  exit 1
fi
n_keys=$(wc -l < "$keys")
if [ "$n_keys" -eq 0 ]; then
  echo "not ok 1 - no key read from dtsim keys (has its format changed?)"
  exit 1
fi

cd "$DTSIM_SRCDIR" || exit 1
files=$(for d in base engine netmodel kernels comm train policies sim tests bench fuzz tools; do
          [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cpp' \)
        done | LC_ALL=C sort)

# For each call, walk its first argument (parentheses and strings balanced)
# to the comma after it; when the second argument opens with a string
# literal, print "file:line name".  Then keep those not declared.
report=$(awk -v keysfile="$keys" '
  BEGIN {
    while ((getline k < keysfile) > 0)
      declared[k] = 1
    call = "(base_values_(int|double|string|list|has|set_int|set_double|set_string|set_list)|pol_check_resolve_int)[ \t\n]*[(]"
  }
  FNR == 1 && NR > 1 { scan(prev) }
  { text = (FNR == 1 ? "" : text "\n") $0; prev = FILENAME }
  END { if (NR > 0) scan(prev); printf "%d literals\n", n_literals > "/dev/stderr" }

  function scan(file,    rest, offset, i, c, depth, instr, lit, line, prefix) {
    rest = text
    offset = 0
    while (match(rest, call)) {
      i = RSTART + RLENGTH         # first character of the first argument
      depth = 0; instr = 0
      for (; i <= length(rest); i++) {
        c = substr(rest, i, 1)
        if (instr) { if (c == "\\") i++; else if (c == "\"") instr = 0; continue }
        if (c == "\"") instr = 1
        else if (c == "(") depth++
        else if (c == ")") { if (depth == 0) break; depth-- }
        else if (c == "," && depth == 0) break
      }
      if (substr(rest, i, 1) == ",") {
        for (i++; substr(rest, i, 1) ~ /[ \t\n]/; i++)
          ;
        if (substr(rest, i, 1) == "\"" && match(substr(rest, i + 1), /^[^"]*"/)) {
          lit = substr(rest, i + 1, RLENGTH - 1)
          prefix = substr(text, 1, offset + i)
          line = gsub(/\n/, "", prefix) + 1
          n_literals++
          if (!(lit in declared))
            printf "%s:%d: %s\n", file, line, lit
        }
      }
      offset += i
      rest = substr(rest, i + 1)
    }
  }' $files 2> "$keys.count")
count=$(sed -n 's/ literals$//p' "$keys.count")
rm -f "$keys.count"

if [ -z "$count" ] || [ "$count" -eq 0 ]; then
  echo "not ok 1 - no key name found in the sources (has the call syntax changed?)"
  exit 1
fi
if [ -n "$report" ]; then
  echo "not ok 1 - key names that no key row declares (correct them, or declare them in their registry)"
  echo "$report" | sed 's/^/# /'
  exit 1
fi
echo "ok 1 - all $count key names in the sources are among the $n_keys declared keys"
