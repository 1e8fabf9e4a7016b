#!/usr/bin/env bash
# Spark in local mode reads a fleet export and must agree with `dendro cat`
# (tests/rewrite/fleet_engines.rs with DENDRO_SPARK_PYTHON set): per source
# and stream, count(*), a column's sum, min(ts) and max(ts). Not in CI: a
# JVM start and the pyspark wheel (about 300 MB) are minutes, not seconds.
#
# Installs what is missing: Debian's openjdk-17-jre-headless (through sudo
# when not root; a user without sudo is told to ask for it, or to put a
# Java 17 on PATH and run this again), pyspark from PyPI into a virtual
# environment at ${CARGO_TARGET_DIR:-target}/spark-venv, and DuckDB as
# scripts/setup-test.sh does (the test reads with both engines).
# Writes the result to ${CARGO_TARGET_DIR:-target}/spark-check.json and
# prints it. PYSPARK_VERSION picks another pyspark (default 4.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_NAME=check-spark
# shellcheck source=lib/install.sh
source scripts/lib/install.sh
target_dir="${CARGO_TARGET_DIR:-target}"

if ! command -v java >/dev/null || ! java -version 2>&1 | grep -q 'version "\(17\|21\)'; then
  apt_install openjdk-17-jre-headless
fi

venv="$target_dir/venv"
if ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  [ -x "$venv/bin/python" ] || run python3 -m venv "$venv"
  run "$venv/bin/python" -m pip install --quiet --disable-pip-version-check duckdb==2.0.0
fi
spark_venv="$target_dir/spark-venv"
version="${PYSPARK_VERSION:-4.0.1}"
if ! "$spark_venv/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; then
  [ -x "$spark_venv/bin/python" ] || run python3 -m venv "$spark_venv"
  run "$spark_venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$version"
fi

result="$target_dir/spark-check.json"
rm -f "$result"
started=$(date +%s)
DENDRO_PYTHON="$venv/bin/python" \
DENDRO_SPARK_PYTHON="$spark_venv/bin/python" \
DENDRO_SPARK_RESULT="$result" \
  cargo test --test rewrite -- fleet_engines --nocapture
[ -f "$result" ] || { echo "check-spark: the test ran but wrote no result" >&2; exit 1; }
echo "check-spark: pyspark $version, $(java -version 2>&1 | head -1), $(( $(date +%s) - started )) s:"
cat "$result"; echo
