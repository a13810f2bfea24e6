//! The safe collectives on typed device memory, on the fakes: each forwards exactly its
//! buffers' addresses and counts; buffers that disagree are refused before NCCL is called;
//! registrations end on drop; buffers, guards, streams and events drop in any order
//! (ci.sh runs `drop_orders` under valgrind too).

mod support;

use std::ffi::{c_char, c_int, c_void, CStr};

use ncclshim::{Blocking, CommState, Cuda, DataType, DeviceMemory, RedOp, Status, Stream};
use support::{expect_error, fake_cuda, init, symbol, Fake, SECOND};

/// tests/fakes/fake_nccl.h's `fake_nccl_call`.
#[repr(C)]
struct Call {
    function: [c_char; 64],
    nargs: c_int,
    size: [usize; 12],
    bytes: [[u8; 128]; 12],
    version_code: c_int,
}

/// The name of the calling thread's last NCCL call and its first `n` arguments, each read as
/// a 64-bit value (pointers, size_t) or a 32-bit one (enums, ints), by the size it had.
fn last_call(fake: &Fake) -> (String, Vec<u64>) {
    let f = symbol(&fake.path, "fake_nccl_last_call");
    // SAFETY: the fake's documented signature; the record is the thread's own.
    let call = unsafe { &*std::mem::transmute::<*mut c_void, extern "C" fn() -> *const Call>(f)() };
    // SAFETY: a terminated name.
    let name = unsafe { CStr::from_ptr(call.function.as_ptr()) };
    let args = (0..call.nargs as usize)
        .map(|i| match call.size[i] {
            8 => u64::from_ne_bytes(call.bytes[i][..8].try_into().unwrap()),
            4 => u64::from(u32::from_ne_bytes(call.bytes[i][..4].try_into().unwrap())),
            n => panic!("argument {i} of {n} bytes"),
        })
        .collect();
    (name.to_string_lossy().into_owned(), args)
}

/// The fake driver with device 0 current ("device" memory is host memory there).
fn driver(build: &std::path::Path) -> Cuda {
    let (cuda, _) = fake_cuda(build, "13.0");
    cuda.init().unwrap();
    cuda.activate_device(0).unwrap();
    cuda
}

fn raw(stream: &Stream) -> u64 {
    stream.as_raw() as usize as u64
}

#[test]
fn every_safe_collective_forwards_its_buffers_addresses_and_counts() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let cuda = driver(&build);
    let comm = init(&fake, Blocking::Yes); // 2 ranks
    assert_eq!((comm.state(), comm.size()), (CommState::Ready, 2));
    let stream = cuda.create_stream().unwrap();
    let s = raw(&stream);
    let nccl = comm.nccl_comm() as usize as u64;
    let f32_ = DataType::Float32.raw() as u64;
    let send = cuda.alloc::<f32>(8).unwrap();
    let mut recv = cuda.alloc::<f32>(8).unwrap();
    let mut half = cuda.alloc::<f32>(4).unwrap();
    let (sp, rp, hp) = (send.device_ptr(), recv.device_ptr(), half.device_ptr());
    let sum = RedOp::Sum.raw() as u64;

    comm.all_reduce(&send, &mut recv, RedOp::Sum, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclAllReduce".into(), vec![sp, rp, 8, f32_, sum, nccl, s])
    );
    comm.all_reduce_in_place(&mut recv, RedOp::Max, &stream)
        .unwrap();
    let max = RedOp::Max.raw() as u64;
    assert_eq!(
        last_call(&fake),
        ("ncclAllReduce".into(), vec![rp, rp, 8, f32_, max, nccl, s])
    );
    comm.broadcast(&send, &mut recv, 1, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclBroadcast".into(), vec![sp, rp, 8, f32_, 1, nccl, s])
    );
    comm.broadcast_in_place(&mut half, 0, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclBroadcast".into(), vec![hp, hp, 4, f32_, 0, nccl, s])
    );
    comm.all_gather(&half, &mut recv, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclAllGather".into(), vec![hp, rp, 4, f32_, nccl, s])
    );
    comm.reduce_scatter(&send, &mut half, RedOp::Sum, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclReduceScatter".into(),
            vec![sp, hp, 4, f32_, sum, nccl, s]
        )
    );
    comm.send(&send, 1, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclSend".into(), vec![sp, 8, f32_, 1, nccl, s])
    );
    comm.recv(&mut half, 0, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclRecv".into(), vec![hp, 4, f32_, 0, nccl, s])
    );

    // A view is its sub-range: the address of its first element, its count.
    let part = send.view(2..6).unwrap();
    comm.all_reduce(&part, &mut half, RedOp::Sum, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclAllReduce".into(),
            vec![sp + 8, hp, 4, f32_, sum, nccl, s]
        )
    );
    let mut tail = recv.view_mut(4..).unwrap();
    comm.recv(&mut tail, 1, &stream).unwrap();
    assert_eq!(
        last_call(&fake),
        ("ncclRecv".into(), vec![rp + 16, 4, f32_, 1, nccl, s])
    );
    // The element type gives NCCL's type.
    let words = cuda.alloc::<ncclshim::Bf16>(3).unwrap();
    comm.send(&words, 0, &stream).unwrap();
    let bf16 = DataType::Bfloat16.raw() as u64;
    assert_eq!(last_call(&fake).1[..3], [words.device_ptr(), 3, bf16]);
}

