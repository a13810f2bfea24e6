//! The Rust declarations against the C side: the library's export list, the C structs'
//! layout and enum values (compiled with the C compiler here), the generated tables' rows,
//! and the build script's refusal of a C type it does not know.

use std::ffi::{c_char, c_int, CStr};
use std::mem::size_of;
use std::path::PathBuf;
use std::process::Command;

use ncclshim::ffi;
use ncclshim::{Capability, CommCapability, ConfigField, DataType, RedOp, Status};

#[allow(dead_code)]
#[path = "../gen_lists.rs"]
mod build_script;

#[path = "../csrc_build.rs"]
#[allow(dead_code)]
mod csrc_build;

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_export_is_declared_and_every_declaration_exported() {
    let symbols = checkout().join("abi/libncclshim.symbols");
    let Ok(list) = std::fs::read_to_string(&symbols) else {
        eprintln!(
            "skipped: {} not found (not in an ncclshim checkout)",
            symbols.display()
        );
        return;
    };
    let exported: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_once("@@"))
        .map(|(name, _)| name)
        .collect();
    assert!(exported.len() > 50, "{} names only", exported.len());
    // The declarations build.rs generated from the headers.
    let generated = include_str!(concat!(env!("OUT_DIR"), "/lists.rs"));
    let (_, block) = generated.split_once("extern \"C\" {").unwrap();
    let (block, _) = block.split_once('}').unwrap();
    let declared: Vec<&str> = block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .filter_map(|l| l.split_once('(').map(|(name, _)| name))
        .collect();
    for name in &exported {
        assert!(
            declared.contains(name),
            "{name} is exported by libncclshim but not declared (with NCCLSHIM_API) in its headers"
        );
    }
    for name in &declared {
        assert!(
            exported.contains(name),
            "the headers declare {name}, which libncclshim does not export"
        );
    }
}

#[test]
fn generated_rows_match_the_library() {
    assert_eq!(
        ffi::NCCL_FUNCTIONS.len() * size_of::<usize>(),
        size_of::<ffi::ncclshim_nccl_table>()
    );
    assert_eq!(
        ffi::CUDA_FUNCTIONS.len() * size_of::<usize>(),
        size_of::<ffi::ncclshim_cuda_table>()
    );
    // Each list with the library's name, version and required answers for its rows.
    type Ask<T> = unsafe extern "C" fn(c_int) -> T;
    type List = (
        &'static [ffi::FunctionRow],
        Ask<*const c_char>,
        Ask<c_int>,
        Ask<c_int>,
    );
    let lists: [List; 2] = [
        (
            ffi::NCCL_FUNCTIONS,
            ffi::ncclshim_nccl_function_name,
            ffi::ncclshim_nccl_function_version,
            ffi::ncclshim_nccl_function_required,
        ),
        (
            ffi::CUDA_FUNCTIONS,
            ffi::ncclshim_cuda_function_name,
            ffi::ncclshim_cuda_function_version,
            ffi::ncclshim_cuda_function_required,
        ),
    ];
    for (rows, name, version, required) in lists {
        for (i, row) in rows.iter().enumerate() {
            let i = i as c_int;
            // SAFETY: any index is accepted; static strings.
            let (c_name, c_version, c_required) =
                unsafe { (CStr::from_ptr(name(i)), version(i), required(i)) };
            assert_eq!(c_name.to_str().unwrap(), row.name);
            assert_eq!(c_version as u32, row.version, "{}", row.name);
            assert_eq!(c_required != 0, row.required, "{}", row.name);
        }
    }
    // one past the end is unknown to the library: the lists have the same length
    // SAFETY: as above.
    let past = unsafe {
        CStr::from_ptr(ffi::ncclshim_nccl_function_name(
            ffi::NCCL_FUNCTIONS.len() as i32
        ))
    };
    assert_eq!(past.to_str().unwrap(), "(unknown function)");
}

