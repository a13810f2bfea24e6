//! Builds libncclshim into the crate, and generates the crate's declarations of the NCCL and
//! CUDA function tables, the capabilities, the ncclConfig_t fields and the statuses from
//! ncclshim's own X-macro lists (`DataType` and `RedOp` from NCCL's enums in `nccl_abi.h`, the
//! `ncclshim_*` functions from the headers' `NCCLSHIM_API` declarations): the C preprocessor
//! expands `ffi_rows.c` into one marked row per entry, which `gen_lists.rs` turns into Rust
//! (each C type through its `C_TYPES`; a type that is not there stops the build with its name
//! and the row it came from), so the Rust tables cannot drift from the C ones.
//!
//! The library, by default: libncclshim's C sources, carried by the crate under `csrc/`
//! (links into the checkout; the files themselves in a packaged crate), compiled here with
//! `$CC` (else `cc`) and archived with `$AR` (else `ar`) into a static library linked into
//! the program: nothing to install, no `LD_LIBRARY_PATH`. The files and the flags are meson's
//! (csrc_build.rs reads the lists of sources from the `meson.build` files). `$CFLAGS` is added.
//!
//! A prebuilt library instead: `NCCLSHIM_LIB_DIR`, the directory holding `libncclshim.so`
//! (linked dynamically, with a RUNPATH for this crate's own tests and examples; published to
//! dependents' build scripts as `DEP_NCCLSHIM_LIB_DIR`), or holding only `libncclshim.a`
//! (linked statically). A relative path is taken from the root of the checkout the crate sits
//! in. The headers: `NCCLSHIM_INCLUDE_DIR`, else `csrc/include`.
//!
//! `NCCLSHIM_BUILD_DIR` (a meson build tree) names only where the tests find the fake NCCLs and
//! drivers (tests/support/mod.rs).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

#[path = "gen_lists.rs"]
mod gen_lists;

#[path = "csrc_build.rs"]
mod csrc_build;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let csrc = manifest.join("csrc");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    for var in [
        "NCCLSHIM_LIB_DIR",
        "NCCLSHIM_BUILD_DIR",
        "NCCLSHIM_INCLUDE_DIR",
        "CC",
        "AR",
        "CFLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=ffi_rows.c");
    println!("cargo:rerun-if-changed=gen_lists.rs");
    println!("cargo:rerun-if-changed=csrc_build.rs");

    let lib_dir = match env::var_os("NCCLSHIM_LIB_DIR") {
        Some(dir) => prebuilt(&manifest.join("../..").join(PathBuf::from(dir))),
        None => compile(&csrc, &out_dir),
    };
    // The tests find a meson build tree's fakes (NCCLSHIM_BUILD_DIR) or, failing that, beside
    // a prebuilt library (tests/support/mod.rs).
    println!("cargo:rustc-env=NCCLSHIM_RS_LIB_DIR={}", lib_dir.display());

    let include = match env::var_os("NCCLSHIM_INCLUDE_DIR") {
        Some(dir) => manifest.join("../..").join(PathBuf::from(dir)),
        None => csrc.join("include"),
    };
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
    let out = out_dir.join("lists.rs");
    fs::write(&out, rust).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// Links the library of `dir`: the shared one when there is one, else the static one.
fn prebuilt(dir: &Path) -> PathBuf {
    println!("cargo:rustc-link-search=native={}", dir.display());
    if dir.join("libncclshim.so").exists() {
        println!("cargo:rustc-link-lib=dylib=ncclshim");
        // A dependent's build script reads it as DEP_NCCLSHIM_LIB_DIR (`links = "ncclshim"`).
        println!("cargo:lib_dir={}", dir.display());
        // This package's tests and examples find the same library at run time without
        // LD_LIBRARY_PATH (which still comes first: RUNPATH, not RPATH). Cargo applies this to
        // this package's own targets only.
        println!(
            "cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{}",
            dir.display()
        );
    } else if dir.join("libncclshim.a").exists() {
        static_system_libraries();
        println!("cargo:rustc-link-lib=static=ncclshim");
    } else {
        panic!(
            "NCCLSHIM_LIB_DIR={} holds neither libncclshim.so nor libncclshim.a (unset it to \
             build the library from the crate's sources)",
            dir.display()
        );
    }
    dir.to_path_buf()
}

