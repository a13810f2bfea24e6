//! The watchdog on the fakes: a split-blocking communicator watched with events of the
//! communicator tests' fake driver (tests/comm/fake_cuda_capture.c), whose events fire or
//! never fire as told.

mod support;

use std::ffi::{c_int, c_void};
use std::path::Path;
use std::ptr::{null, null_mut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ncclshim::{
    Blocking, CommState, Communicator, Cuda, DataType, RedOp, Status, Stream, UniqueId, Watchdog,
};
use support::{lock, symbol, Fake};

const ID: UniqueId = UniqueId::from_bytes([0x5a; 128]);
const NEVER_FIRES: c_int = 600;

fn set_event_query(path: &Path, result: c_int) {
    let f = symbol(path, "fake_cuda_set_event_query");
    // SAFETY: the fake's documented signature.
    unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(c_int)>(f)(result) }
}

fn capture_driver(build: &Path) -> (Cuda, std::path::PathBuf) {
    let path = build.join("tests/comm/libfake-cuda-capture.so");
    let cuda = Cuda::open(Some(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (cuda, path)
}

fn split_comm(fake: &Fake) -> Communicator {
    let comm = Communicator::init(&fake.nccl, 2, &ID, 0, Blocking::Split).unwrap();
    assert_eq!(comm.state(), CommState::Initializing);
    comm.wait(Duration::from_secs(1)).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(fake.count("ncclCommSplit"), 1);
    comm
}

#[test]
fn a_hang_fails_the_communicator_and_calls_back() {
    let build = need_fakes!();
    let _guard = lock();
    let fake = Fake::open(&build, "2.28.9");
    let (cuda, path) = capture_driver(&build);
    set_event_query(&path, 0);
    let seen: Arc<Mutex<Vec<(Status, String)>>> = Arc::default();
    let sink = seen.clone();
    let dog = Watchdog::start_with(
        Duration::from_millis(5),
        Some(&cuda),
        Some(Box::new(move |status, message| {
            sink.lock().unwrap().push((status, message.to_owned()))
        })),
    )
    .unwrap();
    let comm = dog
        .watch(split_comm(&fake), Duration::from_millis(100))
        .map_err(|(e, _)| e)
        .unwrap();
    let buf = null_mut::<c_void>();
    for _ in 0..3 {
        // SAFETY: the fake NCCL touches no buffer.
        unsafe {
            comm.all_reduce(
                buf,
                buf,
                64,
                DataType::Float32,
                RedOp::Sum,
                &Stream::DEFAULT,
            )
        }
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(300)); // past the deadline: the events fired
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(comm.failure(), None);
    set_event_query(&path, NEVER_FIRES);
    // SAFETY: as above.
    unsafe {
        comm.all_reduce(
            buf,
            buf,
            256,
            DataType::Float32,
            RedOp::Sum,
            &Stream::DEFAULT,
        )
    }
    .unwrap();
    let start = Instant::now();
    while comm.state() == CommState::Ready && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(comm.state(), CommState::Failed);
    let message = comm.failure().expect("a failure message");
    assert!(
        message.contains("ncclAllReduce #4 (count 256, ncclFloat32)"),
        "{message}"
    );
    // The next call fails at once with the watchdog's status and message.
    // SAFETY: as above.
    let error =
        unsafe { comm.all_reduce(buf, buf, 8, DataType::Float32, RedOp::Sum, &Stream::DEFAULT) }
            .unwrap_err();
    assert_eq!(error.status(), Status::Timeout);
    assert!(error.to_string().contains("ncclAllReduce #4"), "{error}");
    while seen.lock().unwrap().is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(2));
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, Status::Timeout);
        assert_eq!(seen[0].1, message);
    }
    let mut comm = comm.into_inner();
    comm.abort(Duration::from_secs(1)).unwrap();
    assert_eq!(comm.state(), CommState::Aborted);
    assert_eq!(fake.count("ncclCommAbort"), 2); // the child and the parent
    drop(comm);
    drop(dog);
    set_event_query(&path, 0);
}

