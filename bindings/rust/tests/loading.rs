//! Loading fake NCCLs by path: versions found, absent, too old, broken, missing functions, and
//! what the handle and the probe report about each.

mod support;

use ncclshim::{probe_with, Capability, Cuda, Nccl, Status, Version};
use support::{fake_path, lock};

#[test]
fn each_version_is_found_with_its_capabilities() {
    let (build, _guard) = need_fakes!();
    for (variant, version) in [
        ("2.18.5", (2, 18, 5)),
        ("2.21.5", (2, 21, 5)),
        ("2.27.3", (2, 27, 3)),
        ("2.28.3", (2, 28, 3)),
        ("2.28.9", (2, 28, 9)),
        ("2.30.7", (2, 30, 7)),
    ] {
        let path = fake_path(&build, variant);
        let nccl = Nccl::open(Some(&path), None).unwrap_or_else(|e| panic!("{variant}: {e}"));
        let v = Version::new(version.0, version.1, version.2);
        assert_eq!(nccl.version(), Some(v), "{variant}");
        assert_eq!(v.to_string(), variant);
        assert_eq!(nccl.found_via(), "explicit");
        assert_eq!(nccl.path().unwrap(), path.canonicalize().unwrap());
        assert!(nccl.message().contains(variant), "{}", nccl.message());
        for cap in Capability::ALL {
            // every capability in this list is a version threshold plus functions the fake has
            assert_eq!(nccl.has(*cap), v >= cap.version(), "{variant} {cap:?}");
            assert_eq!(nccl.capability_reason(*cap).is_none(), nccl.has(*cap));
        }
        let trail = nccl.trail();
        assert_eq!(trail.len(), 1);
        assert_eq!(trail[0].status, Status::Ok);
    }
}

#[test]
fn a_missing_capability_says_which_version_it_needs() {
    let (build, _guard) = need_fakes!();
    let nccl = Nccl::open(Some(&fake_path(&build, "2.27.3")), None).unwrap();
    let reason = nccl.capability_reason(Capability::SymmetricMemory).unwrap();
    assert!(
        reason.contains("2.28.0") && reason.contains("2.27.3"),
        "{reason}"
    );
    assert!(!nccl.capabilities().contains(&Capability::SymmetricMemory));
    assert!(nccl.capabilities().contains(&Capability::WindowRegister));
}

#[test]
fn absent_library_is_not_found_and_names_the_path() {
    let _guard = lock();
    let error = Nccl::open(Some("/nonexistent/libnccl.so.2".as_ref()), None)
        .err()
        .unwrap();
    assert_eq!(error.status(), Status::NotFound);
    assert!(
        error.message().contains("/nonexistent/libnccl.so.2"),
        "{error}"
    );
}

#[test]
fn too_old_wrong_major_and_broken_versions_are_refused() {
    let (build, _guard) = need_fakes!();
    let open = |variant: &str, min: Option<Version>| {
        Nccl::open(Some(&fake_path(&build, variant)), min)
            .err()
            .map(|e| e.status())
    };
    assert_eq!(
        open("2.27.3", Some(Version::new(2, 28, 0))),
        Some(Status::VersionTooOld)
    );
    assert_eq!(open("2.28.9", Some(Version::new(2, 28, 0))), None);
    assert_eq!(open("3.0.0", None), Some(Status::WrongMajor));
    for variant in [
        "version-fails",
        "version-zero",
        "version-negative",
        "version-silent",
    ] {
        assert_eq!(open(variant, None), Some(Status::BadVersion), "{variant}");
    }
    assert_eq!(open("no-version", None), Some(Status::NotNccl));
}

#[test]
fn missing_required_functions_are_named() {
    let (build, _guard) = need_fakes!();
    let error = Nccl::open(Some(&fake_path(&build, "missing-required")), None)
        .err()
        .unwrap();
    assert_eq!(error.status(), Status::MissingSymbols);
    assert!(
        error.message().contains("ncclAllReduce") && error.message().contains("ncclSend"),
        "{error}"
    );
}

#[test]
fn a_missing_optional_function_is_reported_not_fatal() {
    let (build, _guard) = need_fakes!();
    let nccl = Nccl::open(Some(&fake_path(&build, "missing-optional")), None).unwrap();
    assert!(!nccl.has_function("ncclCommWindowRegister"));
    assert!(nccl.has_function("ncclCommWindowDeregister"));
    assert!(!nccl.has_function("notAFunction"));
    assert!(nccl.unexpectedly_missing("ncclCommWindowRegister"));
    assert!(!nccl.has(Capability::SymmetricMemory));
    assert!(nccl
        .capability_reason(Capability::SymmetricMemory)
        .unwrap()
        .contains("ncclCommWindowRegister"));
    let (cuda, _) = support::fake_cuda(&build, "13.0");
    let report = probe_with(&nccl, &cuda);
    assert_eq!(
        report.nccl.unexpectedly_missing,
        vec!["ncclCommWindowRegister"]
    );
    assert_eq!(report.nccl.capabilities.len(), Capability::ALL.len());
    let text = report.to_string();
    assert!(
        text.contains("NCCL: 2.28.9")
            && text.contains("symmetric-memory")
            && text.contains("CUDA driver: 13.0"),
        "{text}"
    );
}

