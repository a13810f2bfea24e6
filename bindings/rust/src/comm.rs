//! Communicators whose every wait has a deadline.

use std::cell::RefCell;
use std::ffi::{c_void, CStr, CString};
use std::time::Duration;

use crate::error::{check, Error, Result, Status};
use crate::ffi;
use crate::{millis, text, Capability, Cuda, DataType, Nccl, RedOp, Stream, UniqueId};

/// The methods of the rows of [`for_each_collective!`]: each calls NCCL's function from the
/// table with the row's arguments, then the communicator and the stream (the order every
/// collective takes), once the communicator is ready for the row's `dtype`, and checks the
/// result as [`Communicator::check`] does, under the call's own name. It holds no `unsafe`
/// block: the call through the table compiles only inside the `unsafe fn`, whose `# Safety`
/// covers the arguments.
///
/// They are `#[inline]`, so that the caller's crate compiles the success path into its own
/// code: one read of the state (an atomic load in C), the table call and a test of its result.
/// Everything else (fp8, a communicator not READY, NCCL's refusal) is out of line.
macro_rules! communicator_collectives {
    ($($(#[$doc:meta])* fn $name:ident($($param:ident: $type:ty),* $(,)?)
        [$count:ident, $dtype:ident] => $call:ident($($arg:expr),* $(,)?);)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub unsafe fn $name(&self, $($param: $type,)* stream: &Stream) -> Result<()> {
                let comm = match self.ready_at_once($dtype) {
                    Some(comm) => comm,
                    None => self.ready($dtype)?,
                };
                // SAFETY: the table lives as long as `self.nccl`.
                let result = (unsafe { &*self.table }.$call)($($arg,)* comm, stream.as_raw());
                // Success needs no further check: the communicator was READY just before.
                if result == ffi::ncclSuccess {
                    return Ok(());
                }
                self.check_refused(result, concat!(stringify!($call), "\0"))
            }
        )*
    };
}

/// How NCCL calls on a communicator behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocking {
    /// Calls block until done (NCCL's default); init and finalize cannot be bounded.
    Yes,
    /// Calls return at once and finish in the background, so that every wait has a deadline
    /// (NCCL 2.14+, the nonblocking-init capability).
    No,
    /// Bounded init, blocking operations (`NCCLSHIM_COMM_SPLIT_BLOCKING`, NCCL 2.18.1+): a
    /// non-blocking init, then, in the same [`Communicator::wait`], a split into a blocking
    /// child that collectives run on; watch it with a [`crate::Watchdog`].
    Split,
}

/// Where a communicator is in its life (`ncclshim_comm_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommState {
    /// Non-blocking init started; [`Communicator::wait`] finishes it.
    Initializing,
    /// Usable.
    Ready,
    /// A destroy ran out of time while finalizing.
    Finalizing,
    /// NCCL reported an error: only an abort releases it.
    Failed,
    /// Finalized and destroyed.
    Destroyed,
    /// ncclCommAbort is still running on its thread.
    Aborting,
    /// ncclCommAbort returned.
    Aborted,
}

impl CommState {
    fn from_raw(raw: i32) -> CommState {
        match raw {
            0 => CommState::Initializing,
            1 => CommState::Ready,
            2 => CommState::Finalizing,
            3 => CommState::Failed,
            5 => CommState::Aborting,
            6 => CommState::Aborted,
            _ => CommState::Destroyed,
        }
    }
}

