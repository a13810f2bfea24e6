//! Communicators on the fake NCCL: blocking and non-blocking init, progress, asynchronous
//! errors, deadlines, teardown in Drop, collectives, groups and the config builder.

mod support;

use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use ncclshim::{Blocking, CommState, Communicator, ConfigField, DataType, RedOp, Status, Stream};
use support::{expect_error, init, Fake, ID, SECOND};

const REMOTE_ERROR: i32 = 6;

/// A blocking communicator's finalize has no bound (a dead peer hangs it for good), so Drop
/// aborts it: local, bounded by the timeout. Blocking::Split's child is blocking too.
#[test]
fn blocking_init_is_ready_and_drop_aborts_within_its_bound() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = Communicator::init(&fake.nccl, 2, &ID, 1, Blocking::Yes).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!((comm.rank(), comm.size()), (1, 2));
    assert!(!comm.nccl_comm().is_null());
    assert_eq!(comm.blocking(), Blocking::Yes);
    drop(comm);
    assert_eq!(fake.count("ncclCommFinalize"), 0);
    assert_eq!(fake.count("ncclCommDestroy"), 0);
    assert_eq!(fake.count("ncclCommAbort"), 1);

    let comm = init(&fake, Blocking::Split);
    comm.wait(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    drop(comm);
    assert_eq!(
        fake.count("ncclCommFinalize"),
        0,
        "the child's finalize would block"
    );
    assert_eq!(fake.count("ncclCommAbort"), 3); // and the split's child and parent
}

/// A non-blocking communicator: Drop destroys it within its timeout (every step bounded).
#[test]
fn non_blocking_drop_destroys() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = init(&fake, Blocking::No);
    comm.wait(SECOND).unwrap();
    drop(comm);
    assert_eq!(fake.count("ncclCommFinalize"), 1);
    assert_eq!(fake.count("ncclCommDestroy"), 1);
    assert_eq!(fake.count("ncclCommAbort"), 0);
}

#[test]
fn non_blocking_init_makes_progress_within_its_deadline() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    fake.asynchronous(3, 0);
    let comm = init(&fake, Blocking::No);
    assert_eq!(comm.state(), CommState::Initializing);
    assert!(
        comm.nccl_comm().is_null(),
        "no raw communicator before it is ready"
    );
    let error = comm.wait(Duration::ZERO).unwrap_err();
    assert_eq!(error.status(), Status::Timeout);
    assert_eq!(comm.state(), CommState::Initializing);
    comm.wait(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
}

#[test]
fn an_asynchronous_error_fails_the_communicator_and_drop_aborts_it() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    fake.asynchronous(1, REMOTE_ERROR);
    fake.last_error("peer 1 closed the connection");
    let comm = init(&fake, Blocking::No);
    let error = comm.wait(SECOND).unwrap_err();
    assert_eq!(error.status(), Status::NcclError);
    assert_eq!(error.nccl_result(), Some(REMOTE_ERROR));
    assert_eq!(
        error.nccl_last_error(),
        Some("peer 1 closed the connection")
    );
    assert_eq!(comm.state(), CommState::Failed);
    // An NCCL_ERROR with no failing NCCL call behind it carries no code, not the thread's
    // older one (REMOTE_ERROR, still ncclshim_last_nccl_result).
    let again = comm.wait(SECOND).unwrap_err();
    assert_eq!(again.status(), Status::NcclError);
    assert!(again.message().contains("failed earlier"), "{again}");
    assert_eq!(again.nccl_result(), None);
    drop(comm);
    assert_eq!(fake.count("ncclCommAbort"), 1);
    assert_eq!(
        fake.count("ncclCommDestroy"),
        0,
        "a failed communicator is never finalized"
    );
}

#[test]
fn init_with_a_deadline_aborts_when_a_rank_never_comes() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    fake.asynchronous(-1, 0);
    let start = Instant::now();
    let error = Communicator::init_with_deadline(&fake.nccl, 2, &ID, 0, Duration::from_millis(200))
        .unwrap_err();
    let took = start.elapsed();
    assert_eq!(error.status(), Status::Timeout);
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(fake.count("ncclCommAbort"), 1);
}

