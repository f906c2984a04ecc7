#!/bin/sh
# run.sh — runs the fuzz targets for a bounded time; `make fuzz-run` and CI
# call it from the build directory.
#   fuzz/run.sh SECONDS SRCDIR TARGET...
# TARGET is scenario, catalog or workload (fuzz/fuzz-TARGET).  The targets
# run one after the other and share SECONDS: scenario, the largest parser,
# weighs 2, the others 1 each (90 s: 45 + 22 + 22).  Per target:
#   scenario  seeds scenarios/*.ini, tests/data/*.ini, fuzz/seeds/ (one small
#             scenario per topology and policy, some with --set lines);
#             dictionary fuzz/scenario.dict (made by `make fuzz`); 4 KiB inputs
#   catalog   seeds scenarios/hardware.ini, fuzz/seeds-catalog/;
#             dictionary fuzz/catalog.dict; 8 KiB inputs
#   workload  seeds scenarios/workloads/*.txt, fuzz/seeds-workload/;
#             dictionary fuzz/workload.dict; 16 KiB inputs (gpt-2-xl is 14.5)
# Each corpus grows in fuzz/corpus/TARGET and is kept between runs; the
# fuzzer's output goes to fuzz/TARGET.log.  A finding (crash, leak, timeout,
# out-of-memory) is written to fuzz/artifacts/TARGET/ and printed; the other
# targets still run, and the script exits 1.  FUZZ_OPTIONS holds the memory
# and time bounds of each input (set by the Makefile).
set -eu
seconds=$1 srcdir=$2
shift 2
[ $# -gt 0 ] || set -- scenario catalog workload
: "${FUZZ_OPTIONS:=-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10}"

weight() {
  case $1 in
    scenario) echo 2 ;;
    catalog|workload) echo 1 ;;
    *) echo "fuzz: unknown target '$1'; the targets are scenario, catalog, workload" >&2
       exit 2 ;;
  esac
}
total=0
for t in "$@"; do
  w=$(weight "$t") || exit 2
  total=$((total + w))
done

status=0
for t in "$@"; do
  w=$(weight "$t")
  secs=$((seconds * w / total))
  [ "$secs" -ge 1 ] || secs=1
  fuzzer=fuzz/fuzz-$t
  # Seeds are copied rather than passed as folders: libFuzzer reads folders
  # recursively, and tests/data/fuzz/ holds the reproducers of known findings.
  seeds=fuzz/seed-corpus/$t corpus=fuzz/corpus/$t artifacts=fuzz/artifacts/$t/
  log=fuzz/$t.log
  rm -rf "$seeds"
  mkdir -p "$seeds" "$corpus" "$artifacts"
  case $t in
    scenario)
      cp "$srcdir"/scenarios/*.ini "$srcdir"/tests/data/*.ini "$srcdir"/fuzz/seeds/*.ini "$seeds"/
      dict=fuzz/scenario.dict max_len=4096 ;;
    catalog)
      cp "$srcdir"/scenarios/hardware.ini "$srcdir"/fuzz/seeds-catalog/*.ini "$seeds"/
      dict=$srcdir/fuzz/catalog.dict max_len=8192 ;;
    workload)
      cp "$srcdir"/scenarios/workloads/*.txt "$srcdir"/fuzz/seeds-workload/*.txt "$seeds"/
      dict=$srcdir/fuzz/workload.dict max_len=16384 ;;
  esac

  echo "fuzz: $t for $secs s"
  rc=0
  # shellcheck disable=SC2086
  OPENBLAS_NUM_THREADS=1 UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    "$fuzzer" $FUZZ_OPTIONS -max_len=$max_len -dict="$dict" \
    -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$artifacts" \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "$log" || true
    echo "fuzz: $t: no finding in $secs s (corpus: $(ls "$corpus" | wc -l) inputs)"
    continue
  fi

  status=1
  echo "fuzz: $t: the fuzzer stopped with status $rc; full log: $(pwd)/$log" >&2
  grep -E '==[0-9]+== ?ERROR|runtime error|CRITICAL|WARNING|^fuzz-|^SUMMARY|^ +#[0-9]+ ' "$log" \
    | grep -v -e ' in fuzzer::' -e '__sanitizer_print_stack_trace' | head -n 30 >&2 || true
  for f in $(grep -oE "$artifacts(crash|leak|timeout|oom|slow-unit)-[0-9a-f]+" "$log" \
             | sort -u); do
    echo "--- reproducer $f (replay: $fuzzer $f):" >&2
    cat -v "$f" >&2
    echo >&2
    echo "--- end of $f" >&2
  done
done
exit $status
