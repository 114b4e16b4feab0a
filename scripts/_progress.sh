# Progress helpers for the long steps of scripts/bootstrap.sh and scripts/test.sh (sourced).

# heartbeat LABEL LOG CMD...: run CMD; every ${HEARTBEAT_SECONDS:-8} s while it runs print
# "LABEL: still running after N s". With a LOG, CMD's output goes there and the line also
# names the phase pip is in (its last "Collecting ..." / "Installing ..." line); with LOG "",
# CMD prints as usual. Returns CMD's status.
heartbeat() {
  local label=$1 log=$2
  shift 2
  local started=$SECONDS last=$SECONDS pid at
  if [ -n "$log" ]; then
    "$@" >"$log" 2>&1 &
  else
    "$@" &
  fi
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - last)) -ge "${HEARTBEAT_SECONDS:-8}" ] && kill -0 "$pid" 2>/dev/null; then
      last=$SECONDS
      at=""
      if [ -n "$log" ]; then
        at="$(grep -E '^(Collecting|Obtaining|Processing|Downloading|Building|Installing|Preparing)' \
          "$log" | tail -n 1 | cut -c1-90 || true)"
      fi
      echo "$label: still running after $((SECONDS - started)) s${at:+ (pip: $at)}"
    fi
  done
  wait "$pid"
}

# prefixed PREFIX LOG CMD...: run CMD with its output (stdout and stderr) printed line by line
# as it comes, PREFIX in front of each line, and kept whole in LOG. Returns CMD's status.
prefixed() (
  set +e
  prefix=$1 log=$2
  shift 2
  "$@" 2>&1 | tee "$log" | while IFS= read -r line || [ -n "$line" ]; do
    printf '%s%s\n' "$prefix" "$line"
  done
  exit "${PIPESTATUS[0]}"
)
