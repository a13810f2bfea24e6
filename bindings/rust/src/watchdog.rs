//! Hang detection without per-call waits: a watchdog thread over blocking communicators
//! (`ncclshim/watchdog.h`).
//!
//! ```no_run
//! use std::time::Duration;
//! use ncclshim::{Blocking, Communicator, DataType, Nccl, RedOp, Stream, UniqueId, Watchdog};
//! # fn run(nccl: &Nccl, id: &UniqueId, stream: &Stream, buf: *mut std::ffi::c_void) -> ncclshim::Result<()> {
//! let dog = Watchdog::start(Duration::from_millis(10), None)?;
//! let comm = Communicator::init(nccl, 2, id, 0, Blocking::Split)?;
//! comm.wait(Duration::from_secs(60))?; // bounded init, then the split
//! let comm = dog.watch(comm, Duration::from_secs(60)).map_err(|(e, _)| e)?;
//! // SAFETY: `buf` is a device buffer of 256 floats.
//! unsafe { comm.all_reduce(buf, buf, 256, DataType::Float32, RedOp::Sum, stream)? };
//! # Ok(()) }
//! ```

use std::ffi::{c_char, c_void, CStr};
use std::marker::PhantomData;
use std::ops::Deref;
use std::time::Duration;

use crate::error::{check, Error, Result, Status};
use crate::{ffi, millis, text, Communicator, Cuda, DataType, RedOp, Stream};

/// What the watchdog found: the status a checked call now returns (TIMEOUT for an operation
/// past its deadline, NCCL_ERROR for an error NCCL reported, CUDA_ERROR for a failing event)
/// and the message naming the operation.
pub type OnFailure = Box<dyn Fn(Status, &str) + Send + Sync + 'static>;

/// The watchdog's thread (`ncclshim_watchdog`). One per process is enough: it watches any
/// number of communicators. Dropping it stops and joins the thread (within about one
/// interval: it never blocks in NCCL); the borrow of [`Watched`] makes every watched
/// communicator go first.
pub struct Watchdog {
    raw: *mut ffi::ncclshim_watchdog,
    callback: Option<Box<OnFailure>>,
    _cuda: Option<Cuda>,
}

// SAFETY: the C watchdog is used from any thread; its own lock guards it. The callback is
// Send + Sync.
unsafe impl Send for Watchdog {}
unsafe impl Sync for Watchdog {}

unsafe extern "C" fn trampoline(
    _comm: *mut ffi::ncclshim_comm,
    status: ffi::ncclshim_status,
    message: *const c_char,
    user: *mut c_void,
) {
    // SAFETY: `user` is the Box<OnFailure> the Watchdog owns, alive until the thread is joined.
    let callback = unsafe { &*(user as *const OnFailure) };
    let message = text(message);
    // A panic must not unwind into C.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        callback(Status::from_code(status), &message)
    }));
}

impl Watchdog {
    /// Start the thread, looking every `interval` (1 ms .. 60 s), with the default CUDA
    /// driver, calling `on_failure` (on the watchdog's thread) for each communicator it fails.
    pub fn start(interval: Duration, on_failure: Option<OnFailure>) -> Result<Watchdog> {
        Watchdog::start_with(interval, None, on_failure)
    }

