//! The machine's real NCCL, where there is one (skipped otherwise): loading, capabilities,
//! NCCL's own texts in errors, and the config builder against its version.

use std::path::PathBuf;

use ncclshim::{Capability, Nccl, Status, Version};

/// NCCLSHIM_REAL_NCCL, else the CUDA 13.0 toolkit's NCCL of the CI machines.
fn real_nccl() -> Option<PathBuf> {
    let path = std::env::var_os("NCCLSHIM_REAL_NCCL")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/local/cuda-13.0/lib/libnccl.so.2".into());
    if path.exists() {
        return Some(path);
    }
    eprintln!("skipped: no real NCCL at {}", path.display());
    None
}

#[test]
fn the_real_nccl_loads_with_its_capabilities() {
    let Some(path) = real_nccl() else { return };
    let nccl = Nccl::open(Some(&path), None).unwrap();
    let version = nccl.version().unwrap();
    assert_eq!(version.major(), 2);
    assert!(
        nccl.message().contains(&version.to_string()),
        "{}",
        nccl.message()
    );
    assert!(nccl.build().starts_with("+cuda"), "{:?}", nccl.build());
    assert_eq!(
        nccl.has(Capability::SymmetricMemory),
        version >= Version::new(2, 28, 0)
    );
    assert!(nccl.has(Capability::NonblockingInit));
    assert!(
        nccl.fingerprint().starts_with(&format!("nccl{version}-b")),
        "{}",
        nccl.fingerprint()
    );
    for name in ["ncclAllReduce", "ncclCommInitRankConfig", "ncclMemAlloc"] {
        assert!(nccl.has_function(name), "{name}");
    }
}

#[test]
fn real_nccl_texts_reach_the_error() {
    let Some(path) = real_nccl() else { return };
    let nccl = Nccl::open(Some(&path), None).unwrap();
    let error = nccl.check_nccl(4, "ncclAllReduce").unwrap_err();
    assert_eq!(error.status(), Status::NcclError);
    assert_eq!(error.nccl_result(), Some(4));
    assert!(
        error.nccl_text().unwrap().contains("invalid argument"),
        "{error}"
    );
    let config = nccl.config().blocking(false).unwrap();
    assert_eq!(config.raw().blocking, 0);
    let newest = nccl
        .config()
        .set_int(ncclshim::ConfigField::GraphStreamOrdering, 1);
    assert_eq!(newest.is_ok(), version_at_least(&nccl, 2, 30, 7));
}

fn version_at_least(nccl: &Nccl, major: u32, minor: u32, patch: u32) -> bool {
    nccl.version()
        .is_some_and(|v| v >= Version::new(major, minor, patch))
}