/// One rank of an NCCL communicator (`ncclshim_comm`), with a deadline on every wait.
///
/// Collectives take typed device memory ([`crate::DeviceBuffer`], its views, or any
/// [`crate::DeviceMemory`]), checked against each other and the communicator before NCCL is
/// called (crate::typed has the failure semantics); the `*_raw` ones take device addresses and
/// are `unsafe`. Each call's result is checked and, on a non-blocking communicator, finished
/// within [`Communicator::timeout`].
///
/// `Drop` tears down within a bound that depends on the [`Blocking`] mode (README.md,
/// "Drop"), each step bounded by [`Communicator::timeout`]:
/// - [`Blocking::No`]: a live communicator is destroyed (collectively: every rank must drop
///   or destroy its own) with a bounded wait, and aborted when that fails or times out; a
///   failed one is aborted. At most about twice the timeout.
/// - [`Blocking::Yes`] and [`Blocking::Split`]: aborted (local), since the finalize of a
///   blocking communicator (the split's child) cannot be bounded: a dead peer would hang it
///   for good. At most about the timeout.
///
/// Call [`Communicator::destroy`] or [`Communicator::abort`] to see the outcome.
pub struct Communicator {
    raw: *mut ffi::ncclshim_comm,
    nccl: Nccl,
    /// `nccl`'s function table, fetched once: every collective calls through it.
    table: *const ffi::ncclshim_nccl_table,
    timeout: Duration,
    blocking: Blocking,
    /// Symmetric buffers dropped while a blocking deregistration could hang: freed once the
    /// communicator is torn down (crate::symmem).
    pub(crate) dropped_buffers: RefCell<Vec<*mut ffi::ncclshim_symmem>>,
}

// SAFETY: NCCL lets a communicator be used from any thread, one at a time. It is Send but not
// Sync, so calls through &self never run concurrently; destroy and abort take &mut self so
// that no SymmetricBuffer (which borrows it) outlives the teardown.
unsafe impl Send for Communicator {}

impl Communicator {
    /// Rank `rank` of `nranks`, with the id every rank got, on this thread's current CUDA
    /// device. Blocking: returns when every rank joined. Non-blocking: returns at once,
    /// INITIALIZING; [`Communicator::wait`] before use, or use
    /// [`Communicator::init_with_deadline`]. UNAVAILABLE for non-blocking on NCCL < 2.14.
    pub fn init(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        blocking: Blocking,
    ) -> Result<Communicator> {
        nccl.status()?;
        let options = ffi::ncclshim_comm_options {
            size: std::mem::size_of::<ffi::ncclshim_comm_options>(),
            blocking: match blocking {
                Blocking::No => 0,
                Blocking::Yes => 1,
                Blocking::Split => 2,
            },
        };
        let id = id.to_raw();
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid pointers for the call.
        check(unsafe {
            ffi::ncclshim_comm_init(nccl.raw(), nranks, &id, rank, &options, &mut raw)
        })?;
        Ok(Communicator {
            raw,
            nccl: nccl.clone(),
            table: nccl.table(),
            timeout: Duration::from_secs(60),
            blocking,
            dropped_buffers: RefCell::default(),
        })
    }

    /// Non-blocking init and a wait of at most `deadline` for every rank to join.
    ///
    /// Failure semantics:
    /// - UNAVAILABLE, naming both versions, on an NCCL without non-blocking init (before
    ///   2.14), whose init no deadline can bound: nothing is started. Opt in to an unbounded
    ///   blocking init there with [`Communicator::init_with_deadline_or_blocking`].
    /// - TIMEOUT when a rank never comes: the communicator is aborted (bounded by the same
    ///   deadline) before this returns.
    /// - NCCL_ERROR with NCCL's code, text and last error when NCCL refuses the init or fails
    ///   it asynchronously (then aborted too); also when NCCL says success but gives no
    ///   communicator (the code NCCL returned, and its name, are in the error).
    /// - The communicator is [`Blocking::No`]: a collective with an argument NCCL refuses can
    ///   fail the whole communicator (see the crate's failure semantics, README.md).
    pub fn init_with_deadline(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        deadline: Duration,
    ) -> Result<Communicator> {
        nccl.require(
            Capability::NonblockingInit,
            "init_with_deadline (a bounded init needs a non-blocking one; \
             init_with_deadline_or_blocking accepts an unbounded blocking init instead)",
        )?;
        Communicator::init_bounded(nccl, nranks, id, rank, Blocking::No, deadline)
    }