#[test]
fn status_names_match_their_codes() {
    // The C library's own list: ncclshim_status_name answers "UNKNOWN" past its last code.
    let mut c_names = Vec::new();
    loop {
        // SAFETY: any value is accepted; the string is static.
        let name = unsafe { CStr::from_ptr(ffi::ncclshim_status_name(c_names.len() as i32)) };
        let name = name.to_str().unwrap().to_string();
        if name == "UNKNOWN" {
            break;
        }
        c_names.push(name);
    }
    assert!(c_names.len() > 17, "SECOND_COPY (17) is in the C list");
    assert_eq!(
        Status::ALL.len(),
        c_names.len(),
        "Rust knows every C status"
    );
    for (code, name) in c_names.iter().enumerate() {
        let status = Status::from_code(code as i32);
        assert_ne!(
            status,
            Status::Unknown(code as i32),
            "{name} is unknown to Rust"
        );
        assert_eq!(status.name(), *name);
        assert_eq!(status.code(), code as i32);
        let debug = format!("{status:?}").to_ascii_uppercase();
        assert_eq!(debug, name.replace('_', ""), "{status:?} vs {name}");
    }
    let past = c_names.len() as i32;
    assert_eq!(Status::from_code(past), Status::Unknown(past));
    assert_eq!(Status::from_code(17), Status::SecondCopy);
    assert_eq!(Status::from_code(99), Status::Unknown(99));
    assert_eq!(ConfigField::CommName.name(), "commName");
    assert!(ConfigField::NetName.is_string() && !ConfigField::Blocking.is_string());
}

