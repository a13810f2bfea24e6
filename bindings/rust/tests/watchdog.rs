//! The watchdog on the fakes: a split-blocking communicator watched with events of the
//! communicator tests' fake driver (tests/fakes/fake_cuda.h), whose events fire or
//! never fire as told.

mod support;

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ncclshim::{
    Blocking, CommState, Communicator, Cuda, DataType, RedOp, Status, Stream, Watchdog, Watched,
};
use support::{expect_error, init, symbol, wait_until, Fake, SECOND};

const NEVER_FIRES: c_int = 600;

/// The capture driver's answer to cuEventQuery; "fired" (0) again when dropped, also when a
/// test fails, so that the next test's events fire.
struct EventQuery(PathBuf);

impl EventQuery {
    fn answer(&self, result: c_int) {
        let f = symbol(&self.0, "fake_cuda_set_event_query");
        // SAFETY: the fake's documented signature.
        unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(c_int)>(f)(result) }
    }
}

impl Drop for EventQuery {
    fn drop(&mut self) {
        self.answer(0);
    }
}

/// The communicator tests' fake driver, its events firing at once.
fn capture_driver(build: &Path) -> (Cuda, EventQuery) {
    let path = build.join("tests/fakes/libfake-cuda-13.0.so");
    let cuda = Cuda::open(Some(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: the fake's documented signature; device 0 current, as in a CUDA program.
    let f = symbol(&path, "fake_cuda_use_device");
    assert_eq!(
        unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(c_int) -> c_int>(f)(0) },
        0
    );
    let query = EventQuery(path);
    query.answer(0);
    (cuda, query)
}

fn split_comm(fake: &Fake) -> Communicator {
    let comm = init(fake, Blocking::Split);
    assert_eq!(comm.state(), CommState::Initializing);
    comm.wait(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(fake.count("ncclCommSplit"), 1);
    comm
}

/// A split communicator on `fake`, watched by `dog` with `timeout` as each operation's deadline.
fn watched<'d>(dog: &'d Watchdog, fake: &Fake, timeout: Duration) -> Watched<'d> {
    dog.watch(split_comm(fake), timeout)
        .map_err(|(e, _)| e)
        .unwrap()
}

/// The watchdog's message once it has failed `comm` (within 10 s), which must hold `what`.
fn failure(comm: &Watched<'_>, what: &str) -> String {
    wait_until(Duration::from_secs(10), || comm.state() != CommState::Ready);
    assert_eq!(comm.state(), CommState::Failed);
    let message = comm.failure().expect("a failure message");
    assert!(message.contains(what), "{what:?} not in: {message}");
    message
}

/// Stop watching `comm` and abort it.
fn abort(comm: Watched<'_>) {
    let mut comm = comm.into_inner();
    comm.abort(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Aborted);
}

/// A watchdog without a callback, looking every 5 ms, on the capture driver, whose events fire
/// at once.
fn quiet_watchdog(build: &Path) -> (Watchdog, EventQuery) {
    let (cuda, query) = capture_driver(build);
    let dog = Watchdog::start_with(Duration::from_millis(5), Some(&cuda), None).unwrap();
    (dog, query)
}

#[test]
fn a_hang_fails_the_communicator_and_calls_back() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (cuda, query) = capture_driver(&build);
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
    let comm = watched(&dog, &fake, Duration::from_millis(100));
    let buf = null_mut::<c_void>();
    for _ in 0..3 {
        // SAFETY: the fake NCCL touches no buffer.
        unsafe {
            comm.all_reduce_raw(
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
    query.answer(NEVER_FIRES);
    // SAFETY: as above.
    unsafe {
        comm.all_reduce_raw(
            buf,
            buf,
            256,
            DataType::Float32,
            RedOp::Sum,
            &Stream::DEFAULT,
        )
    }
    .unwrap();
    let message = failure(&comm, "ncclAllReduce #4 (count 256, ncclFloat32)");
    // The next call fails at once with the watchdog's status and message.
    // SAFETY: as above.
    let again = unsafe {
        comm.all_reduce_raw(buf, buf, 8, DataType::Float32, RedOp::Sum, &Stream::DEFAULT)
    };
    expect_error(again, Status::Timeout, &["ncclAllReduce #4"]);
    wait_until(Duration::from_secs(5), || !seen.lock().unwrap().is_empty());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, Status::Timeout);
        assert_eq!(seen[0].1, message);
    }
    abort(comm);
    assert_eq!(fake.count("ncclCommAbort"), 2); // the child and the parent
}