/// What the static library needs from the system: dlopen and threads (in libc from glibc
/// 2.34; in libdl and libpthread before).
fn static_system_libraries() {
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-link-lib=dylib=pthread");
}

/// Compiles libncclshim's sources under `csrc` into `out/libncclshim.a` and links it.
fn compile(csrc: &Path, out: &Path) -> PathBuf {
    let fail = |e: String| -> ! { panic!("ncclshim build.rs: {e}") };
    let sources = csrc_build::library_sources(csrc).unwrap_or_else(|e| fail(e));
    let version = csrc_build::project_version(csrc).unwrap_or_else(|e| fail(e));
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let ar = env::var("AR").unwrap_or_else(|_| "ar".to_string());
    // meson's flags for the library (meson.build, src/meson.build).
    let mut flags: Vec<String> = vec![
        "-std=c11".into(),
        "-O2".into(),
        "-fPIC".into(),
        "-pthread".into(),
        "-fvisibility=hidden".into(),
        "-D_GNU_SOURCE".into(),
        "-DNCCLSHIM_BUILDING".into(),
        format!("-DNCCLSHIM_VERSION=\"{version}\""),
        format!("-I{}", csrc.join("include").display()),
        // meson.build's layers_inc: the root, for the includes that name a layer ("loader/dl.h").
        format!("-I{}", csrc.display()),
    ];
    // The glibc baseline (compat/glibc_baseline.h): the C part needs no glibc newer than 2.17.
    let target = |key: &str| env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && ["x86_64", "aarch64"].contains(&target("CARGO_CFG_TARGET_ARCH").as_str())
    {
        let baseline = csrc.join("compat/glibc_baseline.h");
        println!("cargo:rerun-if-changed={}", baseline.display());
        flags.push("-include".into());
        flags.push(baseline.display().to_string());
    }
    if let Ok(extra) = env::var("CFLAGS") {
        flags.extend(extra.split_whitespace().map(str::to_string));
    }
    let objects_dir = out.join("ncclshim-objects");
    fs::create_dir_all(&objects_dir)
        .unwrap_or_else(|e| fail(format!("cannot create {}: {e}", objects_dir.display())));
    let jobs: usize = env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    let mut running: Vec<(Child, PathBuf)> = Vec::new();
    let mut objects = Vec::new();
    let wait = |(mut child, source): (Child, PathBuf)| {
        let status = child
            .wait()
            .unwrap_or_else(|e| fail(format!("`{cc}` on {}: {e}", source.display())));
        if !status.success() {
            fail(format!(
                "`{cc}` failed on {} (its errors are above)",
                source.display()
            ));
        }
    };
    for source in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
        let name = source
            .strip_prefix(csrc)
            .unwrap_or(source)
            .to_string_lossy()
            .replace('/', "_");
        let object = objects_dir.join(format!("{name}.o"));
        if running.len() >= jobs {
            wait(running.remove(0));
        }
        let child = Command::new(&cc)
            .args(&flags)
            .arg("-c")
            .arg(source)
            .arg("-o")
            .arg(&object)
            .spawn()
            .unwrap_or_else(|e| fail(format!("cannot run the C compiler `{cc}` (set CC): {e}")));
        running.push((child, source.clone()));
        objects.push(object);
    }
    running.into_iter().for_each(wait);
    let archive = out.join("libncclshim.a");
    let _ = fs::remove_file(&archive);
    let status = Command::new(&ar)
        .arg("crs")
        .arg(&archive)
        .args(&objects)
        .status()
        .unwrap_or_else(|e| fail(format!("cannot run `{ar}` (set AR): {e}")));
    if !status.success() {
        fail(format!("`{ar} crs {}` failed", archive.display()));
    }
    // Headers and files meson lists elsewhere: cargo looks through each folder.
    for dir in ["src", "loader", "include"] {
        println!("cargo:rerun-if-changed={}", csrc.join(dir).display());
    }
    static_system_libraries();
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=ncclshim");
    out.to_path_buf()
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
