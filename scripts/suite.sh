# Sourced by scripts/test and scripts/lint: two ways of running one step, each named and timed.
# The caller sets `failed=()`.

# suite NAME COMMAND...: runs one suite, times it, and records a failure without stopping.
suite() {
  local name=$1 t0
  shift
  echo "== $name"
  t0=$(date +%s)
  if "$@"; then
    echo "   ($name: ok in $(( $(date +%s) - t0 )) s)"
  else
    echo "   ($name: FAILED after $(( $(date +%s) - t0 )) s)"
    failed+=("$name")
  fi
}

# must NAME COMMAND...: a step the later ones need (the build); stops the script on failure.
must() {
  local name=$1
  shift
  echo "== $name"
  "$@" || { echo "$0: $name failed; the suites need it, stopping"; exit 1; }
}