#[test]
fn watch_refuses_a_communicator_not_ready_and_gives_it_back() {
    let build = need_fakes!();
    let _guard = lock();
    let fake = Fake::open(&build, "2.28.9");
    let (cuda, _) = capture_driver(&build);
    let dog = Watchdog::start_with(Duration::from_millis(10), Some(&cuda), None).unwrap();
    let comm = Communicator::init(&fake.nccl, 2, &ID, 0, Blocking::Split).unwrap();
    let (error, comm) = dog.watch(comm, Duration::from_secs(1)).unwrap_err();
    assert_eq!(error.status(), Status::InvalidArgument);
    assert!(error.to_string().contains("not ready"), "{error}");
    comm.wait(Duration::from_secs(1)).unwrap();
    let watched = dog
        .watch(comm, Duration::from_secs(1))
        .map_err(|(e, _)| e)
        .unwrap();
    assert!(format!("{watched:?}").contains("Watched"));
    drop(watched); // aborts (a blocking child's finalize has no bound): child then parent
    assert_eq!(fake.count("ncclCommAbort"), 2);
    assert_eq!(fake.count("ncclCommFinalize"), 0);
    let error = Watchdog::start(Duration::ZERO, None).unwrap_err();
    assert_eq!(error.status(), Status::InvalidArgument);
}

