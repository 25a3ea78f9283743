"""Types a session into interactive stock lldb through a pseudo-terminal,
as a person does.

usage: lldb_pty.py LLDB_ARGS_JSON SCRIPT_JSON
LLDB_ARGS_JSON: lldb's arguments (the connect line gdbmux printed).
SCRIPT_JSON: [[command, regex], ...]: each command is typed once lldb shows
its prompt, then the output is read until `regex` matches what the command
printed (and the next prompt). Prints the whole transcript; exits 1 with
"PTY FAILED" on the first expectation not met within 60 s.
"""
import json
import os
import pty
import re
import select
import sys
import time

sys.dont_write_bytecode = True

args = json.loads(sys.argv[1])
script = json.loads(sys.argv[2])
PROMPT = "(lldb) "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "dumb"
    os.execvp("lldb", ["lldb", *args])

buf = ""


def read_until(pred, what, eof_ok=False):
    """Read until pred(buf); returns False if lldb ended first and
    eof_ok (else that fails the session)."""
    global buf
    deadline = time.monotonic() + 60
    while not pred(buf):
        left = deadline - time.monotonic()
        if left <= 0:
            print(buf)
            print(f"PTY FAILED: waiting for {what}")
            os.kill(pid, 9)
            sys.exit(1)
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                if eof_ok:
                    return False
                print(buf)
                print(f"PTY FAILED: lldb ended while waiting for {what}")
                sys.exit(1)
            buf += ANSI.sub("", data.decode("utf-8", "replace")).replace("\r", "")
    return True


# The connect commands of the command line have run once the prompt shows.
read_until(lambda b: b.rstrip(" ").endswith(PROMPT.rstrip(" ")) and "stopped" in b, "the first prompt")
for command, expect in script:
    start = len(buf)
    os.write(fd, (command + "\n").encode())
    rx = re.compile(expect, re.S)
    read_until(lambda b: rx.search(b[start:]) is not None and PROMPT in b[start:],
               f"{command!r} to print /{expect}/")
os.write(fd, b"quit\n")
# With every process ended lldb quits at once, and may be gone before its
# echo of `quit` is read; with one still live it asks first.
if read_until(lambda b: "Do you really want to proceed" in b or "quit" in b[-50:], "quit",
              eof_ok=True):
    try:
        os.write(fd, b"y\n")
    except OSError:
        pass
try:
    os.waitpid(pid, 0)
except ChildProcessError:
    pass
print(buf)
print("PTY ALL EXPECTATIONS MET")
