#!/usr/bin/env python3
"""Runs a tool with a bad command line and checks that it refuses it.

    check_usage.py TOOL EXPECTED_TEXT [tool args...]

Passes when TOOL exits 2 and prints EXPECTED_TEXT on one line of stderr
that starts with the tool's name. Needs no GPU: options are parsed first.
"""
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tool, expected, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    name = os.path.basename(tool)
    proc = subprocess.run([tool, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
    print(f"+ {tool} {' '.join(args)}\nexit {proc.returncode}\nstdout: {proc.stdout}stderr: {proc.stderr}")
    if proc.returncode != 2:
        sys.exit(f"check_usage: FAIL: exit {proc.returncode}, expected 2 for a bad command line")
    lines = [line for line in proc.stderr.splitlines() if line.startswith(f"{name}:")]
    if len(lines) != 1 or expected not in lines[0]:
        sys.exit(f"check_usage: FAIL: expected one '{name}: ...' line saying '{expected}'")
    print("check_usage: OK")


if __name__ == "__main__":
    main()
