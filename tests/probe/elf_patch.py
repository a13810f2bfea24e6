"""Mutants of a 64-bit little-endian shared object, made in place by the tests of issue 31:
a PT_NOTE that points outside the file's mapping, a GNU hash table whose buckets point
anywhere. Only what the dynamic loader itself never reads is changed, so that glibc still
loads each mutant (the tests check that it does)."""
import struct

PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
DT_NULL, DT_GNU_HASH = 0, 0x6FFFFEF5


def _phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        yield at, struct.unpack_from("<IIQQQQQQ", data, at)


def _file_offset(data, vaddr):
    for _, (ptype, _, offset, pvaddr, _, filesz, _, _) in _phdrs(data):
        if ptype == PT_LOAD and pvaddr <= vaddr < pvaddr + filesz:
            return offset + vaddr - pvaddr
    raise ValueError("address %#x is in no PT_LOAD segment" % vaddr)


def bad_note_address(path, address=0x7FFF00000000):
    """Every PT_NOTE's p_vaddr becomes `address` (far outside the object)."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        found = False
        for at, fields in _phdrs(data):
            if fields[0] == PT_NOTE:
                struct.pack_into("<Q", data, at + 16, address)
                found = True
        if not found:
            raise ValueError("%s has no PT_NOTE" % path)
        f.seek(0)
        f.write(data)


def wild_gnu_hash(path, bucket=0x7FFFFFF0):
    """The GNU hash table's Bloom filter cleared (ld.so, which reads it first, then finds no
    name in the object and never reads a bucket) and every bucket set to `bucket`: a chain
    that starts far past the table's end."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        dynamic = next(fields for _, fields in _phdrs(data) if fields[0] == PT_DYNAMIC)
        at = dynamic[2]
        table = None
        while True:
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == DT_NULL:
                break
            if tag == DT_GNU_HASH:
                table = _file_offset(data, value)
            at += 16
        if table is None:
            raise ValueError("%s has no DT_GNU_HASH" % path)
        nbuckets, _, bloom_size, _ = struct.unpack_from("<IIII", data, table)
        bloom = table + 16
        data[bloom:bloom + 8 * bloom_size] = bytes(8 * bloom_size)
        buckets = bloom + 8 * bloom_size
        for i in range(nbuckets):
            struct.pack_into("<I", data, buckets + 4 * i, bucket)
        f.seek(0)
        f.write(data)
