//! Finds libncclshim and its headers, and generates the crate's declarations of the NCCL and
//! CUDA function tables, the capabilities, the ncclConfig_t fields and the statuses from ncclshim's own
//! X-macro lists (`DataType` and `RedOp` from NCCL's enums in `nccl_abi.h`, the `ncclshim_*`
//! functions from the headers' `NCCLSHIM_API` declarations): the C preprocessor expands `ffi_rows.c` into one marked row per entry, which
//! `gen_lists.rs` turns into Rust (each C type through its `C_TYPES`; a type that is not there
//! stops the build with its name and the row it came from), so the Rust tables cannot drift
//! from the C ones.
//!
//! Where libncclshim is looked for, in order:
//!   1. `NCCLSHIM_LIB_DIR`: the directory holding libncclshim.so;
//!   2. `NCCLSHIM_BUILD_DIR`: a meson build tree of ncclshim (its `src/`);
//!   3. `pkg-config --libs-only-L ncclshim` (an installed ncclshim);
//!   4. the meson build tree `build/` of the checkout this crate sits in.
//!
//! The headers: `NCCLSHIM_INCLUDE_DIR`, else the checkout's `include/`, else
//! `pkg-config --cflags-only-I ncclshim`. The C preprocessor is `$CC`, else `cc`.
//!
//! A relative path in one of these variables is taken from the root of the checkout the crate
//! sits in (`NCCLSHIM_BUILD_DIR=build` is its `build/`), not from the directory cargo runs a
//! build script in.
//!
//! This crate's own tests and examples get a RUNPATH to the library's directory. Cargo passes
//! no link argument to other packages' binaries: the directory is published to a dependent's
//! build script as `DEP_NCCLSHIM_LIB_DIR` (README.md, "Running a program that uses the crate").

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "gen_lists.rs"]
mod gen_lists;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let checkout = manifest.join("../..");
    for var in [
        "NCCLSHIM_LIB_DIR",
        "NCCLSHIM_BUILD_DIR",
        "NCCLSHIM_INCLUDE_DIR",
        "CC",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=ffi_rows.c");
    println!("cargo:rerun-if-changed=gen_lists.rs");

    let lib_dir = find_library(&checkout);
    // A dependent's build script reads it as DEP_NCCLSHIM_LIB_DIR (`links = "ncclshim"`).
    println!("cargo:lib_dir={}", lib_dir.display());
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=ncclshim");
    // The tests find the meson build tree's fakes beside it (tests/support/mod.rs).
    println!("cargo:rustc-env=NCCLSHIM_RS_LIB_DIR={}", lib_dir.display());
    // This package's tests and examples find the same library at run time without
    // LD_LIBRARY_PATH (which still comes first: RUNPATH, not RPATH). Cargo applies this to this
    // package's own targets only.
    println!(
        "cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{}",
        lib_dir.display()
    );

    let include = find_headers(&checkout);
    // The lists and the declarations come from every public header.
    let headers = include.join("ncclshim");
    for entry in fs::read_dir(&headers)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", headers.display()))
        .flatten()
    {
        println!("cargo:rerun-if-changed={}", entry.path().display());
    }
    let expanded = preprocess(&manifest.join("ffi_rows.c"), &include);
    let rust = gen_lists::generate(&expanded).unwrap_or_else(|e| panic!("ncclshim build.rs: {e}"));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("lists.rs");
    fs::write(&out, rust).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// The variable's path, a relative one taken from the checkout's root.
fn env_path(var: &str, checkout: &Path) -> Option<PathBuf> {
    env::var_os(var).map(|value| checkout.join(PathBuf::from(value)))
}

fn has_library(dir: &Path) -> bool {
    dir.join("libncclshim.so").exists()
}

fn pkg_config(arg: &str, prefix: &str) -> Option<PathBuf> {
    let out = Command::new("pkg-config")
        .args([arg, "ncclshim"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .find_map(|word| word.strip_prefix(prefix))
        .map(PathBuf::from)
}

fn find_library(checkout: &Path) -> PathBuf {
    let mut tried = Vec::new();
    if let Some(dir) = env_path("NCCLSHIM_LIB_DIR", checkout) {
        if has_library(&dir) {
            return dir;
        }
        panic!("NCCLSHIM_LIB_DIR={} holds no libncclshim.so", dir.display());
    }
    if let Some(build) = env_path("NCCLSHIM_BUILD_DIR", checkout) {
        let dir = build.join("src");
        if has_library(&dir) {
            return dir;
        }
        panic!(
            "NCCLSHIM_BUILD_DIR: {} holds no libncclshim.so (run ninja there first)",
            dir.display()
        );
    }
    match pkg_config("--libs-only-L", "-L") {
        Some(dir) if has_library(&dir) => return dir,
        Some(dir) => tried.push(format!("pkg-config's {}", dir.display())),
        None => tried.push("pkg-config ncclshim (not found)".to_string()),
    }
    let dir = checkout.join("build/src");
    if has_library(&dir) {
        return dir;
    }
    tried.push(dir.display().to_string());
    panic!(
        "libncclshim.so not found; tried {}. Set NCCLSHIM_LIB_DIR (its directory) or \
         NCCLSHIM_BUILD_DIR (a meson build tree), or install ncclshim with its .pc file",
        tried.join(", ")
    );
}

fn find_headers(checkout: &Path) -> PathBuf {
    let has = |dir: &Path| dir.join("ncclshim/ncclshim.h").exists();
    if let Some(dir) = env_path("NCCLSHIM_INCLUDE_DIR", checkout) {
        return dir;
    }
    let dir = checkout.join("include");
    if has(&dir) {
        return dir;
    }
    match pkg_config("--cflags-only-I", "-I") {
        Some(dir) if has(&dir) => dir,
        _ => panic!("ncclshim's headers not found: set NCCLSHIM_INCLUDE_DIR"),
    }
}

fn preprocess(source: &Path, include: &Path) -> String {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-E", "-P", "-I"])
        .arg(include)
        .arg(source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C preprocessor `{cc} -E` (set CC): {e}"));
    if !out.status.success() {
        panic!(
            "`{cc} -E {}` failed:\n{}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("preprocessor output is not UTF-8")
}
