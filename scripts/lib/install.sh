# Shared by scripts/setup.sh and scripts/setup-test.sh (sourced, not run).
#
# Each installer step goes through `run`, so `--dry-run` (or
# DENDRO_SETUP_DRY_RUN=1) prints the commands a machine would get instead of
# running them. Only apt-get needs root: it runs through sudo for anyone
# else, and everything else (rustup, cargo install into ~/.cargo, npm into
# node_modules, a Python venv under target/) runs as the user.

DRY_RUN=${DENDRO_SETUP_DRY_RUN:-}
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
  esac
done
export DENDRO_SETUP_DRY_RUN=$DRY_RUN

# Runs a step, or in a dry run prints it.
run() {
  if [ -n "$DRY_RUN" ]; then
    printf '%s: would run: %s\n' "$SETUP_NAME" "$*"
  else
    printf '%s: %s\n' "$SETUP_NAME" "$*" >&2
    "$@"
  fi
}

# Debian packages, installed with apt-get: directly as root, through sudo
# otherwise; a non-root user without sudo is told what to ask for.
apt_install() {
  [ $# -gt 0 ] || return 0
  local as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "$SETUP_NAME: these Debian packages are missing and installing them needs root: $*" >&2
      echo "$SETUP_NAME: run as root: apt-get install $*  (or install sudo), then run this again" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@"
}

# A tool the set-up cannot install itself (a toolchain): say so and stop.
require() {
  local tool=$1 how=$2
  if ! command -v "$tool" >/dev/null; then
    if [ -n "$DRY_RUN" ]; then
      printf '%s: missing, not installed by this script: %s (%s)\n' "$SETUP_NAME" "$tool" "$how"
    else
      echo "$SETUP_NAME: $tool is missing: $how" >&2
      exit 1
    fi
    return 1
  fi
}
