//! Rust declarations from the C preprocessor's expansion of `ffi_rows.c`: the function tables,
//! their rows, the capabilities (of an NCCL and of a communicator), the config fields and the statuses. Used by build.rs, and by the tests
//! (tests/ffi_drift.rs) to show that an unknown C type stops the build with a clear message.

use std::fmt::Write as _;

/// C spelling (after `const` and `*` are taken off) -> Rust spelling. The named types are
/// declared with their C names in src/ffi.rs. A new C type in a list needs one line here (and
/// its declaration in src/ffi.rs when it is not a plain C type).
pub const C_TYPES: &[(&str, &str)] = &[
    ("void", "c_void"),
    ("char", "c_char"),
    ("int", "c_int"),
    ("unsigned int", "c_uint"),
    ("unsigned char", "c_uchar"),
    ("float", "f32"),
    ("size_t", "usize"),
    ("int8_t", "i8"),
    ("int16_t", "i16"),
    ("int32_t", "i32"),
    ("int64_t", "i64"),
    ("uint8_t", "u8"),
    ("uint16_t", "u16"),
    ("uint32_t", "u32"),
    ("uint64_t", "u64"),
    ("ncclResult_t", "ncclResult_t"),
    ("ncclComm_t", "ncclComm_t"),
    ("ncclUniqueId", "ncclUniqueId"),
    ("ncclConfig_t", "ncclConfig_t"),
    ("ncclDataType_t", "ncclDataType_t"),
    ("ncclRedOp_t", "ncclRedOp_t"),
    ("ncclScalarResidence_t", "ncclScalarResidence_t"),
    ("ncclshim_window_t", "ncclshim_window_t"),
    ("ncclshim_sim_info_t", "ncclshim_sim_info_t"),
    ("ncclshim_wait_signal_desc_t", "ncclshim_wait_signal_desc_t"),
    ("ncclshim_param_handle_t", "ncclshim_param_handle_t"),
    ("ncclshim_team_t", "ncclshim_team_t"),
    ("ncclshim_multimem_handle_t", "ncclshim_multimem_handle_t"),
    (
        "ncclshim_dev_comm_requirements_t",
        "ncclshim_dev_comm_requirements_t",
    ),
    ("ncclshim_dev_comm_t", "ncclshim_dev_comm_t"),
    (
        "ncclshim_dev_resource_requirements_t",
        "ncclshim_dev_resource_requirements_t",
    ),
    (
        "ncclshim_lsa_barrier_handle_t",
        "ncclshim_lsa_barrier_handle_t",
    ),
    (
        "ncclshim_gin_barrier_handle_t",
        "ncclshim_gin_barrier_handle_t",
    ),
    ("ncclshim_lla2a_handle_t", "ncclshim_lla2a_handle_t"),
    ("ncclshim_comm_properties_t", "ncclshim_comm_properties_t"),
    (
        "ncclshim_gin_outbox_handle_t",
        "ncclshim_gin_outbox_handle_t",
    ),
    (
        "ncclshim_gin_inbox_a2a_handle_t",
        "ncclshim_gin_inbox_a2a_handle_t",
    ),
    ("ncclshim_coll_config_t", "ncclshim_coll_config_t"),
    (
        "ncclshim_encryption_config_t",
        "ncclshim_encryption_config_t",
    ),
    ("ncclshim_cft_le_id_t", "ncclshim_cft_le_id_t"),
    (
        "ncclshim_cft_barrier_handle_t",
        "ncclshim_cft_barrier_handle_t",
    ),
    ("cudaStream_t", "cudaStream_t"),
    // ncclshim's own, for the declarations of the functions (ncclshim_*.h).
    ("ncclshim_status", "ncclshim_status"),
    ("ncclshim_found_via", "ncclshim_found_via"),
    ("ncclshim_comm_state", "ncclshim_comm_state"),
    ("ncclshim_nccl", "ncclshim_nccl"),
    ("ncclshim_cuda", "ncclshim_cuda"),
    ("ncclshim_comm", "ncclshim_comm"),
    ("ncclshim_symmem", "ncclshim_symmem"),
    ("ncclshim_watchdog", "ncclshim_watchdog"),
    ("ncclshim_nccl_list", "ncclshim_nccl_list"),
    ("ncclshim_plugin_list", "ncclshim_plugin_list"),
    ("ncclshim_nccl_table", "ncclshim_nccl_table"),
    ("ncclshim_cuda_table", "ncclshim_cuda_table"),
    ("ncclshim_nccl_options", "ncclshim_nccl_options"),
    ("ncclshim_cuda_options", "ncclshim_cuda_options"),
    ("ncclshim_comm_options", "ncclshim_comm_options"),
    ("ncclshim_watchdog_options", "ncclshim_watchdog_options"),
    ("ncclshim_watch_counts", "ncclshim_watch_counts"),
    ("ncclshim_nccl_entry", "ncclshim_nccl_entry"),
    ("ncclshim_attempt", "ncclshim_attempt"),
    ("ncclshim_plugin", "ncclshim_plugin"),
    ("ncclshim_comm_facts", "ncclshim_comm_facts"),
    // not mirrored: the caller passes its own (crate::probe)
    ("ncclshim_cuda_device_info", "c_void"),
    // C enums passed as int
    ("enum ncclshim_nccl_function", "c_int"),
    ("enum ncclshim_cuda_function", "c_int"),
    ("ncclshim_capability", "c_int"),
    ("ncclshim_comm_capability", "c_int"),
    ("ncclshim_config_field", "c_int"),
    ("ncclshim_coll_config_field", "c_int"),
    ("ncclshim_answer", "c_int"),
    ("ncclshim_cuda_bootstrap", "c_int"),
    ("ncclshim_cuda_support", "c_int"),
    ("ncclshim_plugin_kind", "c_int"),
    ("ncclshim_plugin_verdict", "c_int"),
    ("CUdevice", "CUdevice"),
    ("CUdeviceptr", "CUdeviceptr"),
    ("CUcontext", "CUcontext"),
    ("CUstream", "CUstream"),
    ("CUevent", "CUevent"),
    ("CUuuid", "CUuuid"),
    ("ncclshim_cu_result", "ncclshim_cu_result"),
    (
        "ncclshim_cu_device_attribute",
        "ncclshim_cu_device_attribute",
    ),
    (
        "ncclshim_cu_pointer_attribute",
        "ncclshim_cu_pointer_attribute",
    ),
    (
        "ncclshim_cu_stream_capture_status",
        "ncclshim_cu_stream_capture_status",
    ),
];