#[test]
fn non_blocking_needs_nccl_2_14() {
    let (_, _guard, fake) = need_fakes!("no-config"); // lacks ncclCommInitRankConfig
    expect_error(
        Communicator::init(&fake.nccl, 2, &ID, 0, Blocking::No),
        Status::Unavailable,
        &[],
    );
    // init_with_deadline refuses, naming the opt-in, before NCCL is called ...
    expect_error(
        Communicator::init_with_deadline(&fake.nccl, 2, &ID, 0, SECOND),
        Status::Unavailable,
        &["init_with_deadline", "init_with_deadline_or_blocking"],
    );
    assert_eq!(fake.count("ncclCommInitRank"), 0);
    // ... and the opt-in makes a blocking communicator, which says so.
    let comm = Communicator::init_with_deadline_or_blocking(&fake.nccl, 2, &ID, 0, SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(comm.blocking(), Blocking::Yes);
}

/// NCCL said success but wrote no communicator: the error carries NCCL's code and its name.
#[test]
fn success_without_a_communicator_carries_nccls_answer() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    fake.live(false); // the fake's init then writes nothing
    let error = expect_error(
        Communicator::init(&fake.nccl, 2, &ID, 0, Blocking::Yes),
        Status::NcclError,
        &["returned ncclSuccess but no communicator"],
    );
    assert_eq!(error.nccl_result(), Some(0));
    assert_eq!(error.nccl_text(), Some("ncclSuccess"));
}

#[test]
fn bad_arguments_are_errors() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    for (nranks, rank) in [(0, 0), (2, 2), (2, -1)] {
        let error = Communicator::init(&fake.nccl, nranks, &ID, rank, Blocking::Yes).unwrap_err();
        assert_eq!(error.status(), Status::InvalidArgument, "{nranks} {rank}");
    }
}

#[test]
fn collectives_reach_nccl_and_their_errors_come_back() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = init(&fake, Blocking::Yes);
    let s = &Stream::DEFAULT;
    let calls = collective_calls!(comm, null(), null_mut(), s);
    // Each reaches its own NCCL function, and its failure names that function.
    for (name, call) in calls {
        call().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fake.count(name), 1, "{name}");
        fake.inject(name, 5, 1);
        let error = call().unwrap_err();
        assert_eq!(error.nccl_result(), Some(5), "{name}");
        assert!(
            error.message().contains(&format!("{name} failed")),
            "{name}: {error}"
        );
    }
    fake.inject("ncclAllReduce", 4, 1);
    fake.last_error("AllReduce : invalid type 99");
    // SAFETY: as above.
    let error =
        unsafe { comm.all_reduce_raw(null(), null_mut(), 8, DataType::Float32, RedOp::Sum, s) }
            .unwrap_err();
    assert_eq!(error.nccl_result(), Some(4));
    assert_eq!(error.nccl_last_error(), Some("AllReduce : invalid type 99"));
    assert!(
        error.message().starts_with("communicator rank 0 of 2")
            && error.message().contains("ncclAllReduce failed"),
        "{error}"
    );
}

#[test]
fn fp8_needs_nccl_2_24_and_a_failed_communicator_refuses_work() {
    let (build, _guard, fake) = need_fakes!("2.21.5");
    let comm = init(&fake, Blocking::Yes);
    let s = &Stream::DEFAULT;
    // SAFETY: refused before NCCL is called.
    let fp8 =
        unsafe { comm.all_reduce_raw(null(), null_mut(), 8, DataType::Float8e4m3, RedOp::Sum, s) };
    expect_error(fp8, Status::Unavailable, &["2.24.3"]);
    assert_eq!(fake.count("ncclAllReduce"), 0);

    let fake = Fake::open(&build, "2.28.9");
    fake.asynchronous(0, REMOTE_ERROR);
    let comm = init(&fake, Blocking::No);
    assert!(comm.wait(SECOND).is_err());
    // SAFETY: refused before NCCL is called.
    let failed = unsafe { comm.broadcast_raw(null(), null_mut(), 8, DataType::Float32, 0, s) };
    expect_error(failed, Status::InvalidArgument, &["Failed"]);
}

#[test]
fn fp8_goes_to_an_nccl_that_has_it() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = init(&fake, Blocking::Yes);
    let s = &Stream::DEFAULT;
    for dtype in [DataType::Float8e4m3, DataType::Float8e5m2] {
        // SAFETY: the fake touches no memory.
        unsafe { comm.all_reduce_raw(null(), null_mut(), 8, dtype, RedOp::Sum, s) }.unwrap();
    }
    assert_eq!(fake.count("ncclAllReduce"), 2);
}