#[test]
fn the_probe_reports_an_absent_nccl_and_driver() {
    let _guard = lock();
    let absent = Nccl::open(Some("/nonexistent/libnccl.so.2".as_ref()), None);
    assert!(absent.is_err());
    let nccl = Nccl::default_handle();
    let cuda = Cuda::open(Some("/nonexistent/libcuda.so.1".as_ref()));
    assert_eq!(cuda.err().unwrap().status(), Status::NotFound);
    // The default handle may or may not find the machine's NCCL; the report says which.
    let report = probe_with(&nccl, &Cuda::default_handle());
    assert_eq!(report.nccl.status.is_ok(), nccl.version().is_some());
    assert!(report.to_string().starts_with("NCCL: "));
}

#[test]
fn check_nccl_carries_code_text_and_last_error() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    fake.last_error("AllReduce : invalid type 99");
    let error = fake.nccl.check_nccl(4, "ncclAllReduce").err().unwrap();
    assert_eq!(error.status(), Status::NcclError);
    assert_eq!(error.nccl_result(), Some(4));
    assert_eq!(error.nccl_text(), Some("fake NCCL string")); // the fake's ncclGetErrorString
    assert_eq!(error.nccl_last_error(), Some("AllReduce : invalid type 99"));
    assert!(
        error
            .message()
            .starts_with("ncclAllReduce failed: ncclInvalidArgument (4)"),
        "{error}"
    );
    assert!(fake.nccl.check_nccl(0, "ncclAllReduce").is_ok());
    assert!(
        fake.nccl.check_nccl(7, "ncclAllReduce").is_ok(),
        "ncclInProgress is not an error"
    );
    let unknown = fake.nccl.check_nccl(42, "ncclBroadcast").err().unwrap();
    assert_eq!(unknown.nccl_result(), Some(42));
}

#[test]
fn unique_ids_come_from_nccl_get_unique_id() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let before = fake.count("ncclGetUniqueId");
    let id = fake.nccl.unique_id().unwrap();
    assert_eq!(fake.count("ncclGetUniqueId"), before + 1);
    assert_eq!(ncclshim::UniqueId::from_bytes(*id.as_bytes()), id);
    fake.inject("ncclGetUniqueId", 2, 1);
    assert_eq!(fake.nccl.unique_id().err().unwrap().nccl_result(), Some(2));
}

#[test]
fn capability_names_and_versions_come_from_the_library() {
    for cap in Capability::ALL {
        assert_eq!(Capability::from_name(&cap.name()), Some(*cap));
        assert!(cap.version() >= Version::new(2, 11, 0), "{cap:?}");
    }
    assert_eq!(Capability::SymmetricMemory.name(), "symmetric-memory");
    assert_eq!(
        Capability::SymmetricMemory.version(),
        Version::new(2, 28, 0)
    );
    assert_eq!(Capability::from_name("no-such-thing"), None);
}

#[test]
fn a_path_with_a_nul_byte_is_refused_before_the_search() {
    let path = std::path::Path::new("/tmp/lib\0nccl.so");
    let nccl = Nccl::open(Some(path), None).err().unwrap();
    let cuda = Cuda::open(Some(path)).err().unwrap();
    for error in [nccl, cuda] {
        assert_eq!(error.status(), Status::InvalidArgument, "{error}");
        assert!(
            error.message().contains("contains a NUL byte") && error.message().contains("/tmp/lib"),
            "{error}"
        );
    }
}

#[test]
fn a_version_part_past_its_room_is_refused_not_carried_into_the_next() {
    assert_eq!(Version::new(2, 99, 99).to_string(), "2.99.99");
    assert_eq!(Version::new(429495, 0, 0).major(), 429495);
    for (major, minor, patch) in [(2, 100, 0), (2, 28, 100), (429496, 0, 0), (u32::MAX, 0, 0)] {
        let made = std::panic::catch_unwind(|| Version::new(major, minor, patch));
        // (2, 100, 0) packed would be 30000, read back as 3.0.0
        assert!(
            made.is_err(),
            "{major}.{minor}.{patch} became {}",
            made.unwrap()
        );
    }
}
