"""What the stock gdb 13 scripts share: checks, echoed commands, the exit
codes seen, and the connection to gdbmux on $PORT."""
import os

import gdb

EXITS = []
gdb.events.exited.connect(lambda ev: EXITS.append(getattr(ev, "exit_code", None)))


def check(cond, what):
    print(("CHECK ok: " if cond else "CHECK FAILED: ") + what, flush=True)
    if not cond:
        raise gdb.GdbError("CHECK FAILED: " + what)


def ex(line):
    out = gdb.execute(line, to_string=True)
    print(f"(gdb) {line}\n{out}", flush=True)
    return out


def connect():
    """Quiet settings, then `target remote` to gdbmux on $PORT."""
    ex("set pagination off")
    ex("set confirm off")
    ex(f"target remote 127.0.0.1:{os.environ['PORT']}")