#[test]
fn groups_start_and_end_around_the_work() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = init(&fake, Blocking::Yes);
    let out = fake.nccl.group(&[&comm], SECOND, || {
        // SAFETY: the fake touches no memory.
        unsafe {
            comm.send_raw(null(), 4, DataType::Float32, 1, &Stream::DEFAULT)?;
            comm.recv_raw(null_mut(), 4, DataType::Float32, 1, &Stream::DEFAULT)?;
        }
        Ok(42)
    });
    assert_eq!(out.unwrap(), 42);
    assert_eq!(
        (fake.count("ncclGroupStart"), fake.count("ncclGroupEnd")),
        (1, 1)
    );
    // the group is ended when the work fails, and the work's error is the one returned
    let out: ncclshim::Result<()> = fake.nccl.group(&[&comm], SECOND, || {
        Err(ncclshim::Error::new(Status::Timeout, "work failed"))
    });
    assert_eq!(out.unwrap_err().message(), "work failed");
    assert_eq!(fake.count("ncclGroupEnd"), 2);
    fake.inject("ncclGroupEnd", 5, 1);
    assert_eq!(
        fake.nccl
            .group(&[&comm], SECOND, || Ok(()))
            .unwrap_err()
            .nccl_result(),
        Some(5)
    );
}

#[test]
fn a_group_whose_work_panics_is_ended_before_the_panic_goes_on() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let comm = init(&fake, Blocking::Yes);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: ncclshim::Result<()> = fake.nccl.group(&[&comm], SECOND, || {
            panic!("the work panics inside the group")
        });
    }));
    let payload = unwound.expect_err("the panic goes on to the caller");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the work panics inside the group")
    );
    // NCCL's group is the thread's: left open, it would hold back every later call here.
    assert_eq!(
        (fake.count("ncclGroupStart"), fake.count("ncclGroupEnd")),
        (1, 1)
    );
}

#[test]
fn explicit_destroy_and_abort_leave_nothing_for_drop() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let mut comm = init(&fake, Blocking::Yes);
    comm.destroy(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Destroyed);
    drop(comm);
    assert_eq!(fake.count("ncclCommDestroy"), 1);
    let mut comm = init(&fake, Blocking::Yes);
    comm.abort(SECOND).unwrap();
    assert_eq!(comm.state(), CommState::Aborted);
    drop(comm);
    assert_eq!(
        (fake.count("ncclCommAbort"), fake.count("ncclCommDestroy")),
        (1, 1)
    );
}

#[test]
fn the_config_builder_refuses_fields_the_nccl_would_ignore() {
    let (build, _guard) = need_fakes!();
    let old = Fake::open(&build, "2.21.5");
    let old_name = old.nccl.config().comm_name("experts").map(|_| ());
    expect_error(old_name, Status::Unavailable, &["commName"]);
    assert!(old.nccl.config().blocking(false).is_ok());

    let new = Fake::open(&build, "2.28.9");
    let mut config = new
        .nccl
        .config()
        .blocking(false)
        .unwrap()
        .comm_name("experts")
        .unwrap()
        .set_int(ConfigField::MinCtas, 4)
        .unwrap();
    let raw = config.raw();
    assert_eq!((raw.blocking, raw.minCTAs, raw.maxCTAs), (0, 4, i32::MIN));
    // SAFETY: set by the builder to a string the config owns.
    assert_eq!(
        unsafe { std::ffi::CStr::from_ptr(raw.commName) }
            .to_str()
            .unwrap(),
        "experts"
    );
    assert!(!config.as_mut_ptr().is_null());
    let not_a_string = new.nccl.config().set_str(ConfigField::Blocking, "0");
    expect_error(not_a_string.map(|_| ()), Status::InvalidArgument, &[]);
    let nul = new.nccl.config().comm_name("a\0b");
    expect_error(nul.map(|_| ()), Status::InvalidArgument, &[]);
}

#[test]
fn a_raw_communicator_is_waited_for_through_the_handle() {
    let (_, _guard, fake) = need_fakes!("2.28.9");
    let mut config = fake.nccl.config().blocking(false).unwrap();
    let mut raw = null_mut();
    let id = ID.to_raw();
    fake.asynchronous(2, 0);
    // SAFETY: valid pointers; the fake's communicator.
    let result = unsafe {
        (fake.nccl.table().ncclCommInitRankConfig)(&mut raw, 2, id, 0, config.as_mut_ptr())
    };
    fake.nccl
        .check_nccl(result, "ncclCommInitRankConfig")
        .unwrap();
    assert_eq!(result, 7, "in progress");
    // SAFETY: the fake's live communicator.
    unsafe {
        assert_eq!(
            fake.nccl.wait(raw, Duration::ZERO).unwrap_err().status(),
            Status::Timeout
        );
        fake.nccl.wait(raw, SECOND).unwrap();
        assert_eq!(
            fake.nccl.wait(null_mut(), SECOND).unwrap_err().status(),
            Status::InvalidArgument
        );
    }
}
