#!/usr/bin/env python3
"""Lists the COB files (given as arguments) whose code holds the EMIT_SFX opcode
(0x1000F000), one file name per line, sorted. Written from the format facts (kbot's
docs/formats/cob.md), independently of tafs: the header's code offset (word 9, byte 36)
and code length in words (word 3) delimit the code; every word of it equal to the opcode
counts (no operand of a real script holds that value)."""
import struct
import sys

EMIT_SFX = 0x1000F000
out = []
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    if len(data) < 44:
        continue
    words = struct.unpack_from("<11I", data, 0)
    code_words, code_at = words[3], words[9]
    end = code_at + 4 * code_words
    if end > len(data):
        continue
    code = struct.unpack_from("<%dI" % code_words, data, code_at)
    if EMIT_SFX in code:
        out.append(path.rsplit("/", 1)[-1])
for name in sorted(out):
    print(name)
