#!/bin/sh
# test-structure.sh — tools/check-structure on trees made here to show each
# rule (a long function with and without its why-comment, a circle of calls,
# what is not a circle, the folders it skips, the allow-list, an include
# circle), then on
# dtsim's own sources, which must have no finding.  Prints TAP.
#
# DTSIM_SRCDIR (set by `make check`) is the source root; without it, the
# folder above this script's.
set -u
src=${DTSIM_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
tool="$src/tools/check-structure"
work=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-structure.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

echo "1..9"
n=0
# ok CONDITION-STATUS DESCRIPTION: one TAP line; on failure the tool's output
# (in $work/out) as diagnostics.
ok () {
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    sed 's/^/# /' "$work/out"
  fi
}

if ! command -v python3 >/dev/null 2>&1; then
  echo "Bail out! python3 not found: install it (bootstrap.sh does)"
  exit 1
fi

# fn NAME LINES [STATIC]: a GNU-style function of LINES lines in all, from
# the line with its name to its closing brace.
fn () {
  [ -n "${3:-}" ] && echo "static void" || echo "void"
  echo "$1 (void)"
  echo "{"
  i=3
  while [ "$i" -lt "$2" ]; do echo "  work ();"; i=$((i + 1)); done
  echo "}"
}

# 1-3: the length rule, at its bound, with and without the comment.
t="$work/long"
mkdir -p "$t/comm" "$t/tests" "$t/bench" "$t/build-x" "$t/.hidden"
{ fn at_bound 80; echo; fn one_over 81; echo
  echo "/* Long because each step reads the one before; split, it would pass"
  echo "   ten arguments around. */"; fn explained 200; } > "$t/comm/a.c"
for d in tests bench build-x .hidden; do fn skipped_here 100 > "$t/$d/b.c"; done
python3 "$tool" "$t" > "$work/out"; status=$?
[ "$status" -eq 1 ] && [ "$(wc -l < "$work/out")" -eq 1 ]
ok $? "exactly one finding, exit 1, in a folder found rather than listed"
grep -q '^comm/a.c:[0-9]*: one_over is 81 lines' "$work/out"
ok $? "a function of 81 lines with no why-comment is named, with its length"
! grep -q 'at_bound\|explained\|skipped_here' "$work/out"
ok $? "80 lines, a why-comment, tests/ bench/ build*/ and hidden folders pass"

# 4-5: a circle of calls between two units, and what ties nothing.
t="$work/circle"
mkdir -p "$t/comm" "$t/train"
{ echo '#include "train/y.h"'; echo "void x_go (void);"
  echo "void"; echo "x_go (void)"; echo "{"; echo "  y_go ();"; echo "}"; } > "$t/comm/x.c"
{ echo "void y_go (void);"; } > "$t/train/y.h"
{ echo "void"; echo "y_go (void)"; echo "{"; echo "  x_go ();"; echo "}"; } > "$t/train/y.c"
# w.c calls z_go; z.c calls a helper that only w.c defines, static (z.c's
# is a macro), names y_go by pointer only, and includes w's header: no
# circle of calls, but one of includes and calls.
{ echo '#include "comm/z.h"'; fn helper 5 static; echo "void"; echo "w_go (void)"; echo "{"
  echo "  helper ();"; echo "  z_go ();"; echo "}"; } > "$t/comm/w.c"
{ echo "void w_go (void);"; } > "$t/comm/w.h"
{ echo "void z_go (void);"; } > "$t/comm/z.h"
{ echo '#include "comm/w.h"'; echo "#define helper() z_go ()"; echo "void (*hook) (void) = y_go;"
  echo "void"; echo "z_go (void)"; echo "{"; echo "  helper ();"; echo "}"; } > "$t/comm/z.c"
python3 "$tool" "$t" > "$work/out"; status=$?
[ "$status" -eq 1 ] && [ "$(cat "$work/out")" = "circle: comm/x.c <-> train/y.c (x_go y_go)" ]
ok $? "a circle of calls across folders is the one finding, with the names that tie it"
python3 "$tool" --includes "$t" > "$work/out"
grep -q '^circle: comm/w.c <-> comm/z.c (comm/w.h comm/z.h z_go)$' "$work/out"
ok $? "with --includes, an #include of a unit's header ties too"

# 6-7: the allow-list: a listed circle passes; a listed circle gone fails.
echo "train/y.c, comm/x.c  # being untied" > "$work/allow"
python3 "$tool" --allow "$work/allow" "$t" > "$work/out"
ok $? "a circle on the allow-list is no finding"
echo "comm/w.c comm/z.c" >> "$work/allow"
python3 "$tool" --allow "$work/allow" "$t" > "$work/out"; status=$?
[ "$status" -eq 1 ] && grep -q '^circle comm/w.c, comm/z.c is in the allow-list but no longer found' "$work/out"
ok $? "an allow-list line whose circle is gone is a finding"

# 8: two headers that include each other are an include circle, whatever
# calls there are.
t="$work/includes"
mkdir -p "$t/base"
echo '#include "base/b.h"' > "$t/base/a.h"
echo '#include "a.h"' > "$t/base/b.h"
python3 "$tool" "$t" > "$work/out"; status=$?
[ "$status" -eq 1 ] && grep -q '^include circle: base/a.h -> base/b.h$' "$work/out"
ok $? "headers that include each other are an include circle"

# 9: dtsim itself.
python3 "$tool" "$src" > "$work/out"
ok $? "dtsim's sources: no long function without its comment, no circle of calls or includes"
