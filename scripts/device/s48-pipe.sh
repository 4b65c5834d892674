# Sourced by session 48's GPU-bench scripts (run from the repository root): `pipe NAME BIN
# [VAR=VALUE...]` runs BIN (in .device-bin/s48) for the traced pipeline's 100 paired rounds
# with the variables given, its output in $OUT/pipe-NAME.txt, and prints its ratio, control
# and capture spans.
set -u
d=$PWD/.device-bin/s48
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
pipe() {
  local name=$1 bin=$2
  shift 2
  local t
  t=$(mktemp -d /tmp/p-XXXX)
  env "$@" TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=100 CRITERION_HOME=/tmp/pq-$name \
    timeout 100 $d/$bin --bench no-criterion-group > $OUT/pipe-$name.txt 2>&1
  echo "== $name rc=$? at ${SECONDS}s"
  grep -E '^pipeline_traced \(regions only\)|^  control: untraced \(a\) vs a second' $OUT/pipe-$name.txt | head -2
  grep -E '^    (digest|host fence|submit|wait)' $OUT/pipe-$name.txt | head -5
  rm -rf $t
}
# The outputs packed into one archive when the calling script ends.
trap '(cd $OUT && tar czf /tmp/out.tar.gz . && rm -rf ./* && mv /tmp/out.tar.gz .)' EXIT
