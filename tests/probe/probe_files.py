"""What the probe tests read from ELF files themselves: the probe's program interpreter (to
start it through ld.so) and a file's machine (to skip a fake of another architecture).
Shared by test_probe.py and test_doctor.py (imported from this folder)."""


def interpreter(program):
    """The PT_INTERP path of `program` (the first "/lib..." string of its first 4 KiB)."""
    with open(program, "rb") as f:
        data = f.read(4096)
    start = data.index(b"/lib")
    return data[start:data.index(b"\0", start)].decode()


def elf_machine(path):
    """The ELF file's e_machine (62 x86-64, 183 aarch64, ...), None when it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
