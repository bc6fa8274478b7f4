#!/bin/sh
# Builds gpuspeech and runs every test suite, in three builds:
#   build/       everything this machine can build (CUDA if nvcc is there,
#                OpenCL through the ICD loader, pocl on a machine without a
#                GPU, the GStreamer plugin) and every suite;
#   build-asan/  the core library under AddressSanitizer + UBSan, its unit,
#                reference and CLI suites;
#   build-fuzz/  the file parsers under libFuzzer (clang), each fuzzed for a
#                bounded time.
# Both also define _GLIBCXX_ASSERTIONS (as Ubuntu's g++ does by default):
# libstdc++ then checks every vector index, which ASan misses inside a
# vector's capacity.
# Ends with the failed tests (name, exit status, the end of their log) and any
# test a suite lists but never reported, then one line
# "tests: N passed, N failed, N skipped" over all three.
# Environment: GPUSPEECH_REQUIRE_BACKENDS=opencl,cuda makes backend tests
# fail rather than skip when a named backend is missing (CI sets opencl).
set -u
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
status=0

setup() {  # dir, options...
  dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1
  else
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1
  fi || { cat "$dir.setup.log"; echo "meson setup $dir failed"; return 1; }
}

run_suites() {  # dir, meson test args...
  dir=$1; shift
  ninja -C "$dir" || return 1
  meson test -C "$dir" --print-errorlogs --num-processes "$jobs" "$@"
}

setup build && run_suites build || status=1

# The sanitizer build is CPU-only, so no device backend is required there.
# The core is a shared library there: one instrumented copy instead of one
# in each test program (about 190 MB each). Its programs run 2-3 times
# slower than the plain build's, so its timeouts are three times theirs:
# transcribe_cli, 150 s in the plain build on 2 cores, ran past its 300 s
# under ASan beside dtw_accuracy (a fresh clone, 2026-12-04).
CC=gcc CXX=g++ setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  -Ddefault_library=shared -Dcpp_args=-D_GLIBCXX_ASSERTIONS \
  -Dgstreamer=disabled -Dcuda=disabled -Dopencl=disabled -Dfuzzers=disabled &&
  GPUSPEECH_REQUIRE_BACKENDS= ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  run_suites build-asan --timeout-multiplier 3 --suite unit --suite reference --suite cli || status=1

if command -v clang++ >/dev/null 2>&1; then
  CC=clang CXX=clang++ setup build-fuzz -Dfuzzers=enabled -Dgstreamer=disabled \
    -Dcpp_args=-D_GLIBCXX_ASSERTIONS -Dcuda=disabled -Dopencl=disabled &&
    run_suites build-fuzz --suite fuzz || status=1
else
  echo "clang++ not found: fuzzers not run"; status=1
fi

# The summary comes last because CI shows only the tail of this output: it
# names each failed test with the end of its log, and any test a suite lists
# but never reported (a test runner that died leaves no line for the rest).
python3 - build:all build-asan:unit,reference,cli build-fuzz:fuzz <<'PY'
import json, os, subprocess, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0}
report = []
for arg in sys.argv[1:]:
    d, suites = arg.split(":")
    log = os.path.join(d, "meson-logs", "testlog.json")
    if not os.path.exists(d):
        continue
    cmd = ["meson", "test", "-C", d, "--list", "--no-rebuild"]
    if suites != "all":
        for s in suites.split(","):
            cmd += ["--suite", s]
    try:
        listed = [l.strip() for l in subprocess.run(
            cmd, capture_output=True, text=True).stdout.splitlines()
            if " / " in l]
    except OSError:
        listed = []
    seen = set()
    if os.path.exists(log):
        for line in open(log):
            r = json.loads(line)
            result = r.get("result", "ERROR")
            counts[result if result in counts else "ERROR"] += 1
            seen.add(r.get("name", ""))
            if result not in ("OK", "SKIP", "EXPECTEDFAIL"):
                tail = (r.get("stdout") or "").splitlines()[-40:]
                report.append(f"--- {d}: {r.get('name')} {result} "
                              f"(exit {r.get('returncode')}, "
                              f"{r.get('duration', 0):.0f} s); its last lines:")
                report += ["    " + t for t in tail]
    missing = [n for n in listed if n not in seen]
    if missing:
        counts["ERROR"] += len(missing)
        report.append(f"--- {d}: {len(missing)} listed tests never reported: "
                      + ", ".join(missing))
if report:
    print("\n".join(report))
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"]
print(f"tests: {counts['OK']} passed, {failed} failed, {counts['SKIP']} skipped")
PY
exit $status