/// Issue 29, item 1: the Watchdog is owned by its own callback's closure (through an
/// `Arc<Mutex<Option<Watchdog>>>`) and dropped there, on the watchdog's thread. The stop
/// must wait until the callback has returned, and the closure must outlive it: the witness
/// the closure owns is dropped only after the callback said it returned. Before, the
/// closure was freed while it ran (valgrind: "Invalid read ... block free'd").
#[test]
fn a_watchdog_dropped_from_its_own_callback_stops_after_it() {
    struct Witness(Arc<Mutex<Vec<&'static str>>>);
    impl Drop for Witness {
        fn drop(&mut self) {
            self.0.lock().unwrap().push("closure dropped");
        }
    }
    let build = need_fakes!();
    let _guard = lock();
    let fake = Fake::open(&build, "2.28.9");
    let (cuda, path) = capture_driver(&build);
    set_event_query(&path, NEVER_FIRES);
    let slot: Arc<Mutex<Option<Watchdog>>> = Arc::default();
    let events: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let witness = Witness(events.clone());
    let (own, log) = (slot.clone(), events.clone());
    let dog = Watchdog::start_with(
        Duration::from_millis(5),
        Some(&cuda),
        Some(Box::new(move |_, _| {
            let _keep = &witness;
            // The test thread puts the watchdog here once the communicator is watched.
            let start = Instant::now();
            let dog = loop {
                if let Some(dog) = own.lock().unwrap().take() {
                    break Some(dog);
                }
                if start.elapsed() > Duration::from_secs(5) {
                    break None;
                }
                std::thread::yield_now();
            };
            assert!(dog.is_some(), "the watchdog was never handed over");
            drop(dog); // on the watchdog's own thread
            log.lock().unwrap().push("callback returned");
        })),
    )
    .unwrap();
    let watched = dog
        .watch(split_comm(&fake), Duration::from_millis(20))
        .map_err(|(e, _)| e)
        .unwrap();
    let buf = null_mut::<c_void>();
    // SAFETY: the fake NCCL touches no buffer.
    unsafe { watched.all_reduce(buf, buf, 8, DataType::Float32, RedOp::Sum, &Stream::DEFAULT) }
        .unwrap();
    // Safe code may forget the Watched (its communicator stays watched) and hand the
    // watchdog to the closure.
    std::mem::forget(watched);
    *slot.lock().unwrap() = Some(dog);
    let start = Instant::now();
    while events.lock().unwrap().len() < 2 && start.elapsed() < Duration::from_secs(10) {
        std::thread::yield_now();
    }
    assert_eq!(
        *events.lock().unwrap(),
        ["callback returned", "closure dropped"]
    );
    set_event_query(&path, 0);
}

#[test]
fn a_replay_that_hangs_names_its_graph() {
    let build = need_fakes!();
    let _guard = lock();
    let fake = Fake::open(&build, "2.28.9");
    let (cuda, path) = capture_driver(&build);
    set_event_query(&path, 0);
    let dog = Watchdog::start_with(Duration::from_millis(5), Some(&cuda), None).unwrap();
    let comm = dog
        .watch(split_comm(&fake), Duration::from_millis(100))
        .map_err(|(e, _)| e)
        .unwrap();
    let stream = Stream::DEFAULT;
    comm.record_graph(&stream, "decode\0step", 2).unwrap();
    let start = Instant::now();
    while comm.counts().unwrap().outstanding > 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let counts = comm.counts().unwrap();
    assert_eq!(
        (counts.recorded, counts.replays, counts.captured),
        (1, 1, 0)
    );
    assert_eq!((counts.events, counts.outstanding), (1, 0));
    assert_eq!(comm.state(), CommState::Ready);
    set_event_query(&path, NEVER_FIRES);
    comm.record_graph(&stream, "decode\0step", 2).unwrap();
    while comm.state() == CommState::Ready && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(comm.state(), CommState::Failed);
    let message = comm.failure().expect("a failure message");
    assert!(
        message.contains("of CUDA graph \"decode step\" (2 collectives)"),
        "{message}"
    );
    let error = comm.record_graph(&stream, "decode step", 2).unwrap_err();
    assert_eq!(error.status(), Status::Timeout);
    assert!(error.to_string().contains("decode step"), "{error}");
    let too_many = comm.record_graph(&stream, "g", u32::MAX);
    assert_eq!(too_many.unwrap_err().status(), Status::InvalidArgument);
    let mut comm = comm.into_inner();
    comm.abort(Duration::from_secs(1)).unwrap();
    drop(comm);
    drop(dog);
    set_event_query(&path, 0);
}

/// Every collective of a watched communicator is recorded, not only all_reduce: each reaches
/// its NCCL function and adds one record (before, all but all_reduce went through `Deref` to
/// the communicator's own and were never watched).
#[test]
fn every_collective_of_a_watched_communicator_is_recorded() {
    let build = need_fakes!();
    let _guard = lock();
    let fake = Fake::open(&build, "2.28.9");
    let (cuda, path) = capture_driver(&build);
    set_event_query(&path, 0);
    let dog = Watchdog::start_with(Duration::from_millis(5), Some(&cuda), None).unwrap();
    let comm = dog
        .watch(split_comm(&fake), Duration::from_secs(5))
        .map_err(|(e, _)| e)
        .unwrap();
    let (send, recv, s) = (null::<c_void>(), null_mut::<c_void>(), &Stream::DEFAULT);
    // SAFETY (each call): the fake touches no memory.
    let calls: [(&str, &dyn Fn() -> ncclshim::Result<()>); 6] = [
        ("ncclAllReduce", &|| unsafe {
            comm.all_reduce(send, recv, 8, DataType::Float32, RedOp::Sum, s)
        }),
        ("ncclBroadcast", &|| unsafe {
            comm.broadcast(send, recv, 8, DataType::Float32, 0, s)
        }),
        ("ncclAllGather", &|| unsafe {
            comm.all_gather(send, recv, 8, DataType::Bfloat16, s)
        }),
        ("ncclReduceScatter", &|| unsafe {
            comm.reduce_scatter(send, recv, 8, DataType::Int64, RedOp::Max, s)
        }),
        ("ncclSend", &|| unsafe {
            comm.send(send, 8, DataType::Uint8, 1, s)
        }),
        ("ncclRecv", &|| unsafe {
            comm.recv(recv, 8, DataType::Uint8, 1, s)
        }),
    ];
    for (i, (name, call)) in calls.iter().enumerate() {
        call().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fake.count(name), 1, "{name}");
        assert_eq!(comm.counts().unwrap().recorded, i as u64 + 1, "{name}");
    }
    drop(comm);
    drop(dog);
}
