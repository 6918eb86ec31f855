#!/usr/bin/env python3
"""Find stack reloads that no store can forward to (x86-64 objdump output).

    python3 scripts/sf_scan.py build/lib/libportals.so.0.1.0 [FUNCTION ...]

A load from a stack slot whose bytes were written by a narrower store (gcc
spills a 32-bit value with a 4-byte store and reloads it with an 8-byte load
when the upper half is shifted out), by several stores (a struct built field by
field, then copied with a 16-byte load), or only partly, cannot take its value
from the store buffer: it waits until those stores reach the cache, and they
wait behind every older store. On a sender whose older stores are a ring cell
that the receiver's core holds, that is a cross-core transfer per message
(docs/performance-notes.md, round 25: the shm ring's push lost half its rate
to one such reload).

For each load from N(%rsp) it looks at the latest store before it, in address
order, to each of its bytes, and reports the load unless one store covers them
all. It does not follow branches or track %rsp changes inside a function, so a
report is a place to read the code, not a proof; without FUNCTION names it
scans every function.
"""
import re
import subprocess
import sys

WIDTH = {}
for r in "rax rbx rcx rdx rsi rdi rbp rsp".split() + [f"r{i}" for i in range(8, 16)]:
    WIDTH[r] = 8
for r in "eax ebx ecx edx esi edi ebp esp".split() + [f"r{i}d" for i in range(8, 16)]:
    WIDTH[r] = 4
for r in "ax bx cx dx si di bp sp".split() + [f"r{i}w" for i in range(8, 16)]:
    WIDTH[r] = 2
for r in "al bl cl dl sil dil bpl spl ah bh ch dh".split() + [f"r{i}b" for i in range(8, 16)]:
    WIDTH[r] = 1
SUFFIX = {"b": 1, "w": 2, "l": 4, "q": 8}
STACK = re.compile(r"(-?0x[0-9a-f]+|-?\d+)?\(%rsp\)")
RMW = ("add", "sub", "or", "and", "xor", "inc", "dec")


def reg_width(op):
    name = op.lstrip("%")
    if name in WIDTH:
        return WIDTH[name]
    for prefix, w in (("xmm", 16), ("ymm", 32), ("zmm", 64)):
        if name.startswith(prefix):
            return w
    return None


def access(mnemonic, args):
    """(offset, width, is_store, is_load) of an instruction's stack operand."""
    m = STACK.search(args)
    if not m or mnemonic.startswith(("lea", "prefetch", "nop", "push", "pop", "call", "j")):
        return None
    off = int(m.group(1), 0) if m.group(1) else 0
    parts = [p.strip() for p in re.split(r",(?![^(]*\))", args)]
    mem = next(i for i, p in enumerate(parts) if "(%rsp)" in p)
    width = None
    for i, p in enumerate(parts):
        if i != mem and p.startswith("%"):
            width = reg_width(p)
    if mnemonic.startswith("set"):
        width = 1
    extend = mnemonic.startswith(("movz", "movs")) and mnemonic not in ("movsd", "movss")
    if extend and len(mnemonic) > 4:
        width = SUFFIX.get(mnemonic[4])
    if width is None and mnemonic[-1] in SUFFIX:
        width = SUFFIX[mnemonic[-1]]
    width = width or 8
    is_store = (mem == len(parts) - 1 and not extend and
                not mnemonic.startswith(("cmp", "test")))
    is_load = not is_store or mnemonic.startswith(RMW)
    return off, width, is_store, is_load


def functions(binary):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs


def scan(name, insns):
    stores, reports = [], []
    for addr, mnemonic, args in insns:
        a = access(mnemonic, args)
        if not a:
            continue
        off, width, is_store, is_load = a
        if is_load:
            latest = []
            for byte in range(off, off + width):
                prior = [s for s in stores if s[1] <= byte < s[1] + s[2]]
                if prior:
                    latest.append(max(prior))
            if latest:
                first = latest[0]
                covered = (len(latest) == width and all(s == first for s in latest) and
                           first[1] <= off and off + width <= first[1] + first[2])
                if not covered:
                    srcs = sorted({f"{s[0]:x}" for s in latest})
                    reports.append(f"{name}: {addr:x} {mnemonic} [{off:#x},+{width}]"
                                   f" from stores at {', '.join(srcs)}")
        if is_store:
            stores.append((addr, off, width))
    return reports


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    funcs = functions(argv[1])
    names = argv[2:] or sorted(funcs)
    missing = [n for n in names if n not in funcs]
    if missing:
        print("not in the binary: " + " ".join(missing), file=sys.stderr)
        return 2
    reports = [r for n in names for r in scan(n, funcs[n])]
    print("\n".join(reports) if reports else "nothing found")
    return 1 if reports else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
