//! Symmetric memory on the fake NCCL: allocation, the 2.28 gate, NCCL's NULL-window quirk,
//! registration finished on a non-blocking communicator, graph capture, and ncclMemAlloc.

mod support;

use std::time::Duration;

use ncclshim::{Answer, Blocking, CommCapability, Communicator, Status, Stream, SymmetricBuffer};
use support::{expect_error, init, symbol, Fake, ID, SECOND};

/// The fake driver that answers cuStreamIsCapturing as told, as the default driver (the
/// capture check uses ncclshim's default handle). Set before any test of this file loads it.
fn capture_driver(build: &std::path::Path, result: i32, status: i32) {
    let path = build.join("tests/fakes/libfake-cuda-13.0.so");
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| std::env::set_var("NCCLSHIM_CUDA_LIBRARY", &path));
    ncclshim::Cuda::default_handle().status().unwrap();
    // SAFETY: the fake's exported ints and documented signature (device 0 made current on
    // this thread, as in a CUDA program).
    unsafe {
        let use_device = symbol(&path, "fake_cuda_use_device");
        assert_eq!(
            std::mem::transmute::<*mut std::ffi::c_void, extern "C" fn(i32) -> i32>(use_device)(0),
            0
        );
        *(symbol(&path, "fake_capture_result") as *mut i32) = result;
        *(symbol(&path, "fake_capture_status") as *mut i32) = status;
    }
}

#[test]
fn a_buffer_is_allocated_registered_and_freed() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    capture_driver(&build, 0, 0);
    let comm = init(&fake, Blocking::No);
    comm.wait(SECOND).unwrap();
    {
        let buffer = SymmetricBuffer::<u8>::alloc(&comm, 5000, &Stream::DEFAULT, SECOND).unwrap();
        assert_eq!((buffer.len(), buffer.registered_bytes()), (5000, 8192));
        assert_eq!(buffer.as_ptr() as usize % 4096, 0);
        assert!(!buffer.window().is_null());
        assert_eq!((fake.allocations(), fake.windows()), (1, 1));
    }
    assert_eq!(
        (fake.allocations(), fake.windows()),
        (0, 0),
        "Drop deregisters and frees"
    );
    let buffer = SymmetricBuffer::<u8>::alloc(&comm, 1, &Stream::DEFAULT, SECOND).unwrap();
    buffer.free(SECOND).unwrap();
    assert_eq!(fake.allocations(), 0);
}

/// On a blocking communicator the deregistration is a blocking collective call without a
/// bound: Drop leaves the buffer to the communicator, whose Drop (an abort) frees the memory.
#[test]
fn a_buffer_dropped_on_a_blocking_communicator_goes_with_it() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    capture_driver(&build, 0, 0);
    let comm = init(&fake, Blocking::Yes);
    drop(SymmetricBuffer::<u8>::alloc(&comm, 5000, &Stream::DEFAULT, SECOND).unwrap());
    assert_eq!(fake.count("ncclCommWindowDeregister"), 0);
    assert_eq!(fake.allocations(), 1);
    let buffer = SymmetricBuffer::<u8>::alloc(&comm, 1, &Stream::DEFAULT, SECOND).unwrap();
    buffer.free(SECOND).unwrap(); // explicitly: at once
    assert_eq!(fake.allocations(), 1);
    drop(comm);
    assert_eq!(fake.count("ncclCommAbort"), 1);
    assert_eq!(fake.allocations(), 0);
}

#[test]
fn symmetric_memory_needs_nccl_2_28() {
    let (_, _guard, fake) = need_fakes!("2.27.3");
    let comm = init(&fake, Blocking::Yes);
    let alloc = SymmetricBuffer::<u8>::alloc(&comm, 4096, &Stream::DEFAULT, SECOND);
    expect_error(alloc, Status::Unavailable, &["2.28.0", "2.27.3"]);
    assert_eq!(
        fake.count("ncclMemAlloc"),
        0,
        "refused before anything is allocated"
    );
}

#[test]
fn success_with_a_null_window_is_unavailable_and_nothing_leaks() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    capture_driver(&build, 0, 0);
    fake.null_window(true);
    let comm = init(&fake, Blocking::Yes);
    let alloc = SymmetricBuffer::<u8>::alloc(&comm, 4096, &Stream::DEFAULT, SECOND);
    expect_error(alloc, Status::Unavailable, &["do not register"]);
    assert_eq!(fake.allocations(), 0);
    // The communicator remembers: asked afterwards, it answers No without a trial.
    let (answer, why) = comm.has(CommCapability::SymmetricWindows, SECOND).unwrap();
    assert_eq!(answer, Answer::No, "{why}");
    assert_eq!(fake.count("ncclCommWindowRegister"), 1);
}

#[test]
fn registration_on_a_non_blocking_communicator_is_finished() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    capture_driver(&build, 0, 0);
    let comm = Communicator::init_with_deadline(&fake.nccl, 2, &ID, 0, SECOND).unwrap();
    let buffer = SymmetricBuffer::<u8>::alloc(&comm, 4096, &Stream::DEFAULT, SECOND).unwrap();
    assert!(!buffer.window().is_null());
    fake.asynchronous(-1, 0); // deregistration never finishes: free times out, memory kept
    expect_error(buffer.free(Duration::from_millis(50)), Status::Timeout, &[]);
    assert_eq!(fake.allocations(), 1);
}

#[test]
fn a_capturing_stream_is_refused() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    capture_driver(&build, 0, 1); // CU_STREAM_CAPTURE_STATUS_ACTIVE
    let comm = init(&fake, Blocking::Yes);
    let alloc = SymmetricBuffer::<u8>::alloc(&comm, 4096, &Stream::DEFAULT, SECOND);
    capture_driver(&build, 0, 0);
    expect_error(alloc, Status::InvalidArgument, &["capturing"]);
    assert_eq!(fake.allocations(), 0);
}

#[test]
fn nccl_mem_alloc_and_free_are_gated_by_version() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let ptr = fake.nccl.nccl_mem_alloc(100).unwrap();
    assert!(!ptr.is_null());
    assert_eq!(fake.allocations(), 1);
    // SAFETY: from nccl_mem_alloc, freed once.
    unsafe { fake.nccl.nccl_mem_free(ptr).unwrap() };
    assert_eq!(fake.allocations(), 0);
    let old = Fake::open(&build, "2.18.5");
    expect_error(
        old.nccl.nccl_mem_alloc(100),
        Status::Unavailable,
        &["2.19.1"],
    );
}
