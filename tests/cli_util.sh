# Shared by the command-line tests (tests/test_*_cli.sh, sourced): a
# scratch directory $T removed on exit, pass/fail counting, the check of a
# refused input, and the summary line and status.
#
# The sourcing script defines `run ARGS...` (the tool with its fixed
# options) and sets ERROR_PREFIX, what the tool's error lines begin with
# ("gpuspeech-dtw: error: "); ONE_ERROR_LINE=1 also demands that stderr
# hold that one line and nothing else.

# cli_setup NAME: $T, a fresh directory /tmp/gpuspeech-NAME-XXXXXX.
cli_setup() {
  T=$(mktemp -d "/tmp/gpuspeech-$1-XXXXXX")
  trap 'rm -rf "$T"' EXIT
  failures=0
  checks=0
}

pass() { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1"; }

# expect_error NAME STATUS PATTERN ARGS...: `run ARGS` exits with STATUS
# (a number, or "nonzero" for any failure), not by a signal, and stderr
# holds an error line (one beginning with ERROR_PREFIX) containing
# PATTERN. Stdout and stderr stay in $T/out and $T/err.
expect_error() {
  local name=$1 want=$2 pattern=$3
  shift 3
  run "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  local line
  line=$(PREFIX=$ERROR_PREFIX PATTERN=$pattern awk \
    'index($0, ENVIRON["PREFIX"]) == 1 && index($0, ENVIRON["PATTERN"]) { print; exit }' "$T/err")
  if [ $rc -ge 128 ]; then
    fail "$name: killed by a signal (status $rc)"
  elif [ "$want" = nonzero ] && [ $rc -eq 0 ]; then
    fail "$name: exit 0"
  elif [ "$want" != nonzero ] && [ $rc -ne "$want" ]; then
    fail "$name: status $rc, expected $want: $(cat "$T/err")"
  elif [ "${ONE_ERROR_LINE:-0}" = 1 ] && [ "$(grep -c '' "$T/err")" -ne 1 ]; then
    fail "$name: expected one error line, got: $(cat "$T/err")"
  elif [ -z "$line" ]; then
    fail "$name: no error line with '$pattern': $(cat "$T/err")"
  else
    pass "$name (status $rc): $line"
  fi
}

# cli_finish [LABEL]: prints the counts; succeeds when nothing failed.
cli_finish() {
  echo "${1:+$1: }$checks checks, $failures failed"
  [ "$failures" -eq 0 ]
}