    /// As [`Communicator::init_with_deadline`] where the NCCL has non-blocking init; on an
    /// older NCCL (before 2.14), a blocking init, which waits for every rank **without a
    /// bound** (a rank that never comes hangs it): the caller opts in to that by calling this.
    /// [`Communicator::blocking`] says which was made.
    pub fn init_with_deadline_or_blocking(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        deadline: Duration,
    ) -> Result<Communicator> {
        let blocking = if nccl.has(Capability::NonblockingInit) {
            Blocking::No
        } else {
            Blocking::Yes
        };
        Communicator::init_bounded(nccl, nranks, id, rank, blocking, deadline)
    }

    fn init_bounded(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        blocking: Blocking,
        deadline: Duration,
    ) -> Result<Communicator> {
        let mut comm = Communicator::init(nccl, nranks, id, rank, blocking)?;
        comm.timeout = deadline;
        if let Err(error) = comm.wait(deadline) {
            let _ = comm.abort(deadline);
            return Err(error);
        }
        Ok(comm)
    }

    /// The mode it was made in.
    pub fn blocking(&self) -> Blocking {
        self.blocking
    }
    /// The deadline of each operation's completion and of each step of `Drop`'s teardown
    /// (60 s at first).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
    /// Change it.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }
    /// The state.
    pub fn state(&self) -> CommState {
        // SAFETY: accessor.
        CommState::from_raw(unsafe { ffi::ncclshim_comm_state_of(self.raw) })
    }
    /// Its rank.
    #[inline]
    pub fn rank(&self) -> i32 {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_comm_rank(self.raw) }
    }
    /// The number of ranks.
    #[inline]
    pub fn size(&self) -> i32 {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_comm_size(self.raw) }
    }
    /// The NCCL it was made with.
    pub fn nccl(&self) -> &Nccl {
        &self.nccl
    }
    /// The wrapper, for [`crate::ffi`].
    pub fn raw(&self) -> *mut ffi::ncclshim_comm {
        self.raw
    }
    /// NCCL's `ncclComm_t` while READY, NULL otherwise (which NCCL refuses cleanly).
    #[inline]
    pub fn nccl_comm(&self) -> ffi::ncclComm_t {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_comm_raw(self.raw) }
    }

    /// Finish what is in flight (a non-blocking init, operations), at most `timeout`: Ok
    /// (INITIALIZING becomes READY), NCCL_ERROR (an asynchronous error: FAILED, abort it),
    /// TIMEOUT (nothing changes: wait again or abort).
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        // SAFETY: ours.
        check(unsafe { ffi::ncclshim_comm_wait(self.raw, millis(timeout)) })
    }

    /// Check the result of an NCCL call made on this communicator and finish it within
    /// [`Communicator::timeout`].
    pub fn check(&self, result: ffi::ncclResult_t, call: &str) -> Result<()> {
        self.check_named(result, &CString::new(call).unwrap_or_default())
    }

    /// [`Communicator::check`] with the name already a C string (no allocation per call).
    pub(crate) fn check_named(&self, result: ffi::ncclResult_t, call: &CStr) -> Result<()> {
        // SAFETY: ours; the wrapper's calls are not made concurrently (NCCL's rule, documented).
        check(unsafe {
            ffi::ncclshim_comm_check(self.raw, result, call.as_ptr(), millis(self.timeout))
        })
    }

    /// Wait until `stream`'s work has finished, watching the communicator meanwhile (a peer
    /// that died is an NCCL_ERROR here, not a hang), at most `timeout`.
    pub fn wait_stream(&self, cuda: &Cuda, stream: &Stream, timeout: Duration) -> Result<()> {
        // SAFETY: ours; the stream's context must be current (documented by the C API).
        check(unsafe {
            ffi::ncclshim_comm_wait_stream(self.raw, cuda.raw(), stream.as_raw(), millis(timeout))
        })
    }

    /// Finalize and destroy, collectively (every rank calls it): Ok (DESTROYED), TIMEOUT
    /// (FINALIZING: destroy again or abort), NCCL_ERROR (FAILED: abort). [`Blocking::No`]:
    /// at most `timeout`. [`Blocking::Yes`], and [`Blocking::Split`]'s child: NCCL's finalize
    /// blocks until every rank has joined, which `timeout` cannot bound (a dead peer hangs
    /// it); bound the teardown with [`Communicator::abort`] instead, as `Drop` does.
    pub fn destroy(&mut self, timeout: Duration) -> Result<()> {
        // SAFETY: ours.
        check(unsafe { ffi::ncclshim_comm_destroy(self.raw, millis(timeout)) })
    }

    /// `ncclCommAbort` on a thread of its own, waited for at most `timeout` (local: no other
    /// rank takes part). TIMEOUT when NCCL's abort itself hangs (its thread is left running).
    pub fn abort(&mut self, timeout: Duration) -> Result<()> {
        // SAFETY: ours.
        check(unsafe { ffi::ncclshim_comm_abort(self.raw, millis(timeout)) })
    }

    /// NCCL's communicator for an operation on `dtype`: INVALID_ARGUMENT unless READY,
    /// UNAVAILABLE for fp8 data on an NCCL without it.
    #[inline(never)]
    pub(crate) fn ready(&self, dtype: DataType) -> Result<ffi::ncclComm_t> {
        if dtype.is_fp8() {
            self.nccl.require(Capability::Fp8, "fp8 data")?;
        }
        let comm = self.nccl_comm();
        if comm.is_null() {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("the communicator is {:?}, not ready", self.state()),
            ));
        }
        Ok(comm)
    }

    /// [`Communicator::ready`]'s answer where it needs no more than the state: NCCL's
    /// communicator for data other than fp8 while READY; None sends the caller to `ready`.
    #[inline(always)]
    fn ready_at_once(&self, dtype: DataType) -> Option<ffi::ncclComm_t> {
        if dtype.is_fp8() {
            return None;
        }
        let comm = self.nccl_comm();
        (!comm.is_null()).then_some(comm)
    }

    /// [`Communicator::check_named`] of a collective's result other than ncclSuccess, out of
    /// the collective's line: `call` is its name, with the NUL.
    #[cold]
    #[inline(never)]
    fn check_refused(&self, result: ffi::ncclResult_t, call: &'static str) -> Result<()> {
        self.check_named(
            result,
            CStr::from_bytes_with_nul(call.as_bytes()).expect("an NCCL name holds no NUL"),
        )
    }

    for_each_collective!(communicator_collectives);
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: static name.
        let state =
            text(unsafe { ffi::ncclshim_comm_state_name(ffi::ncclshim_comm_state_of(self.raw)) });
        write!(
            f,
            "Communicator(rank {} of {}, {state})",
            self.rank(),
            self.size()
        )
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        let timeout = self.timeout;
        let torn_down = match self.state() {
            CommState::Destroyed | CommState::Aborted => true,
            CommState::Failed | CommState::Aborting => false,
            // A blocking finalize has no bound: abort instead.
            _ if self.blocking != Blocking::No => false,
            _ => self.destroy(timeout).is_ok(),
        };
        if !torn_down {
            let _ = self.abort(timeout);
        }
        for buffer in self.dropped_buffers.take() {
            // SAFETY: ours; the communicator is aborted or destroyed, so only the memory is
            // freed (no NCCL wait). Where the abort is still running the buffer is refused
            // and stays allocated: NCCL may still use it.
            let _ = unsafe { ffi::ncclshim_symmem_free(buffer, 0) };
        }
        // SAFETY: ours, not used again; a running abort keeps what it needs.
        unsafe { ffi::ncclshim_comm_free(self.raw) }
    }
}