#[test]
fn watch_refuses_a_communicator_not_ready_and_gives_it_back() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (dog, _) = quiet_watchdog(&build);
    let (error, comm) = dog.watch(init(&fake, Blocking::Split), SECOND).unwrap_err();
    expect_error::<()>(Err(error), Status::InvalidArgument, &["not ready"]);
    comm.wait(SECOND).unwrap();
    let watched = dog.watch(comm, SECOND).map_err(|(e, _)| e).unwrap();
    assert!(format!("{watched:?}").contains("Watched"));
    drop(watched); // aborts (a blocking child's finalize has no bound): child then parent
    assert_eq!(fake.count("ncclCommAbort"), 2);
    assert_eq!(fake.count("ncclCommFinalize"), 0);
    expect_error(
        Watchdog::start(Duration::ZERO, None),
        Status::InvalidArgument,
        &[],
    );
}

/// The Watchdog may be owned by its own callback's closure (through an
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
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (cuda, query) = capture_driver(&build);
    query.answer(NEVER_FIRES);
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
    let watched = watched(&dog, &fake, Duration::from_millis(20));
    let buf = null_mut::<c_void>();
    // SAFETY: the fake NCCL touches no buffer.
    unsafe { watched.all_reduce_raw(buf, buf, 8, DataType::Float32, RedOp::Sum, &Stream::DEFAULT) }
        .unwrap();
    // Safe code may forget the Watched (its communicator stays watched) and hand the
    // watchdog to the closure.
    std::mem::forget(watched);
    *slot.lock().unwrap() = Some(dog);
    wait_until(Duration::from_secs(10), || {
        events.lock().unwrap().len() >= 2
    });
    assert_eq!(
        *events.lock().unwrap(),
        ["callback returned", "closure dropped"]
    );
}

#[test]
fn a_replay_that_hangs_names_its_graph() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (dog, query) = quiet_watchdog(&build);
    let comm = watched(&dog, &fake, Duration::from_millis(100));
    let stream = Stream::DEFAULT;
    comm.record_graph(&stream, "decode\0step", 2).unwrap();
    wait_until(Duration::from_secs(5), || {
        comm.counts().unwrap().outstanding == 0
    });
    let counts = comm.counts().unwrap();
    assert_eq!(
        (counts.recorded, counts.replays, counts.captured),
        (1, 1, 0)
    );
    assert_eq!((counts.events, counts.outstanding), (1, 0));
    assert_eq!(comm.state(), CommState::Ready);
    query.answer(NEVER_FIRES);
    comm.record_graph(&stream, "decode\0step", 2).unwrap();
    failure(&comm, "of CUDA graph \"decode step\" (2 collectives)");
    let again = comm.record_graph(&stream, "decode step", 2);
    expect_error(again, Status::Timeout, &["decode step"]);
    let too_many = comm.record_graph(&stream, "g", u32::MAX);
    expect_error(too_many, Status::InvalidArgument, &[]);
    abort(comm);
}

/// Every collective of a watched communicator is recorded, not only all_reduce: each reaches
/// its NCCL function and adds one record (before, all but all_reduce went through `Deref` to
/// the communicator's own and were never watched).
#[test]
fn every_collective_of_a_watched_communicator_is_recorded() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (dog, _) = quiet_watchdog(&build);
    let comm = watched(&dog, &fake, Duration::from_secs(5));
    let s = &Stream::DEFAULT;
    let calls = collective_calls!(comm, null(), null_mut(), s);
    for (i, (name, call)) in calls.iter().enumerate() {
        call().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fake.count(name), 1, "{name}");
        assert_eq!(comm.counts().unwrap().recorded, i as u64 + 1, "{name}");
    }
}

