#!/usr/bin/env python3
"""Generates the package's ctypes module (ncclshim/_functions.py) from ncclshim's headers and
X-macro lists, so that Python cannot drift from C:

    gen_functions.py --include DIR OUTPUT -- CC [ARGS...]

The C preprocessor (CC -E -P -DNCCLSHIM_BUILDING) expands py_rows.c: the public headers, in
which NCCLSHIM_API then marks every ncclshim function, and one marked row per entry of the
NCCL function list, the capabilities and the ncclConfig_t fields. This script parses that
text (declarations only: typedefs, enums, structs, prototypes) and writes ctypes objects:

    NCCL_FUNCTIONS  the NCCL table's rows in table order: name, first version, policy, role,
                    restype, argtypes, parameter names
    API             ncclshim's functions: name -> (restype, argtypes)
    UNTYPED         ncclshim's functions this script could not type: name -> why (left out)
    ENUMS, CONSTANTS  every enum with its values (C's, computed by this script), and all values
                    by name
    STRUCTS         every struct with a body, as ctypes.Structure classes (also module names)
    CALLBACKS       the function-pointer typedefs, as CFUNCTYPE types (also module names)
    CAPABILITIES, CONFIG_FIELDS   the two other lists' rows

Pointers become c_void_p (c_char_p for char *), enums c_int; a struct by value must have a
body. A declaration this script cannot type (a system header's) is left out, an ncclshim
function named in UNTYPED with the reason (tests/python/test_comm.py fails when the package
calls one); a row of the NCCL list that cannot be typed stops the generation, naming it.
build_wheel.py imports generate() to put the same module into the wheel."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = os.path.join(HERE, "py_rows.c")
API_MARK = ["__attribute__", "(", "(", "visibility", "(", '"default"', ")", ")", ")"]

# Scalar types by name; the builtin spellings are normalised (sorted words) first.
NAMED_SCALARS = {
    "size_t": "c_size_t", "ssize_t": "c_ssize_t", "int8_t": "c_int8", "int16_t": "c_int16",
    "int32_t": "c_int32", "int64_t": "c_int64", "uint8_t": "c_uint8", "uint16_t": "c_uint16",
    "uint32_t": "c_uint32", "uint64_t": "c_uint64", "intptr_t": "c_ssize_t",
    "uintptr_t": "c_size_t", "_Bool": "c_bool",
}
BUILTINS = {
    "int": "c_int", "signed": "c_int", "unsigned": "c_uint", "int unsigned": "c_uint",
    "int signed": "c_int", "char": "c_char", "char signed": "c_byte",
    "char unsigned": "c_ubyte", "short": "c_short", "int short": "c_short",
    "short unsigned": "c_ushort", "int short unsigned": "c_ushort", "long": "c_long",
    "int long": "c_long", "long unsigned": "c_ulong", "int long unsigned": "c_ulong",
    "long long": "c_longlong", "int long long": "c_longlong",
    "long long unsigned": "c_ulonglong", "int long long unsigned": "c_ulonglong",
    "float": "c_float", "double": "c_double", "void": None,
}
KEYWORDS = {"int", "signed", "unsigned", "char", "short", "long", "float", "double", "void",
            "const", "volatile", "struct", "enum", "union", "restrict", "_Bool"}
RETURN_KINDS = {"RESULT": "_c.c_int", "STRING": "_c.c_char_p", "VOID": "None",
                "INT": "_c.c_int"}
TOKEN = re.compile(r'\s*(?:("(?:\\.|[^"\\])*")|([A-Za-z_]\w*)|(0[xX][0-9a-fA-F]+\w*|\d+\w*)'
                   r'|(<<|>>|\S))')


class Untyped(Exception):
    pass


def tokenize(text):
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        out.append(m.group(m.lastindex))
        pos = m.end()
    return out


def split_top(tokens, sep):
    """Splits at sep outside brackets."""
    parts, cur, depth = [], [], 0
    for t in tokens:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def declarations(tokens):
    """Top-level declarations (up to ';'), skipping function bodies."""
    cur, depth = [], 0
    for t in tokens:
        cur.append(t)
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if t == "}" and depth == 0 and len(cur) > 2 and ")" in cur and \
                    cur[cur.index("{") - 1] == ")":
                cur = []  # an inline function's body
        elif t == ";" and depth == 0:
            yield cur[:-1]
            cur = []


def base_name(words):
    """The type's name without pointers: "struct tag", a typedef name, or a builtin's words
    in a fixed order ("int unsigned" for unsigned int)."""
    words = [w for w in words if w != "*"]
    if words[0] in ("struct", "enum", "union") and len(words) == 2:
        return words[0] + " " + words[1]
    return " ".join(sorted(words)) if all(w in KEYWORDS for w in words) else " ".join(words)


def c_int_value(text):
    return int(text.rstrip("uUlL"), 0)


class Model:
    def __init__(self):
        self.typedefs = {}       # name -> type tokens
        self.enums = {}          # type name -> {member: value}
        self.enum_names = set()  # names (and "enum tag") that are enums
        self.constants = {}
        self.structs = {}        # C name ("tag" or typedef name) -> python class name
        self.struct_fields = []  # (class, [(field, ctypes expr)]) in declaration order
        self.opaque = set()
        self.callbacks = []      # (name, restype, argtypes)
        self.callback_names = set()
        self.api = []            # (name, restype, argtypes)
        self.untyped = {}        # ncclshim functions left out: name -> why
        self.rows = []
        self.capabilities = []
        self.config = []
        self.emitted = []        # ("struct", cls) / ("callback", name), in order

    # ---- types ----
    def ctype(self, tokens):
        """A ctypes expression for a C type (tokens without a name); None for void."""
        words = [t for t in tokens if t not in ("const", "volatile", "restrict")]
        if not [t for t in words if t != "*"]:
            raise Untyped("empty type")
        return self._resolve(base_name(words), words.count("*"))

    def _resolve(self, base, ptr):
        if base in self.callback_names:
            return base if ptr == 0 else "_c.c_void_p"
        if ptr >= 1:
            if ptr == 1 and base in ("char", "char signed", "char unsigned"):
                return "_c.c_char_p"
            return "_c.c_void_p"
        if base in NAMED_SCALARS:
            return "_c." + NAMED_SCALARS[base]
        if base in BUILTINS:
            return None if BUILTINS[base] is None else "_c." + BUILTINS[base]
        if base in self.enum_names:
            return "_c.c_int"
        if base in self.structs:
            return self.structs[base]
        if base in self.typedefs:
            words = [x for x in self.typedefs[base] if x not in ("const", "volatile")]
            return self._resolve(base_name(words), words.count("*"))
        raise Untyped("unknown type %r" % base)

    # ---- declarations ----
    def declaration(self, d):
        if d[:len(API_MARK)] == API_MARK:
            name, ret, params = self.prototype(d[len(API_MARK):])
            self.api.append((name, self.ctype(ret) or "None", self.params(params, name)))
            return
        typedef = d[:1] == ["typedef"]
        body = d[1:] if typedef else d
        if "{" in body and body[0] in ("enum", "struct", "union"):
            close = len(body) - body[::-1].index("}")
            tag = body[1] if body[1] != "{" else None
            inner = body[body.index("{") + 1:close - 1]
            names = [t for t in body[close:] if t != "*"] if typedef else []
            if body[0] == "enum":
                self.enum(tag, names, inner)
            elif body[0] == "struct":
                self.struct(tag, names, inner)
            return
        if not typedef:
            return
        if "(" in body:  # a function-pointer typedef: ret (*name)(params)
            i = body.index("(")
            if body[i + 1:i + 2] == ["*"] and body[i + 3:i + 5] == [")", "("]:
                name = body[i + 2]
                if "_pfn_" in name:
                    return  # a table's entry types: the rows give them (CFUNCTYPE is slow)
                try:
                    ret = self.ctype(body[:i]) or "None"
                    args = self.params(split_top(body[i + 5:-1], ","), name)
                except Untyped:
                    return
                self.callbacks.append((name, ret, args))
                self.callback_names.add(name)
                self.emitted.append(("callback", name))
            return
        name = body[-1]
        target = body[:-1]
        if target[:1] == ["struct"] and len(target) == 2 and target[1] in self.structs:
            self.structs[name] = self.structs[target[1]]
            self.emitted.append(("alias", (name, self.structs[target[1]])))
        elif target[:1] == ["enum"] and ("enum " + target[1]) in self.enum_names:
            self.enum_names.add(name)
        else:
            self.typedefs[name] = target

    def prototype(self, d):
        i = d.index("(")
        return d[i - 1], d[:i - 1], split_top(d[i + 1:-1], ",")

    def params(self, params, where):
        if params == [["void"]] or params == []:
            return []
        out = []
        for p in params:
            if "(" in p:  # a function-pointer parameter written out: a pointer
                out.append("_c.c_void_p")
                continue
            array = "[" in p  # t name[] is t *name
            if array:
                p = p[:p.index("[")]
            if len(p) > 1 and re.match(r"[A-Za-z_]\w*$", p[-1]) and p[-1] not in KEYWORDS:
                p = p[:-1]  # the parameter's name
            try:
                out.append(self.ctype(p + ["*"] * array) or "None")
            except Untyped as e:
                raise Untyped("%s: %s" % (where, e))
        return out

    def enum(self, tag, names, inner):
        values, nxt = {}, 0
        for item in split_top(inner, ","):
            if not item:
                continue
            member = item[0]
            if len(item) > 1 and item[1] == "=":
                expr = " ".join(values.get(t, self.constants.get(t, t)).__str__()
                                for t in item[2:])
                expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
                if re.fullmatch(r"[0-9a-fA-FxX()+\-*/<>|&~ ]+", expr):
                    nxt = int(eval(expr, {"__builtins__": {}}))  # digits and operators only
                else:
                    nxt = None
            if nxt is not None:
                values[member] = nxt
                self.constants[member] = nxt
                nxt += 1
        key = names[0] if names else (tag or "")
        self.enums.setdefault(key, {}).update(values)
        for n in names:
            self.enum_names.add(n)
        if tag:
            self.enum_names.add("enum " + tag)
            self.enum_names.add(tag)

    def struct(self, tag, names, inner):
        cls = tag or (names[0] if names else None)
        if cls is None or cls.startswith("_"):
            return  # a system header's
        fields = []
        try:
            for decl in split_top(inner, ";"):
                if "(" in decl:
                    raise Untyped("a function-pointer field")
                # "t *a, b[4]": the type, then declarators (stars, a name, dimensions)
                parts = split_top(decl, ",")
                first = parts[0]
                start = (first.index("[") if "[" in first else len(first)) - 1
                while start > 0 and first[start - 1] == "*":
                    start -= 1
                base = first[:start]
                for dec in [first[start:]] + parts[1:]:
                    rest = [t for t in dec if t != "*"]
                    t = self.ctype(base + ["*"] * dec.count("*"))
                    for dim in [rest[i + 1] for i, x in enumerate(rest) if x == "["]:
                        t = "(%s * %d)" % (t, c_int_value(dim))
                    fields.append((rest[0], t))
        except (Untyped, IndexError, ValueError):
            return  # a struct Python does not need (a system header's, a bitfield's)
        for n in ([tag] if tag else []) + ["struct " + tag if tag else ""] + names:
            if n:
                self.structs[n] = cls
        self.struct_fields.append((cls, fields))
        self.emitted.append(("struct", cls))
        for n in names:
            if n != cls:
                self.emitted.append(("alias", (n, cls)))

    def marked(self, words):
        """One marked row: its kind, its words, py_end."""
        kind, words = words[0], words[1:-1]
        if kind == "py_capability":
            self.capabilities.append((words[0], words[1].strip('"'), int(words[2])))
        elif kind == "py_config":
            self.config.append((words[0], words[1], words[2], int(words[3])))
        else:
            self.row(words)

    def row(self, words):
        """name version policy role returns, then py_param TYPE... py_named NAME per parameter."""
        name, version, policy, role, kind = words[:5]
        argtypes, names = [], []
        params = " ".join(words[5:]).split("py_param")[1:]
        for p in params:
            type_text, pname = p.split("py_named")
            try:
                argtypes.append(self.ctype(tokenize(type_text)) or "None")
            except Untyped as e:
                raise Untyped("row %s: %s" % (name, e))
            names.append(pname.strip())
        restype = self.structs.get("ncclshim_team_t") if kind == "TEAM" else \
            RETURN_KINDS.get(kind)
        if restype is None:
            raise Untyped("row %s: return kind %s" % (name, kind))
        self.rows.append((name, int(version), policy, role, restype, argtypes, names))


def parse(text):
    model = Model()
    # The marked rows are not declarations (no ';'): take them out first.
    row = re.compile(r"\b(?:py_row|py_capability|py_config)\b.*?\bpy_end\b", re.S)
    marked = row.findall(text)
    text = row.sub(" ", text)
    for d in declarations(tokenize(text)):
        try:
            model.declaration(d)
        except Untyped as e:
            if d[:len(API_MARK)] == API_MARK:  # left out; the package's test names any it uses
                name = d[len(API_MARK):][d[len(API_MARK):].index("(") - 1]
                model.untyped[name] = str(e)
            # else a declaration Python does not need (a system header's)
    for m in marked:
        model.marked(tokenize(m))
    return model


def render(model):
    out = ['"""ncclshim\'s C declarations for ctypes. GENERATED at build time by',
           "bindings/python/gen_functions.py from include/ncclshim/*.h and their X-macro lists:",
           'do not edit."""', "import ctypes as _c", ""]
    fields = dict(model.struct_fields)
    callbacks = {c[0]: c for c in model.callbacks}
    for kind, what in model.emitted:
        if kind == "struct":
            out.append("class %s(_c.Structure):" % what)
            out.append("    _fields_ = [%s]" % ", ".join('("%s", %s)' % f for f in fields[what]))
            out.append("")
        elif kind == "alias":
            out.append("%s = %s" % what)
        else:
            name, ret, args = callbacks[what]
            out.append("%s = _c.CFUNCTYPE(%s)" % (name, ", ".join([ret] + args)))
    out.append("")
    out.append("STRUCTS = {%s}" % ", ".join(
        '"%s": %s' % (n, c) for n, c in sorted(model.structs.items())
        if not n.startswith(("struct ", "_"))))
    out.append("CALLBACKS = {%s}" % ", ".join('"%s": %s' % (c[0], c[0])
                                              for c in model.callbacks))
    out.append("ENUMS = {")
    for name, values in model.enums.items():
        out.append('    "%s": {%s},' % (name, ", ".join('"%s": %d' % kv for kv in values.items())))
    out.append("}")
    out.append("CONSTANTS = {k: v for e in ENUMS.values() for k, v in e.items()}")
    out.append("NCCL_FUNCTIONS = (")
    for name, version, policy, role, restype, argtypes, names in model.rows:
        out.append('    ("%s", %d, "%s", "%s", %s, (%s), (%s)),' % (
            name, version, policy, role, restype, "".join(a + ", " for a in argtypes),
            "".join('"%s", ' % n for n in names)))
    out.append(")")
    out.append("API = {")
    for name, restype, argtypes in model.api:
        out.append('    "%s": (%s, (%s)),' % (name, restype, "".join(a + ", " for a in argtypes)))
    out.append("}")
    caps = "".join('("%s", "%s", %d), ' % c for c in model.capabilities)
    untyped = ", ".join('"%s": "%s"' % (n, why.replace('"', "'"))
                        for n, why in sorted(model.untyped.items()))
    out.append("UNTYPED = {%s}" % untyped)
    out.append("CAPABILITIES = (%s)" % caps)
    config = "".join('("%s", "%s", "%s", %d), ' % c for c in model.config)
    out.append("CONFIG_FIELDS = (%s)" % config)
    return "\n".join(out) + "\n"


def generate(cc, include):
    """The module's text; cc is the preprocessor command as a list (["cc"])."""
    proc = subprocess.run(list(cc) + ["-E", "-P", "-DNCCLSHIM_BUILDING", "-I", include, ROWS],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("gen_functions.py: %s -E failed:\n%s" % (" ".join(cc), proc.stderr))
    try:
        model = parse(proc.stdout)
    except Untyped as e:
        raise SystemExit("gen_functions.py: cannot type %s" % e)
    if not model.rows or not model.api:
        raise SystemExit("gen_functions.py: no rows or no ncclshim functions in %s" % ROWS)
    return render(model)


def main():
    argv = sys.argv[1:]
    if "--" not in argv or len(argv) < 5 or argv[0] != "--include":
        raise SystemExit(__doc__.split("\n\n")[1])
    cut = argv.index("--")
    include, output, cc = argv[1], argv[2], argv[cut + 1:]
    text = generate(cc, include)
    with open(output + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(output + ".tmp", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
