#!/bin/sh
# run.sh — runs the scenario-loader fuzzer for a bounded time; `make fuzz-run`
# and CI call it from the build directory.
#   fuzz/run.sh FUZZER SECONDS SRCDIR
# Seeds are the shipped scenarios, the test scenarios and fuzz/seeds/ (one
# small scenario per topology and policy, some with --set lines); the corpus grows in
# fuzz/corpus and is kept between runs.  A finding (crash, leak, timeout,
# out-of-memory) is written to fuzz/artifacts/ and printed, and the script
# exits 1.  FUZZ_OPTIONS holds the bounds of each input (set by the Makefile).
set -eu
fuzzer=$1 seconds=$2 srcdir=$3
: "${FUZZ_OPTIONS:=-max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10}"

# Seeds are copied rather than passed as folders: libFuzzer reads folders
# recursively, and tests/data/fuzz/ holds the reproducers of known findings.
rm -rf fuzz/seed-corpus
mkdir -p fuzz/seed-corpus fuzz/corpus fuzz/artifacts
cp "$srcdir"/scenarios/*.ini "$srcdir"/tests/data/*.ini "$srcdir"/fuzz/seeds/*.ini \
  fuzz/seed-corpus/

status=0
# shellcheck disable=SC2086
OPENBLAS_NUM_THREADS=1 UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
  "$fuzzer" $FUZZ_OPTIONS -dict=fuzz/scenario.dict \
  -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix=fuzz/artifacts/ \
  fuzz/corpus fuzz/seed-corpus >fuzz/fuzz.log 2>&1 || status=$?
if [ "$status" -eq 0 ]; then
  grep '^stat::' fuzz/fuzz.log || true
  echo "fuzz: no finding in ${seconds} s (corpus: $(ls fuzz/corpus | wc -l) inputs)"
  exit 0
fi

echo "fuzz: the fuzzer stopped with status $status; full log: $(pwd)/fuzz/fuzz.log" >&2
grep -E '==[0-9]+== ?ERROR|runtime error|CRITICAL|WARNING|^SUMMARY|^ +#[0-9]+ ' fuzz/fuzz.log \
  | grep -v -e ' in fuzzer::' -e '__sanitizer_print_stack_trace' | head -n 30 >&2 || true
for f in $(grep -oE 'fuzz/artifacts/(crash|leak|timeout|oom|slow-unit)-[0-9a-f]+' fuzz/fuzz.log \
           | sort -u); do
  echo "--- reproducer $f (replay: $fuzzer $f):" >&2
  cat -v "$f" >&2
  echo >&2
  echo "--- end of $f" >&2
done
exit 1