/// A row's `returns` kind -> the Rust return type ("" for none).
pub const RETURN_KINDS: &[(&str, &str)] = &[
    ("RESULT", " -> ncclResult_t"),
    ("STRING", " -> *const c_char"),
    ("VOID", ""),
    ("INT", " -> c_int"),
    ("TEAM", " -> ncclshim_team_t"),
    ("CU_RESULT", " -> ncclshim_cu_result"),
];

const WHERE_TO_ADD: &str = "add it to C_TYPES in bindings/rust/build.rs \
                            (and declare it in bindings/rust/src/ffi.rs if it is not a C type)";

/// The C type `spelling` (e.g. "const char **", "ncclshim_comm *const *") in Rust
/// (`*mut *const c_char`, `*mut *const ncclshim_comm`... each level's `*const` or `*mut` from
/// whether what it points to is const).
pub fn rust_type(spelling: &str, row: &str) -> Result<String, String> {
    let spaced = spelling.replace('*', " * ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let first_star = words.iter().position(|w| *w == "*").unwrap_or(words.len());
    let (base, stars) = words.split_at(first_star);
    let mut pointee_const = base.first() == Some(&"const");
    let base: Vec<&str> = base.iter().copied().filter(|w| *w != "const").collect();
    let base = base.join(" ");
    let mut t = C_TYPES
        .iter()
        .find(|(c, _)| *c == base)
        .map(|(_, r)| r.to_string())
        .ok_or_else(|| format!("unknown C type `{base}` in row {row}: {WHERE_TO_ADD}"))?;
    // A top-level const (after the last star, or of a plain value) is the callee's business.
    for (i, word) in stars.iter().enumerate() {
        match *word {
            "*" => {
                t = format!("{} {t}", if pointee_const { "*const" } else { "*mut" });
                pointee_const = stars.get(i + 1) == Some(&"const");
            }
            "const" => {}
            other => {
                return Err(format!(
                    "C type `{spelling}` in row {row}: `{other}` after `*` is not supported"
                ))
            }
        }
    }
    Ok(t)
}

/// The words of each `rs_<kind> ... rs_end` group of the preprocessed text.
fn groups<'a>(text: &'a str, kind: &str) -> Vec<Vec<&'a str>> {
    let mut found = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for word in text.split_whitespace() {
        match (&mut current, word) {
            (None, w) if w == kind => current = Some(Vec::new()),
            (Some(_), "rs_end") => found.push(current.take().unwrap()),
            (Some(words), w) => words.push(w),
            (None, _) => {}
        }
    }
    found
}

