#!/bin/sh
# bench-policies.sh — how fast `dtsim run` does its real math, policy by
# policy and optimizer by optimizer, beside single-thread sgemm measured in
# the same run (`make bench-policies`).
#
# Usage: bench-policies.sh DTSIM BENCH_KERNELS SCENARIO_DIR [ITERATIONS]
#
# For each bench scenario SCENARIO_DIR/mlp-*.ini (an MLP 784-512-512-10,
# batch 64, 64 workers, compute priced by the device model) and each
# optimizer, whole `dtsim run --threads 1` processes are timed: the run's
# wall time with 1 + ITERATIONS iterations (default 4) minus that of a run
# with 1, so that set-up (data generation, first touch of the buffers) is
# not counted as training; best of BENCH_POLICIES_REPS (default 1) of each.
# The work is the model's exact FLOPs per sample (forward + backward,
# docs/kernels.md "Totals", batch n = 64) times the samples the extra
# iterations trained (samples_per_s x sim_time of each run).  GFLOP/s is
# set against cblas_sgemm on one thread (N = 2048) and against dtsim's
# fixed-order product on the same matrices (what the default
# [kernels] reproducible = true computes with), both from BENCH_KERNELS
# --peer in the same run; the goal column is 75 % of sgemm.  The "% own"
# column sets it against the third peer figure: the forward and backward
# of 64 workers' batches, each worker on its own parameters, with no
# optimizer -- the most a policy whose workers hold their own models
# (local SGD, gossip, FedAvg, Hogwild!) could reach, since no product can
# stack their batches.
#
# Environment: BENCH_POLICIES_ONLY="ps allreduce" (scenario names after
# mlp-), BENCH_POLICIES_OPTIMIZERS (default "sgd momentum adam"),
# BENCH_POLICIES_KERNELS (default "true"; "true false" adds the OpenBLAS
# products, [kernels] reproducible = false), BENCH_POLICIES_THREADS (default
# 1; the peer stays one thread).  Prints figures only; asserts nothing
# about time.
set -u
dtsim=$1
kernels=$2
dir=$3
iters=${4:-4}
reps=${BENCH_POLICIES_REPS:-1}
threads=${BENCH_POLICIES_THREADS:-1}
opts=${BENCH_POLICIES_OPTIMIZERS:-sgd momentum adam}
modes=${BENCH_POLICIES_KERNELS:-true}
tmp=${TMPDIR:-/tmp}/bench-policies.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# FLOPs per sample of the MLP d-h1-h2-k with XENT at batch n (docs/kernels.md):
#   forward  = 2n(d h1 + h1 h2 + h2 k) + n(3k + 2)
#   backward = 2n d h1 + 4n h1 h2 + 4n h2 k + (n - 1)(h1 + h2 + k) + n(k + 2) + 1
per_sample=$(awk -v d=784 -v a=512 -v b=512 -v k=10 -v n=64 'BEGIN {
  f = 2 * n * (d * a + a * b + b * k) + n * (3 * k + 2)
  g = 2 * n * d * a + 4 * n * a * b + 4 * n * b * k + (n - 1) * (a + b + k) + n * (k + 2) + 1
  printf "%.17g", (f + g) / n }')

peer=$(OPENBLAS_NUM_THREADS=1 "$kernels" --peer) || exit 1
set -- $peer
sgemm=$1
fixed=$2
own=$3

# field KEY JSON: the first number after "KEY": in JSON.
field () {
  printf '%s\n' "$2" | tr ',' '\n' | sed -n "s/^.*\"$1\": *\([-0-9.eE+]*\).*$/\1/p" | head -n 1
}

# one_run FILE OPT LR MODE ITERATIONS: "wall samples" of one run.
one_run () {
  out=$("$dtsim" run "$1" --json --quiet --threads "$threads" -o "$tmp/run.db" \
    --set model.optimizer="$2" --set model.lr="$3" --set kernels.reproducible="$4" \
    --set scenario.iterations="$5") || { echo "bench-policies: $1 failed" >&2; return 1; }
  wall=$(field wall_time "$out")
  sps=$(field samples_per_s "$out")
  sim=$(field sim_time "$out")
  awk -v w="$wall" -v s="$sps" -v t="$sim" 'BEGIN { printf "%s %.0f\n", w, s * t }'
}

# best FILE OPT LR MODE ITERATIONS: the least wall of `reps` runs, and its samples.
best () {
  b=""
  r=0
  while [ "$r" -lt "$reps" ]; do
    x=$(one_run "$@") || return 1
    b=$(printf '%s\n%s\n' "$b" "$x" | awk 'NF { if (!n++ || $1 < w) { w = $1; s = $2 } }
      END { print w, s }')
    r=$((r + 1))
  done
  echo "$b"
}

echo "peer (one thread): cblas_sgemm 2048^3 $sgemm GFLOP/s, fixed-order product $fixed GFLOP/s"
echo "a step of 64 workers, each on its own model (no product stacks across them," \
  "no optimizer): $own GFLOP/s"
echo "dtsim run --threads $threads, MLP 784-512-512-10, batch 64, 64 workers," \
  "$iters iterations timed (1 + $iters minus 1):"
printf '%-10s %-9s %-12s %9s %8s %9s %9s %-8s\n' policy optimizer reproducible GFLOP/s '% sgemm' \
  '% fixed' '% own' '75% goal'
for mode in $modes; do
  for f in "$dir"/mlp-*.ini; do
    name=$(basename "$f" .ini)
    name=${name#mlp-}
    case " ${BENCH_POLICIES_ONLY:-$name} " in *" $name "*) ;; *) continue ;; esac
    for opt in $opts; do
      case $opt in adam) lr=0.001 ;; *) lr=0.01 ;; esac
      one=$(best "$f" "$opt" "$lr" "$mode" 1) || exit 1
      many=$(best "$f" "$opt" "$lr" "$mode" $((1 + iters))) || exit 1
      printf '%s %s\n' "$one" "$many" | awk -v p="$per_sample" -v sg="$sgemm" -v fx="$fixed" \
        -v own="$own" -v name="$name" -v opt="$opt" -v mode="$mode" '{
          g = p * ($4 - $2) / ($3 - $1) / 1e9
          printf "%-10s %-9s %-12s %9.1f %7.1f%% %8.1f%% %8.1f%% %-8s\n", name, opt, mode, g,
                 100 * g / sg, 100 * g / fx, 100 * g / own,
                 (100 * g / sg >= 75 ? "met" : "not met")
        }'
    done
  done
done