/// A C program printing what the Rust side must agree with, one "name value" per line.
const LAYOUT_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include "ncclshim/comm.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/symmem.h"
#include "ncclshim/watchdog.h"
#define P(name, value) printf("%s %zu\n", name, (size_t)(value))
int main(void) {
  P("nccl_table", sizeof(ncclshim_nccl_table));
  P("cuda_table", sizeof(ncclshim_cuda_table));
  P("nccl_table.ncclAllReduce", offsetof(ncclshim_nccl_table, ncclAllReduce));
  P("cuda_table.cuMemAlloc", offsetof(ncclshim_cuda_table, cuMemAlloc));
  P("config", sizeof(ncclConfig_t));
  P("config.commName", offsetof(ncclConfig_t, commName));
  P("config.graphStreamOrdering", offsetof(ncclConfig_t, graphStreamOrdering));
  P("config.nvlsHostMode", offsetof(ncclConfig_t, nvlsHostMode));
  P("coll_config", sizeof(ncclCollConfig_t));
  P("coll_config.userProfilerTag", offsetof(ncclCollConfig_t, userProfilerTag));
  P("coll_config.launchCompletionEvent", offsetof(ncclCollConfig_t, launchCompletionEvent));
  P("config_ext", sizeof(ncclConfigExt_t));
  P("encryption_config", sizeof(ncclEncryptionConfig_t));
  P("encryption_config.psk", offsetof(ncclEncryptionConfig_t, psk));
  P("unique_id", sizeof(ncclUniqueId));
  P("nccl_options", sizeof(ncclshim_nccl_options));
  P("nccl_options.min_version", offsetof(ncclshim_nccl_options, min_version));
  P("cuda_options", sizeof(ncclshim_cuda_options));
  P("comm_options", sizeof(ncclshim_comm_options));
  P("attempt", sizeof(ncclshim_attempt));
  P("attempt.reason", offsetof(ncclshim_attempt, reason));
  P("uuid", sizeof(CUuuid));
  P("wait_signal_desc", sizeof(ncclshim_wait_signal_desc_t));
  P("sim_info", sizeof(ncclshim_sim_info_t));
  P("watch_counts", sizeof(ncclshim_watch_counts));
  P("watch_counts.recorded", offsetof(ncclshim_watch_counts, recorded));
  P("watch_counts.outstanding", offsetof(ncclshim_watch_counts, outstanding));
  P("capabilities", NCCLSHIM_CAPABILITY_COUNT);
  P("config_fields", NCCLSHIM_CONFIG_FIELD_COUNT);
  P("comm_capabilities", NCCLSHIM_COMM_CAPABILITY_COUNT);
  P("stream_non_blocking", NCCLSHIM_CU_STREAM_NON_BLOCKING);
  P("event_disable_timing", NCCLSHIM_CU_EVENT_DISABLE_TIMING);
  P("in_progress", ncclInProgress);
"#;

#[test]
fn c_layout_and_values_match() {
    // The headers the crate carries (the checkout's, or the packaged copy).
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("csrc/include");
    assert!(
        include.join("ncclshim/comm.h").exists(),
        "{} has no headers",
        include.display()
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (source, program) = (dir.join("layout.c"), dir.join("layout"));
    // Then NCCL's value of every DataType and RedOp variant, by its C name.
    let names: Vec<String> = (DataType::ALL.iter().map(|d| format!("{d:?}")))
        .chain(RedOp::ALL.iter().map(|o| format!("{o:?}")))
        .collect();
    let mut text = LAYOUT_C.to_string();
    for name in &names {
        text += &format!("  P(\"nccl{name}\", nccl{name});\n");
    }
    std::fs::write(&source, text + "  return 0;\n}\n").unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status();
    assert!(
        built.map(|s| s.success()).unwrap_or(false),
        "{cc} could not build the layout program"
    );
    let out = Command::new(&program).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let c = |name: &str| -> usize {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{name} not printed"))
            .parse()
            .unwrap()
    };
    use std::mem::offset_of;
    // What the C program printed under each name, and the Rust side's answer.
    let expected = [
        ("nccl_table", size_of::<ffi::ncclshim_nccl_table>()),
        ("cuda_table", size_of::<ffi::ncclshim_cuda_table>()),
        (
            "nccl_table.ncclAllReduce",
            offset_of!(ffi::ncclshim_nccl_table, ncclAllReduce),
        ),
        (
            "cuda_table.cuMemAlloc",
            offset_of!(ffi::ncclshim_cuda_table, cuMemAlloc),
        ),
        ("config", size_of::<ffi::ncclConfig_t>()),
        ("config.commName", offset_of!(ffi::ncclConfig_t, commName)),
        (
            "config.nvlsHostMode",
            offset_of!(ffi::ncclConfig_t, nvlsHostMode),
        ),
        ("coll_config", size_of::<ffi::ncclshim_coll_config_t>()),
        (
            "coll_config.userProfilerTag",
            offset_of!(ffi::ncclshim_coll_config_t, userProfilerTag),
        ),
        (
            "coll_config.launchCompletionEvent",
            offset_of!(ffi::ncclshim_coll_config_t, launchCompletionEvent),
        ),
        ("config_ext", size_of::<ffi::ncclshim_config_ext_t>()),
        (
            "encryption_config",
            size_of::<ffi::ncclshim_encryption_config_t>(),
        ),
        (
            "encryption_config.psk",
            offset_of!(ffi::ncclshim_encryption_config_t, psk),
        ),
        (
            "config.graphStreamOrdering",
            offset_of!(ffi::ncclConfig_t, graphStreamOrdering),
        ),
        ("unique_id", size_of::<ffi::ncclUniqueId>()),
        ("unique_id", ncclshim::UniqueId::BYTES),
        ("nccl_options", size_of::<ffi::ncclshim_nccl_options>()),
        (
            "nccl_options.min_version",
            offset_of!(ffi::ncclshim_nccl_options, min_version),
        ),
        ("cuda_options", size_of::<ffi::ncclshim_cuda_options>()),
        ("comm_options", size_of::<ffi::ncclshim_comm_options>()),
        ("attempt", size_of::<ffi::ncclshim_attempt>()),
        ("attempt.reason", offset_of!(ffi::ncclshim_attempt, reason)),
        ("uuid", size_of::<ffi::CUuuid>()),
        (
            "wait_signal_desc",
            size_of::<ffi::ncclshim_wait_signal_desc_t>(),
        ),
        ("sim_info", size_of::<ffi::ncclshim_sim_info_t>()),
        ("watch_counts", size_of::<ffi::ncclshim_watch_counts>()),
        (
            "watch_counts.recorded",
            offset_of!(ffi::ncclshim_watch_counts, counts.recorded),
        ),
        (
            "watch_counts.outstanding",
            offset_of!(ffi::ncclshim_watch_counts, counts.outstanding),
        ),
        ("capabilities", Capability::ALL.len()),
        ("config_fields", ConfigField::ALL.len()),
        (
            "stream_non_blocking",
            ffi::NCCLSHIM_CU_STREAM_NON_BLOCKING as usize,
        ),
        (
            "event_disable_timing",
            ffi::NCCLSHIM_CU_EVENT_DISABLE_TIMING as usize,
        ),
        ("in_progress", ffi::ncclInProgress as usize),
    ];
    for (name, rust) in expected {
        assert_eq!(c(name), rust, "{name}");
    }
    assert_eq!(c("comm_capabilities"), CommCapability::ALL.len());
    let values = DataType::ALL
        .iter()
        .map(|d| d.raw())
        .chain(RedOp::ALL.iter().map(|o| o.raw()));
    for (name, value) in names.iter().zip(values) {
        assert_eq!(c(&format!("nccl{name}")), value as usize, "{name}");
    }
    assert_eq!(DataType::ALL.len(), 12);
    assert_eq!(DataType::Bfloat16.raw(), 9);
    assert_eq!(RedOp::Avg.raw(), 4);
}

/// `text` (what the build script wrote, or its error) holds every one of `fragments`.
fn assert_holds(text: &str, fragments: &[&str]) {
    for fragment in fragments {
        assert!(text.contains(fragment), "{fragment:?} not in:\n{text}");
    }
}

#[test]
fn the_build_script_names_an_unknown_c_type_and_where_to_add_it() {
    // A type and a return kind of a future row, which the crate does not know yet.
    let error =
        build_script::rust_type("ncclFutureThing_t", "ncclFuture of the nccl list").unwrap_err();
    assert_holds(
        &error,
        &[
            "unknown C type `ncclFutureThing_t`",
            "ncclFuture",
            "C_TYPES in bindings/rust/build.rs",
        ],
    );
    let row = "rs_row nccl ncclFuture 23100 OPTIONAL RESULT rs_param ncclComm_t rs_named comm rs_param ncclFutureThing_t * rs_named thing rs_end";
    assert_holds(
        &build_script::generate(row).unwrap_err(),
        &["`ncclFutureThing_t`"],
    );
    let kind =
        "rs_row nccl ncclFuture 23100 OPTIONAL FUTURE rs_param ncclComm_t rs_named comm rs_end";
    assert_holds(
        &build_script::generate(kind).unwrap_err(),
        &["unknown return kind `FUTURE`"],
    );
}

#[test]
fn the_build_script_translates_pointers_and_const() {
    let t = |c: &str| build_script::rust_type(c, "test").unwrap();
    assert_eq!(t("int"), "c_int");
    assert_eq!(t("const ncclComm_t"), "ncclComm_t");
    assert_eq!(t("const void *"), "*const c_void");
    assert_eq!(t("void **"), "*mut *mut c_void");
    assert_eq!(t("const char ***"), "*mut *mut *const c_char");
    assert_eq!(t("unsigned int"), "c_uint");
    assert_eq!(t("ncclshim_comm *const *"), "*const *mut ncclshim_comm");
    assert_eq!(t("const char *const *"), "*const *const c_char");
    assert_eq!(t("char *const"), "*mut c_char");
    let error = build_script::rust_type("char *volatile *", "test").unwrap_err();
    assert_holds(&error, &["`volatile` after `*`"]);
}

#[test]
fn nccl_enums_are_read_from_the_header_without_aliases_or_counts() {
    let header = "typedef enum { ncclA = 0, ncclAlias = 0, ncclB = 3, ncclNumThings = 4, \
                  ncclMaxThing = 0x7f } ncclThing_t;";
    let mut out = String::new();
    build_script::nccl_enum(&mut out, header, "ncclThing_t", "Thing").unwrap();
    assert_holds(
        &out,
        &[
            "/// `ncclA` (= `ncclAlias`)\n    A = 0,",
            "    B = 3,",
            "Thing::B,",
        ],
    );
    assert!(!out.contains("Alias =") && !out.contains("Num"), "{out}");
    let error = build_script::nccl_enum(&mut out, header, "ncclOther_t", "Other").unwrap_err();
    assert_holds(&error, &["ncclOther_t"]);
    let hex = "typedef enum { ncclA = 0x1 } ncclHex_t;";
    let error = build_script::nccl_enum(&mut out, hex, "ncclHex_t", "Hex").unwrap_err();
    assert_holds(&error, &["ncclA = `0x1`"]);
}

#[test]
fn communicator_capabilities_are_the_c_list() {
    for (i, cap) in CommCapability::ALL.iter().enumerate() {
        assert_eq!(*cap as usize, i);
        // SAFETY: any value is accepted; static strings.
        let name = unsafe { ffi::ncclshim_comm_capability_name(i as i32) };
        assert!(!name.is_null(), "{cap:?} is unknown to the library");
        // SAFETY: the name just given.
        assert_eq!(
            unsafe { ffi::ncclshim_comm_capability_from_name(name) },
            i as i32
        );
    }
    // SAFETY: as above.
    let past = unsafe { ffi::ncclshim_comm_capability_name(CommCapability::ALL.len() as i32) };
    assert!(past.is_null());
    assert_eq!(CommCapability::HostRma as i32, 4);
}

#[test]
fn function_declarations_are_read_from_the_headers() {
    let mark = "__attribute__((visibility(\"default\")))";
    let text = format!(
        "typedef int x; {mark} const char *ncclshim_a(const ncclshim_nccl *nccl, int fn); \
         {mark} void ncclshim_b(void); {mark} ncclshim_status ncclshim_c(ncclshim_comm *const *comms, size_t n);"
    );
    let mut out = String::new();
    build_script::functions(&mut out, &text).unwrap();
    assert_holds(
        &out,
        &[
            "pub fn ncclshim_a(nccl: *const ncclshim_nccl, fn_: c_int) -> *const c_char;",
            "pub fn ncclshim_b();",
            "pub fn ncclshim_c(comms: *const *mut ncclshim_comm, n: usize) -> ncclshim_status;",
        ],
    );
    let unknown = format!("{mark} int ncclshim_d(struct thing *t);");
    let error = build_script::functions(&mut out, &unknown).unwrap_err();
    assert_holds(&error, &["unknown C type `struct thing`", "ncclshim_d"]);
    let unnamed = format!("{mark} int ncclshim_e(int);");
    let error = build_script::functions(&mut out, &unnamed).unwrap_err();
    assert_holds(&error, &["ncclshim_e"]);
}

#[test]
fn meson_statements_are_read_across_lines_and_comments() {
    let s = csrc_build::statements("a = files('x.c', # c\n  'y.c')\nb = a + files('z.c')\n");
    assert_eq!(s, ["a = files('x.c',    'y.c')", "b = a + files('z.c')"]);
}

/// The sources build.rs compiles are meson's for libncclshim: its src/ folders and the loader
/// it links whole, not the drop-in, the probe or the probe's own loader part.
#[test]
fn the_library_sources_are_read_from_meson() {
    let csrc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("csrc");
    let sources = csrc_build::library_sources(&csrc).unwrap();
    let names: Vec<String> = sources
        .iter()
        .map(|p| p.strip_prefix(&csrc).unwrap().display().to_string())
        .collect();
    for wanted in [
        "src/status.c",
        "src/nccl/nccl_load.c",
        "src/cuda/cuda_stream.c",
        "src/comm/comm_init.c",
        "loader/search.c",
        "loader/elf_file.c",
    ] {
        assert!(
            names.iter().any(|n| n == wanted),
            "{wanted} not in {names:?}"
        );
    }
    for unwanted in ["loader/trace.c", "src/dropin/dropin.c"] {
        assert!(
            !names.iter().any(|n| n == unwanted),
            "{unwanted} is compiled"
        );
    }
    assert!(names.len() > 40, "{names:?}");
    let version = csrc_build::project_version(&csrc).unwrap();
    assert!(version.split('.').count() == 3, "{version}");
}