/// A payload whose own Drop panics again.
struct PanicsOnDrop(Arc<Mutex<u32>>);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
        panic!("the payload's drop panics too");
    }
}

/// An on_failure that panics, with a payload whose Drop panics: neither panic reaches C (which
/// would abort the test process); the watchdog goes on and the payload was dropped once.
#[test]
fn a_callback_panicking_with_a_panicking_payload_stays_on_its_thread() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (cuda, query) = capture_driver(&build);
    let drops = Arc::new(Mutex::new(0));
    let calls = Arc::new(Mutex::new(0));
    let (d, c) = (drops.clone(), calls.clone());
    let dog = Watchdog::start_with(
        Duration::from_millis(5),
        Some(&cuda),
        Some(Box::new(move |_, _| {
            *c.lock().unwrap() += 1;
            std::panic::panic_any(PanicsOnDrop(d.clone()));
        })),
    )
    .unwrap();
    let comm = watched(&dog, &fake, Duration::from_millis(50));
    query.answer(NEVER_FIRES);
    // SAFETY: the fake NCCL touches no buffer.
    let mut buffer = unsafe { ncclshim::DeviceViewMut::<f32>::from_raw(0, 8) };
    comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &Stream::DEFAULT)
        .unwrap();
    failure(&comm, "ncclAllReduce");
    assert!(wait_until(Duration::from_secs(5), || *drops
        .lock()
        .unwrap()
        == 1));
    assert_eq!(*calls.lock().unwrap(), 1);
    abort(comm);
    drop(dog); // stops and joins: the thread survived the panics
}

/// The program destroys its stream as soon as its recorded work is synced, round after round
/// (the next stream then gets the same handle from the driver): the record needs nothing from
/// the stream after the call, so the watchdog never names a destroyed stream (the strict fake
/// driver of tests/fakes aborts the test if it does) and reports nothing.
#[test]
fn a_stream_dropped_after_its_record_is_never_used_again() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    // The fake driver of the CUDA tests: the strict one aborts on a destroyed stream's handle.
    let (cuda, _) = support::fake_cuda(&build, "13.0");
    cuda.init().unwrap();
    cuda.activate_device(0).unwrap();
    let dog = Watchdog::start_with(Duration::from_millis(1), Some(&cuda), None).unwrap();
    let comm = watched(&dog, &fake, Duration::from_secs(5));
    // SAFETY: the fake NCCL touches no buffer.
    let mut buffer = unsafe { ncclshim::DeviceViewMut::<f32>::from_raw(0, 8) };
    for _ in 0..50 {
        let stream = cuda.create_stream().unwrap();
        for _ in 0..8 {
            comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)
                .unwrap();
        }
        cuda.sync_stream(&stream).unwrap();
        drop(stream);
        std::thread::sleep(Duration::from_millis(2)); // the watchdog's passes run meanwhile
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(comm.failure(), None);
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(comm.counts().unwrap().recorded, 400);
    abort(comm);
}

#[test]
fn a_watchdog_dropped_before_its_watched_communicator_unwatches_it_first() {
    let (build, _guard, fake) = need_fakes!("2.28.9");
    let (cuda, _query) = capture_driver(&build);
    let stream = cuda.create_stream().unwrap();
    let mut buffer = cuda.alloc::<f32>(4).unwrap();
    {
        // `comm` is declared first, so it is dropped last: the borrow allows it (Watched has
        // no Drop of its own), and the watchdog's stop unwatches it before freeing itself.
        let comm;
        let dog = Watchdog::start_with(Duration::from_millis(5), Some(&cuda), None).unwrap();
        comm = watched(&dog, &fake, SECOND);
        comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)
            .unwrap();
        assert_eq!(comm.counts().unwrap().recorded, 1);
    }
    // the communicator was then torn down as an unwatched one (its Drop aborts a split one)
    assert_eq!(fake.count("ncclCommAbort"), 2, "the child and the parent");
}