#[test]
fn buffers_that_disagree_are_refused_before_nccl_is_called() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let cuda = driver(&build);
    let comm = init(&fake, Blocking::Yes); // 2 ranks
    let stream = cuda.create_stream().unwrap();
    let eight = cuda.alloc::<i64>(8).unwrap();
    let mut seven = cuda.alloc::<i64>(7).unwrap();
    let mut four = cuda.alloc::<i64>(4).unwrap();
    let mut eight_out = cuda.alloc::<i64>(8).unwrap();
    let refused = [
        (
            comm.all_reduce(&eight, &mut seven, RedOp::Sum, &stream),
            &["ncclAllReduce", "8", "7"][..],
        ),
        (
            comm.broadcast(&eight, &mut seven, 0, &stream),
            &["ncclBroadcast", "8", "7"],
        ),
        (
            comm.broadcast(&eight, &mut eight_out, 2, &stream),
            &["root 2", "0..2"],
        ),
        (
            comm.broadcast_in_place(&mut four, -1, &stream),
            &["root -1"],
        ),
        (
            comm.all_gather(&four, &mut seven, &stream),
            &["ncclAllGather", "recv holds 7", "4 x 2"],
        ),
        (
            comm.all_gather(&eight, &mut eight_out, &stream),
            &["ncclAllGather", "8 x 2"],
        ),
        (
            comm.reduce_scatter(&seven, &mut four, RedOp::Sum, &stream),
            &["ncclReduceScatter", "send holds 7"],
        ),
        (comm.send(&eight, 2, &stream), &["ncclSend", "peer 2"]),
        (comm.recv(&mut four, -3, &stream), &["ncclRecv", "peer -3"]),
    ];
    for (result, fragments) in refused {
        expect_error(result, Status::InvalidArgument, fragments);
    }
    for call in [
        "ncclAllReduce",
        "ncclBroadcast",
        "ncclAllGather",
        "ncclReduceScatter",
        "ncclSend",
        "ncclRecv",
    ] {
        assert_eq!(fake.count(call), 0, "{call} was called");
    }
    // Ranges past the end, or backwards, are refused too.
    expect_error(
        eight.view(5..9),
        Status::InvalidArgument,
        &["within the 8 elements"],
    );
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = eight.view(5..3);
    expect_error(backwards, Status::InvalidArgument, &[]);
    expect_error(
        cuda.alloc::<f32>(0),
        Status::InvalidArgument,
        &["0 elements"],
    );
    expect_error(
        cuda.alloc::<u64>(usize::MAX / 4),
        Status::InvalidArgument,
        &["not a size"],
    );
    // Copies too: the driver is not asked.
    expect_error(
        cuda.copy_to_device(&[1i64; 3], &mut four),
        Status::InvalidArgument,
        &["3", "4"],
    );
    expect_error(
        cuda.copy_to_host_async(&four, &mut [0i64; 5], &stream),
        Status::InvalidArgument,
        &["4", "5"],
    );
}