/// PREMUL_SUM -> PremulSum
fn camel(id: &str) -> String {
    id.split('_')
        .map(|part| {
            let lower = part.to_ascii_lowercase();
            let mut chars = lower.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn version_text(packed: u32) -> String {
    format!("{}.{}.{}", packed / 10000, packed / 100 % 100, packed % 100)
}

struct Row {
    list: String,
    name: String,
    version: u32,
    required: bool,
    params: Vec<(String, String)>,
    returns: String,
}

fn parse_rows(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for words in groups(text, "rs_row") {
        let [list, name, version, policy, returns, rest @ ..] = words.as_slice() else {
            return Err(format!("malformed row {words:?}"));
        };
        let row_name = format!("{name} of the {list} list");
        let returns = RETURN_KINDS
            .iter()
            .find(|(k, _)| k == returns)
            .map(|(_, r)| r.to_string())
            .ok_or_else(|| format!("unknown return kind `{returns}` in row {row_name}: add it to RETURN_KINDS in bindings/rust/build.rs"))?;
        let mut params = Vec::new();
        let text = rest.join(" ");
        for param in text
            .split("rs_param")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (ty, pname) = param
                .split_once(" rs_named ")
                .ok_or_else(|| format!("malformed parameter `{param}` in row {row_name}"))?;
            params.push((pname.trim().to_string(), rust_type(ty, &row_name)?));
        }
        rows.push(Row {
            list: list.to_string(),
            name: name.to_string(),
            version: version
                .parse()
                .map_err(|_| format!("bad version in row {row_name}"))?,
            required: *policy == "REQUIRED",
            params,
            returns,
        });
    }
    Ok(rows)
}

fn table(out: &mut String, rows: &[Row], list: &str, c_name: &str, what: &str) {
    let version_word = if list == "nccl" {
        "first exported by NCCL"
    } else {
        "asked of the driver at ABI"
    };
    let _ = writeln!(
        out,
        "/// {what}: `{c_name}`, one field per row of the list, in its order."
    );
    let _ = writeln!(out, "/// Every entry is callable (never NULL); see the C header for what a missing function answers.");
    let _ = writeln!(
        out,
        "#[repr(C)]\n#[allow(non_snake_case)]\npub struct {c_name} {{"
    );
    for row in rows.iter().filter(|r| r.list == list) {
        let params: Vec<String> = row
            .params
            .iter()
            .map(|(n, t)| format!("{n}: {t}"))
            .collect();
        let version = if list == "nccl" {
            version_text(row.version)
        } else {
            row.version.to_string()
        };
        let _ = writeln!(
            out,
            "    /// `{}`, {version_word} {version}, {}.\n    pub {}: unsafe extern \"C\" fn({}){},",
            row.name,
            if row.required { "required" } else { "optional" },
            row.name,
            params.join(", "),
            row.returns
        );
    }
    let _ = writeln!(out, "}}\n");
}

pub fn generate(text: &str) -> Result<String, String> {
    let rows = parse_rows(text)?;
    let mut out =
        String::from("// Generated by build.rs from ncclshim's X-macro lists: do not edit.\n\n");
    table(
        &mut out,
        &rows,
        "nccl",
        "ncclshim_nccl_table",
        "The NCCL function table",
    );
    table(
        &mut out,
        &rows,
        "cuda",
        "ncclshim_cuda_table",
        "The CUDA driver function table",
    );
    for (list, konst) in [("nccl", "NCCL_FUNCTIONS"), ("cuda", "CUDA_FUNCTIONS")] {
        let _ = writeln!(
            out,
            "/// The rows of the {list} list, in order: name, version, required."
        );
        let _ = writeln!(out, "pub const {konst}: &[FunctionRow] = &[");
        for row in rows.iter().filter(|r| r.list == list) {
            let _ = writeln!(
                out,
                "    FunctionRow {{ name: \"{}\", version: {}, required: {} }},",
                row.name, row.version, row.required
            );
        }
        let _ = writeln!(out, "];\n");
    }

    let caps = groups(text, "rs_capability");
    let mut variants = Vec::new();
    for cap in &caps {
        let [id, name, version] = cap.as_slice() else {
            return Err(format!("malformed capability {cap:?}"));
        };
        let version = version_text(version.parse().unwrap_or(0));
        variants.push((format!("{name}: NCCL >= {version}."), camel(id)));
    }
    list_enum(
        &mut out,
        "A capability of the loaded NCCL (`NCCLSHIM_CAPABILITIES`); its value is its bit.",
        "Capability",
        &variants,
        "",
    );

    let mut variants = Vec::new();
    for cap in groups(text, "rs_comm_capability") {
        let [id, name] = cap.as_slice() else {
            return Err(format!("malformed communicator capability {cap:?}"));
        };
        variants.push((format!("{name} (`NCCLSHIM_COMM_CAP_{id}`)."), camel(id)));
    }
    list_enum(
        &mut out,
        "A per-communicator capability (`NCCLSHIM_COMM_CAPABILITIES`, ncclshim/comm_query.h), \
         with its stable value.",
        "CommCapability",
        &variants,
        "",
    );

    let fields = groups(text, "rs_config");
    let mut variants = Vec::new();
    for field in &fields {
        let [id, name, kind, version] = field.as_slice() else {
            return Err(format!("malformed config field {field:?}"));
        };
        let kind = if *kind == "PTR" { "a string" } else { "an int" };
        let version = version_text(version.parse().unwrap_or(0));
        variants.push((
            format!("`{name}`, {kind}, honoured from NCCL {version}."),
            camel(id),
        ));
    }
    list_enum(
        &mut out,
        "A field of `ncclConfig_t` (`NCCLSHIM_CONFIG_FIELDS`).",
        "ConfigField",
        &variants,
        "",
    );
    let _ = writeln!(out, "impl ConfigField {{\n    /// Whether the field holds a string (else an int).\n    pub fn is_string(self) -> bool {{\n        matches!(self, ");
    let strings: Vec<String> = fields
        .iter()
        .filter(|f| f[2] == "PTR")
        .map(|f| format!("ConfigField::{}", camel(f[0])))
        .collect();
    let _ = writeln!(
        out,
        "            {}\n        )\n    }}\n}}",
        strings.join(" | ")
    );
    statuses(&mut out, text)?;
    functions(&mut out, text)?;
    nccl_enum(&mut out, text, "ncclDataType_t", "DataType")?;
    nccl_enum(&mut out, text, "ncclRedOp_t", "RedOp")?;
    Ok(out)
}

/// `Status` from `NCCLSHIM_STATUSES`: one variant per row, `Unknown` for any other code.
fn statuses(out: &mut String, text: &str) -> Result<(), String> {
    let mut variants = Vec::new();
    for (i, row) in groups(text, "rs_status").iter().enumerate() {
        let [id, value, sentence @ ..] = row.as_slice() else {
            return Err(format!("malformed status {row:?}"));
        };
        if value.parse::<usize>() != Ok(i) {
            return Err(format!("status {id} has value {value}, not {i}"));
        }
        let sentence = sentence.join(" ");
        let sentence = sentence.trim_matches('"');
        let mut chars = sentence.chars();
        let sentence: String = chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default();
        variants.push((format!("{sentence} (`NCCLSHIM_{id}`, {value})."), camel(id)));
    }
    list_enum(
        out,
        "ncclshim's status codes (`ncclshim_status`, `NCCLSHIM_STATUSES`), with their stable values.",
        "Status",
        &variants,
        "    /// A code this crate does not know (a newer libncclshim).\n    Unknown(i32),\n",
    );
    Ok(())
}

/// A public enum of a list's rows: each `(doc, variant)` in the list's order, so that a
/// variant's index is its value, then `last` (a catch-all variant, or ""), and `ALL`, every
/// row's variant in order.
fn list_enum(out: &mut String, doc: &str, name: &str, variants: &[(String, String)], last: &str) {
    let _ = writeln!(out, "/// {doc}\n#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n#[non_exhaustive]\npub enum {name} {{");
    for (doc, variant) in variants {
        let _ = writeln!(out, "    /// {doc}\n    {variant},");
    }
    let _ = writeln!(out, "{last}}}\n\nimpl {name} {{\n    /// Every row of the list, in its order (a variant's index is its value).\n    pub const ALL: &'static [{name}] = &[");
    for (_, variant) in variants {
        let _ = writeln!(out, "        {name}::{variant},");
    }
    let _ = writeln!(out, "    ];\n}}\n");
}

/// NCCL's C enum `typedef enum { ... } c_type;` (nccl_abi.h, in the preprocessed text) as the
/// public enum `name`, with NCCL's values: one variant per value, named without the `nccl`
/// prefix (a later name of the same value is an alias, named in the doc), up to the `ncclNum*`
/// entry that counts them; `raw()` gives the value and `ALL` every variant in order.
pub fn nccl_enum(out: &mut String, text: &str, c_type: &str, name: &str) -> Result<(), String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let missing = || format!("no `typedef enum {{ ... }} {c_type};` in the headers");
    let end = text.find(&format!("}} {c_type};")).ok_or_else(missing)?;
    let start = text[..end].rfind("typedef enum {").ok_or_else(missing)? + "typedef enum {".len();
    let mut values: Vec<(&str, i64, Vec<&str>)> = Vec::new();
    for entry in text[start..end].split(',') {
        let (c_name, value) = entry
            .split_once('=')
            .ok_or_else(|| format!("{c_type}: `{entry}` has no value"))?;
        let c_name = c_name.trim();
        if c_name.starts_with("ncclNum") {
            break;
        }
        let value = value.trim();
        let value: i64 = value
            .parse()
            .map_err(|_| format!("{c_type}: {c_name} = `{value}` is not a number"))?;
        match values.iter_mut().find(|(_, v, _)| *v == value) {
            Some((_, _, aliases)) => aliases.push(c_name),
            None => values.push((c_name, value, Vec::new())),
        }
    }
    let _ = writeln!(out, "\n/// NCCL's `{c_type}`, with NCCL's values.\n#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n#[repr(i32)]\npub enum {name} {{");
    let mut variants = Vec::new();
    for (c_name, value, aliases) in &values {
        let variant = c_name
            .strip_prefix("nccl")
            .ok_or_else(|| format!("{c_type}: {c_name} lacks the nccl prefix"))?;
        let aliases: Vec<String> = aliases.iter().map(|a| format!("`{a}`")).collect();
        let aliases = if aliases.is_empty() {
            String::new()
        } else {
            format!(" (= {})", aliases.join(", "))
        };
        let _ = writeln!(out, "    /// `{c_name}`{aliases}\n    {variant} = {value},");
        variants.push(variant);
    }
    let _ = writeln!(out, "}}\n\nimpl {name} {{\n    /// Every value, in NCCL's order.\n    pub const ALL: &'static [{name}] = &[");
    for variant in &variants {
        let _ = writeln!(out, "        {name}::{variant},");
    }
    let _ = writeln!(out, "    ];\n    /// NCCL's value.\n    #[inline]\n    pub fn raw(self) -> {c_type} {{\n        self as i32\n    }}\n}}");
    Ok(())
}

/// What marks a public declaration in the preprocessed headers: NCCLSHIM_API, which
/// ffi_rows.c has expand to the export attribute.
const API_MARK: &str = "__attribute__((visibility(\"default\")))";

/// A C parameter or function name that is a Rust keyword gets a `_`.
fn rust_name(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "fn", "type", "ref", "match", "mod", "move", "impl", "in", "use",
    ];
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// `type name` (C) -> (Rust name, C type): the name is the last identifier.
fn split_name(decl: &str) -> Result<(String, String), String> {
    let decl = decl.trim();
    let at = decl
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let (ty, name) = decl.split_at(at);
    if name.is_empty() || ty.trim().is_empty() {
        return Err(format!("cannot read `{decl}` as a type and a name"));
    }
    Ok((rust_name(name), ty.trim().to_string()))
}

/// The `extern "C"` block of every function the headers declare with NCCLSHIM_API, in the
/// headers' order, each C type through C_TYPES.
pub fn functions(out: &mut String, text: &str) -> Result<(), String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = writeln!(out, "\n// Every function of ncclshim's public headers (`NCCLSHIM_API`), in their order\n// (build.rs links the library: static when it compiles it).\nextern \"C\" {{");
    for declaration in text.split(API_MARK).skip(1) {
        let declaration = declaration.split(';').next().unwrap_or("");
        let row = format!("`{}`", declaration.trim());
        let (open, close) = match (declaration.find('('), declaration.rfind(')')) {
            (Some(open), Some(close)) if open < close => (open, close),
            _ => return Err(format!("{row} is not a function declaration")),
        };
        let (name, returns) =
            split_name(&declaration[..open]).map_err(|e| format!("{row}: {e}"))?;
        let returns = match returns.as_str() {
            "void" => String::new(),
            c => format!(" -> {}", rust_type(c, &row)?),
        };
        let mut params = Vec::new();
        let list = declaration[open + 1..close].trim();
        if list != "void" {
            for param in list.split(',') {
                let (pname, ty) = split_name(param).map_err(|e| format!("{row}: {e}"))?;
                params.push(format!("{pname}: {}", rust_type(&ty, &row)?));
            }
        }
        let _ = writeln!(out, "    pub fn {name}({}){returns};", params.join(", "));
    }
    let _ = writeln!(out, "}}");
    Ok(())
}
