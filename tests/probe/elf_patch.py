"""Mutants of a 64-bit little-endian shared object, made in place for the hostile-file tests:
a PT_NOTE that points outside the file's mapping, a GNU hash table whose buckets point
anywhere. Only what the dynamic loader itself never reads is changed, so that glibc still
loads each mutant (the tests check that it does)."""
import struct

PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
DT_NULL, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RUNPATH, DT_GNU_HASH = 0, 5, 10, 14, 29, 0x6FFFFEF5


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


def _dynamic(data):
    """The dynamic section's entries: {tag: value} (the first of each tag)."""
    dynamic = next(fields for _, fields in _phdrs(data) if fields[0] == PT_DYNAMIC)
    at, entries = dynamic[2], {}
    while True:
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == DT_NULL:
            return entries
        entries.setdefault(tag, value)
        at += 16


def rename_needed(path, old, new):
    """The string `old` of the dynamic string table (a DT_NEEDED name) becomes `new`, of the
    same length: the file then needs a library of that name."""
    if len(old) != len(new):
        raise ValueError("the names must be of one length")
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        entries = _dynamic(data)
        start = _file_offset(data, entries[DT_STRTAB])
        at = data.find(b"\0" + old.encode() + b"\0", start - 1, start + entries[DT_STRSZ])
        if at < 0:
            raise ValueError("%s has no string %s" % (path, old))
        data[at + 1:at + 1 + len(new)] = new.encode()
        f.seek(0)
        f.write(data)


def soname_to_runpath(path, runpath="$ORIGIN"):
    """The file's DT_SONAME entry becomes a DT_RUNPATH of `runpath`, written over the soname
    (which must be as long or longer). Every DT_NEEDED is kept, whatever the architecture or
    build puts there (x86-64's ld-linux, a sanitizer's runtime, libc alone on aarch64); a file
    loaded by path needs no soname."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        entries = _dynamic(data)
        strings = _file_offset(data, entries[DT_STRTAB])
        dynamic = next(fields for _, fields in _phdrs(data) if fields[0] == PT_DYNAMIC)
        at = dynamic[2]
        while True:
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == DT_NULL:
                raise ValueError("%s has no DT_SONAME" % path)
            if tag == DT_SONAME:
                break
            at += 16
        name = strings + value
        old = data[name:data.index(b"\0", name)]
        if len(old) < len(runpath):
            raise ValueError("%s: %s is shorter than %s" % (path, old, runpath))
        data[name:name + len(old)] = runpath.encode().ljust(len(old), b"\0")
        struct.pack_into("<q", data, at, DT_RUNPATH)
        f.seek(0)
        f.write(data)


def wild_gnu_hash(path, bucket=0x7FFFFFF0):
    """The GNU hash table's Bloom filter cleared (ld.so, which reads it first, then finds no
    name in the object and never reads a bucket) and every bucket set to `bucket`: a chain
    that starts far past the table's end."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        entries = _dynamic(data)
        if DT_GNU_HASH not in entries:
            raise ValueError("%s has no DT_GNU_HASH" % path)
        table = _file_offset(data, entries[DT_GNU_HASH])
        nbuckets, _, bloom_size, _ = struct.unpack_from("<IIII", data, table)
        bloom = table + 16
        data[bloom:bloom + 8 * bloom_size] = bytes(8 * bloom_size)
        buckets = bloom + 8 * bloom_size
        for i in range(nbuckets):
            struct.pack_into("<I", data, buckets + 4 * i, bucket)
        f.seek(0)
        f.write(data)
