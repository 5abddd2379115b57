"""An independent 3DO reader, from the format facts: 52-byte object headers (version,
vertex count, primitive count, selection primitive, x y z offset, name offset, 0, vertex
offset, primitive offset, sibling offset, child offset), the root at offset 0; vertices are
three int32 (16.16 fixed point); primitives are 32 bytes (colour, index count, 0, index
offset, texture offset, 3 more words). Prints JSON: one entry per piece in pre-order."""
import json
import struct
import sys


def cstr(data, at):
    end = data.index(b"\0", at)
    return data[at:end].decode("latin-1")


def read(data):
    out = []
    todo = [(0, None)]
    while todo:
        at, parent = todo.pop()
        (ver, nv, np_, sel, x, y, z, name, _u, vo, po, sib, child) = struct.unpack_from(
            "<13i", data, at)
        assert ver == 1, ver
        me = len(out)
        prims = []
        for k in range(np_):
            (col, n, _a, io, to, _b, _c, _d) = struct.unpack_from("<8i", data, po + 32 * k)
            idx = list(struct.unpack_from("<%dH" % n, data, io))
            prims.append({"color": col, "indices": idx,
                          "texture": cstr(data, to) if to else None})
        out.append({
            "name": cstr(data, name),
            "parent": parent,
            "origin": [x, y, z],
            "vertices": [list(struct.unpack_from("<3i", data, vo + 12 * k)) for k in range(nv)],
            "primitives": prims,
        })
        if sib:
            todo.append((sib, parent))
        if child:
            todo.append((child, me))
    return out


if __name__ == "__main__":
    print(json.dumps(read(open(sys.argv[1], "rb").read())))
