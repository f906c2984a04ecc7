#!/bin/sh
# bootstrap.sh — installs what dtsim needs (Debian 12, as root), then
# configures and builds it in build/.  Safe to run again: packages already
# installed are skipped and the build is incremental.
#   ./bootstrap.sh [extra configure arguments]
set -eu
cd "$(dirname "$0")"

# chromium and groff-base: the tests load `dtsim report`'s page in a real
# browser and check the manual page with groff.  Open MPI: sweeps over MPI
# ranks (docs/cluster.md), built and tested with mpirun on this machine.
# python3: tools/check-structure, which tests/test-structure.sh runs.
PACKAGES="gcc g++ make autoconf automake pkg-config libglib2.0-dev libsqlite3-dev
libopenblas-dev gnuplot-nox sqlite3 dataset-fashion-mnist libsimgrid-dev chromium groff-base
libopenmpi-dev openmpi-bin python3"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing"
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: run as root (or install:$missing)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

[ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ] \
  || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure "$@"
make -j"$(nproc)"