#[test]
fn copies_on_a_stream_and_synchronous_ones_round_trip() {
    let (build, _guard) = need_fakes!();
    let cuda = driver(&build);
    let stream = cuda.create_stream().unwrap();
    let values: Vec<u32> = (0..100).collect();
    let mut buffer = cuda.alloc::<u32>(100).unwrap();
    cuda.copy_to_device_async(&values, &mut buffer, &stream)
        .unwrap();
    let mut back = vec![0u32; 100];
    cuda.copy_to_host_async(&buffer, &mut back, &stream)
        .unwrap();
    cuda.sync_stream(&stream).unwrap();
    assert_eq!(back, values);
    cuda.fill_bytes(&mut buffer.view_mut(10..20).unwrap(), 0)
        .unwrap();
    let back = cuda.to_vec(&buffer).unwrap();
    assert_eq!(&back[9..21], &[9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20]);
    let copy = cuda.alloc_from(&values[..5]).unwrap();
    assert_eq!(cuda.to_vec(&copy).unwrap(), [0, 1, 2, 3, 4]);
}

#[test]
fn registrations_deregister_on_drop() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let cuda = driver(&build);
    let stream = cuda.create_stream().unwrap();
    let comm = init(&fake, Blocking::Yes);
    let mut buffer = fake.nccl.alloc::<f32>(1024).unwrap();
    let address = buffer.device_ptr();
    {
        let mut registered = comm.register(&mut buffer).unwrap();
        let (name, args) = last_call(&fake);
        assert_eq!(
            (name.as_str(), args[1], args[2]),
            ("ncclCommRegister", address, 4096)
        );
        comm.all_reduce_in_place(&mut registered, RedOp::Sum, &stream)
            .unwrap();
        assert_eq!(last_call(&fake).1[..3], [address, address, 1024]);
        assert_eq!(fake.count("ncclCommDeregister"), 0);
    }
    assert_eq!(fake.count("ncclCommDeregister"), 1);
    comm.register(&mut buffer)
        .unwrap()
        .deregister(SECOND)
        .unwrap();
    assert_eq!(fake.count("ncclCommDeregister"), 2);

    // Windows: only where the deregistration on drop has a bound.
    expect_error(
        comm.register_window(&mut buffer, 0),
        Status::InvalidArgument,
        &["Blocking::No"],
    );
    assert_eq!(fake.count("ncclCommWindowRegister"), 0);
    let open = init(&fake, Blocking::No);
    open.wait(SECOND).unwrap();
    {
        let window = open.register_window(&mut buffer, 1).unwrap();
        assert!(!window.handle().is_null());
        assert_eq!(fake.windows(), 1);
    }
    assert_eq!(fake.windows(), 0, "Drop deregisters the window");
    fake.null_window(true);
    let error = expect_error(
        open.register_window(&mut buffer, 0),
        Status::Unavailable,
        &["returned ncclSuccess but no window"],
    );
    assert_eq!(
        error.nccl_result(),
        Some(0),
        "NCCL answered: its code rides along"
    );
    assert_eq!(error.nccl_text(), Some("ncclSuccess"));
}

#[test]
fn registration_is_refused_by_an_nccl_without_it() {
    let (build, _guard, fake) = need_fakes!("2.18.5");
    let cuda = driver(&build);
    let comm = init(&fake, Blocking::Yes);
    let mut buffer = cuda.alloc::<u8>(64).unwrap();
    expect_error(
        comm.register(&mut buffer),
        Status::Unavailable,
        &["ncclCommRegister"],
    );
    expect_error(
        fake.nccl.alloc::<u8>(64),
        Status::Unavailable,
        &["ncclMemAlloc"],
    );
}