    /// As [`Watchdog::start`], with the CUDA driver `cuda` for the events (kept alive as
    /// long as the watchdog).
    pub fn start_with(
        interval: Duration,
        cuda: Option<&Cuda>,
        on_failure: Option<OnFailure>,
    ) -> Result<Watchdog> {
        let callback = on_failure.map(Box::new);
        let options = ffi::ncclshim_watchdog_options {
            size: std::mem::size_of::<ffi::ncclshim_watchdog_options>(),
            interval_ms: millis(interval),
            cuda: cuda.map_or(std::ptr::null(), |c| c.raw()),
            on_failure: callback
                .as_ref()
                .map(|_| trampoline as ffi::ncclshim_watchdog_callback),
            user: callback.as_ref().map_or(std::ptr::null_mut(), |b| {
                &**b as *const OnFailure as *mut c_void
            }),
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid pointers; the callback box outlives the thread (joined in Drop).
        check(unsafe { ffi::ncclshim_watchdog_start(&options, &mut raw) })?;
        Ok(Watchdog {
            raw,
            callback,
            _cuda: cuda.cloned(),
        })
    }

    /// Watch `comm` (READY; [`Blocking::Split`](crate::Blocking::Split) is the mode meant for
    /// it) with `timeout` as each operation's deadline. Its events are created in this
    /// thread's current CUDA context. On failure the communicator comes back with the error.
    pub fn watch(
        &self,
        comm: Communicator,
        timeout: Duration,
    ) -> std::result::Result<Watched<'_>, (Error, Communicator)> {
        // SAFETY: both ours.
        match check(unsafe { ffi::ncclshim_comm_watch(comm.raw(), self.raw, millis(timeout)) }) {
            Ok(()) => Ok(Watched {
                comm,
                _dog: PhantomData,
            }),
            Err(e) => Err((e, comm)),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // SAFETY: ours; no Watched borrows it any more.
        unsafe { ffi::ncclshim_watchdog_stop(self.raw) };
        drop(self.callback.take()); // after the thread is joined
    }
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("callback", &self.callback.is_some())
            .finish()
    }
}

/// A communicator the watchdog watches. Its collectives are checked, then recorded (one
/// `cuEventRecord`); once the watchdog has failed it, every call returns that failure at
/// once. It derefs to the [`Communicator`] (waits, state, teardown); dropping it tears the
/// communicator down as `Communicator`'s `Drop` does (which unwatches first).
pub struct Watched<'w> {
    comm: Communicator,
    _dog: PhantomData<&'w Watchdog>,
}

impl Watched<'_> {
    /// Mark an operation just enqueued on `stream` (`ncclshim_comm_record`): `call` names it
    /// in the watchdog's message.
    pub fn record(
        &self,
        stream: &Stream,
        call: &'static CStr,
        count: usize,
        dtype: DataType,
    ) -> Result<()> {
        // SAFETY: ours; `call` lives for ever, as the C side keeps the pointer.
        check(unsafe {
            ffi::ncclshim_comm_record(
                self.comm.raw(),
                stream.as_raw(),
                call.as_ptr(),
                count,
                dtype.raw(),
            )
        })
    }

    /// The watchdog's message when it has failed the communicator.
    pub fn failure(&self) -> Option<String> {
        // SAFETY: ours.
        let message = text(unsafe { ffi::ncclshim_comm_failure(self.comm.raw()) });
        (!message.is_empty()).then_some(message)
    }

    /// `ncclAllReduce`, checked, then recorded.
    ///
    /// # Safety
    /// As [`Communicator::all_reduce`].
    pub unsafe fn all_reduce(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: RedOp,
        stream: &Stream,
    ) -> Result<()> {
        // The watchdog's failure, if any, at once.
        self.comm.check(0, "ncclAllReduce")?;
        // SAFETY: the caller's promise.
        unsafe { self.comm.all_reduce(send, recv, count, dtype, op, stream)? };
        self.record(stream, c"ncclAllReduce", count, dtype)
    }

    /// Stop watching and give the communicator back.
    pub fn into_inner(self) -> Communicator {
        // SAFETY: ours.
        unsafe { ffi::ncclshim_comm_unwatch(self.comm.raw()) };
        self.comm
    }

    /// The communicator, mutably (destroy, abort).
    pub fn communicator_mut(&mut self) -> &mut Communicator {
        &mut self.comm
    }
}

impl Deref for Watched<'_> {
    type Target = Communicator;
    fn deref(&self) -> &Communicator {
        &self.comm
    }
}

impl std::fmt::Debug for Watched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("comm", &self.comm)
            .field("failure", &self.failure())
            .finish()
    }
}
