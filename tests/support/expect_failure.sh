#!/bin/sh
# expect_failure.sh REGEX COMMAND...: passes when COMMAND exits non-zero and its output
# (stdout and stderr) matches REGEX (grep -E).
regex=$1; shift
out=$("$@" 2>&1); rc=$?
if [ $rc -eq 0 ]; then echo "expected a non-zero exit status, got 0; output:"; echo "$out"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "output does not match '$regex':"; echo "$out"; exit 1; fi
echo "exit $rc with: $(printf '%s\n' "$out" | grep -E -- "$regex" | head -1)"