/// Buffers of both allocators, a registration, a stream, an event, the communicator and the
/// driver handle, dropped in several orders: nothing leaks (the fake NCCL counts its blocks;
/// valgrind, run on this test by ci.sh, sees the driver's) and nothing is used after its free.
#[test]
fn drop_orders() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    for order in 0..4 {
        let cuda = driver(&build);
        let stream = cuda.create_stream().unwrap();
        let event = cuda.create_event().unwrap();
        let comm = init(&fake, Blocking::Yes);
        let mut plain = cuda.alloc::<f64>(32).unwrap();
        let mut nccl_memory = fake.nccl.alloc::<f64>(32).unwrap();
        {
            let mut registered = comm.register(&mut nccl_memory).unwrap();
            comm.all_reduce(&plain, &mut registered, RedOp::Sum, &stream)
                .unwrap();
            cuda.record_event(&event, &stream).unwrap();
            if order % 2 == 0 {
                drop(registered);
                drop(stream);
            } else {
                drop(stream);
                drop(event);
                drop(registered);
                drop(comm);
                drop(cuda);
                drop(plain);
                drop(nccl_memory);
                assert_eq!(fake.allocations(), 0);
                continue;
            }
        }
        if order == 0 {
            drop(comm);
            drop(cuda);
            drop(event);
        } else {
            drop(event);
            let _ = plain.view_mut(..).unwrap();
            drop(comm);
        }
        drop(nccl_memory);
        drop(plain);
        assert_eq!(fake.allocations(), 0, "order {order}");
    }
}

/// Per-collective config and encryption on an NCCL older than 2.32: UNAVAILABLE naming what
/// is missing, before NCCL is called; the plain collectives still work.
#[test]
fn per_collective_config_and_encryption_need_nccl_2_32() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let cuda = driver(&build);
    let comm = init(&fake, Blocking::Yes);
    let stream = cuda.create_stream().unwrap();
    let event = cuda.create_event().unwrap();
    let config = ncclshim::CollConfig::new()
        .max_ctas(4)
        .algorithm("ring", true)
        .unwrap()
        .launch_event(&event);
    assert_eq!(config.raw().size, 72);
    assert_eq!(config.raw().minCTAs, i32::MIN);
    assert_eq!(config.raw().launchCompletionEvent, event.as_raw());
    let mut buffer = cuda.alloc::<f32>(8).unwrap();
    expect_error(
        comm.all_reduce_in_place_with(&mut buffer, RedOp::Sum, &config, &stream),
        Status::Unavailable,
        &["ncclAllReduceConfig", "2.32.3"],
    );
    assert_eq!(fake.count("ncclAllReduceConfig"), 0);
    expect_error(
        fake.nccl.set_encryption(Some("key")),
        Status::Unavailable,
        &["ncclSetEncryption"],
    );
    assert_eq!(fake.count("ncclSetEncryption"), 0);
    comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)
        .unwrap();
    assert_eq!(
        std::mem::size_of::<ncclshim::ffi::ncclshim_encryption_config_t>(),
        32
    );
}

/// tests/fakes/fake_nccl.h's `fake_nccl_coll_config`.
#[repr(C)]
struct ArrivedCollConfig {
    calls: c_int,
    given: c_int,
    size: usize,
    magic: u32,
    version: u32,
    alg: [c_char; 64],
    max_ctas: c_int,
    tag: u64,
    event: *mut c_void,
}

/// tests/fakes/fake_nccl.h's `fake_nccl_encryption`.
#[repr(C)]
struct ArrivedEncryption {
    size: usize,
    magic: u32,
    version: u32,
    mode: c_int,
    psk: [c_char; 64],
}

/// What the fake's `name` function returns, a pointer to a `T` it keeps.
fn arrived<T>(fake: &Fake, name: &str) -> &'static T {
    let f = symbol(&fake.path, name);
    // SAFETY: the fake's documented signature; the struct lives in the fake's static storage.
    unsafe { &*std::mem::transmute::<*mut c_void, extern "C" fn() -> *const T>(f)() }
}

/// On a 2.32.3 NCCL, a configured collective forwards its buffers, its count and its config as
/// NCCL reads it (size, magic, version, fields), on a plain and a watched communicator alike;
/// the checks still come first; ncclSetEncryption gets its struct.
#[test]
fn per_collective_config_and_encryption_reach_a_2_32_nccl() {
    let (build, _guard, fake) = need_fakes!("2.32.3");
    let cuda = driver(&build);
    let comm = init(&fake, Blocking::Yes); // 2 ranks
    let stream = cuda.create_stream().unwrap();
    let event = cuda.create_event().unwrap();
    let config = ncclshim::CollConfig::new()
        .max_ctas(4)
        .algorithm("ring", true)
        .unwrap()
        .profiler_tag(77)
        .launch_event(&event);
    let send = cuda.alloc::<f32>(8).unwrap();
    let mut recv = cuda.alloc::<f32>(8).unwrap();
    let mut half = cuda.alloc::<f32>(4).unwrap();
    let (sp, rp, hp) = (send.device_ptr(), recv.device_ptr(), half.device_ptr());
    let (f32_, sum, s) = (
        DataType::Float32.raw() as u64,
        RedOp::Sum.raw() as u64,
        raw(&stream),
    );
    let nccl = comm.nccl_comm() as usize as u64;
    let c = config.raw() as *const _ as usize as u64;

    comm.all_reduce_with(&send, &mut recv, RedOp::Sum, &config, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclAllReduceConfig".into(),
            vec![sp, rp, 8, f32_, sum, nccl, s, c]
        )
    );
    let got: &ArrivedCollConfig = arrived(&fake, "fake_nccl_last_coll_config");
    // SAFETY: the fake terminates the copy.
    let alg = unsafe { CStr::from_ptr(got.alg.as_ptr()) };
    assert_eq!(
        (got.given, got.size, got.magic, got.version),
        (1, 72, 0xcafe_beef, 23203)
    );
    assert_eq!(
        (alg.to_str().unwrap(), got.max_ctas, got.tag),
        ("ring", 4, 77)
    );
    assert_eq!(got.event, event.as_raw().cast());
    comm.broadcast_with(&send, &mut recv, 1, &config, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclBroadcastConfig".into(),
            vec![sp, rp, 8, f32_, 1, nccl, s, c]
        )
    );
    comm.all_gather_with(&half, &mut recv, &config, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclAllGatherConfig".into(),
            vec![hp, rp, 4, f32_, nccl, s, c]
        )
    );
    comm.reduce_scatter_with(&send, &mut half, RedOp::Sum, &config, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclReduceScatterConfig".into(),
            vec![sp, hp, 4, f32_, sum, nccl, s, c]
        )
    );
    comm.all_reduce_in_place_with(&mut half, RedOp::Sum, &config, &stream)
        .unwrap();
    assert_eq!(
        last_call(&fake),
        (
            "ncclAllReduceConfig".into(),
            vec![hp, hp, 4, f32_, sum, nccl, s, c]
        )
    );

    let before = fake.count("ncclAllGatherConfig");
    expect_error(
        comm.all_gather_with(&send, &mut recv, &config, &stream),
        Status::InvalidArgument,
        &["8 x 2"],
    );
    expect_error(
        comm.broadcast_with(&send, &mut recv, 2, &config, &stream),
        Status::InvalidArgument,
        &["root 2"],
    );
    assert_eq!(fake.count("ncclAllGatherConfig"), before);
    assert_eq!(fake.count("ncclBroadcastConfig"), 1);

    fake.nccl.set_encryption(Some("secret")).unwrap();
    let got: &ArrivedEncryption = arrived(&fake, "fake_nccl_last_encryption");
    // SAFETY: as above.
    let psk = unsafe { CStr::from_ptr(got.psk.as_ptr()) };
    assert_eq!(
        (got.size, got.magic, got.version, got.mode),
        (32, 0xcafe_beef, 23203, 1)
    );
    assert_eq!(psk.to_str().unwrap(), "secret");
    fake.nccl.set_encryption(None).unwrap();
    assert_eq!(
        arrived::<ArrivedEncryption>(&fake, "fake_nccl_last_encryption").mode,
        0
    );
}
