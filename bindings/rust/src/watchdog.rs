//! Hang detection without per-call waits: a watchdog thread over blocking communicators
//! (`ncclshim/watchdog.h`).
//!
//! ```no_run
//! use std::time::Duration;
//! use ncclshim::{Blocking, Communicator, Nccl, RedOp, Stream, UniqueId, Watchdog};
//! # fn run(nccl: &Nccl, id: &UniqueId, stream: &Stream, buf: &mut ncclshim::DeviceBuffer<f32>) -> ncclshim::Result<()> {
//! let dog = Watchdog::start(Duration::from_millis(10), None)?;
//! let comm = Communicator::init(nccl, 2, id, 0, Blocking::Split)?;
//! comm.wait(Duration::from_secs(60))?; // bounded init, then the split
//! let comm = dog.watch(comm, Duration::from_secs(60)).map_err(|(e, _)| e)?;
//! comm.all_reduce_in_place(buf, RedOp::Sum, stream)?;
//! # Ok(()) }
//! ```

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::time::Duration;

use crate::error::{check, Error, Result, Status};
use crate::{ffi, millis, text, Communicator, Cuda, DataType, RedOp, Stream};

/// What the watchdog found: the status a checked call now returns (TIMEOUT for an operation
/// past its deadline, NCCL_ERROR for an error NCCL reported, CUDA_ERROR for a failing event)
/// and the message naming the operation. A panic in it stays on the watchdog's thread (it
/// never reaches C): its payload is dropped there, and leaked if that drop panics too.
pub type OnFailure = Box<dyn Fn(Status, &str) + Send + Sync + 'static>;

/// The watchdog's thread (`ncclshim_watchdog`). One per process is enough: it watches any
/// number of communicators. Dropping it stops and joins the thread (within about one
/// interval: it never blocks in NCCL). A [`Watched`] borrows it, so none is used after it,
/// but the borrow does not order the drops: a `Watched` declared before its watchdog is
/// dropped after it, which is safe, since the stop unwatches every communicator still
/// watched (the communicator is then torn down as an unwatched one). Dropped on its own thread (from its `on_failure` callback, which
/// may own it, e.g. through an `Arc<Mutex<Option<Watchdog>>>`), it cannot join itself: the
/// stop is handed to a short-lived thread, which stops it once the callback has returned
/// and only then drops the callback.
pub struct Watchdog {
    raw: *mut ffi::ncclshim_watchdog,
    callback: Option<Box<OnFailure>>,
    _cuda: Option<Cuda>,
}

// SAFETY: the C watchdog is used from any thread; its own lock guards it. The callback is
// Send + Sync.
unsafe impl Send for Watchdog {}
unsafe impl Sync for Watchdog {}

thread_local! {
    /// Set while a watchdog's callback runs on this thread (the watchdog's own).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" fn trampoline(
    _comm: *mut ffi::ncclshim_comm,
    status: ffi::ncclshim_status,
    message: *const c_char,
    user: *mut c_void,
) {
    // SAFETY: `user` is the Box<OnFailure> the Watchdog owns, alive until the thread is
    // joined (also when the callback drops the Watchdog: see Drop).
    let callback = unsafe { &*(user as *const OnFailure) };
    let message = text(message);
    let outer = IN_CALLBACK.with(|flag| flag.replace(true));
    // A panic must not unwind into C, nor its payload's drop: a payload whose Drop panics
    // is dropped under a second catch, and that one's payload is leaked.
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        callback(Status::from_code(status), &message)
    })) {
        if let Err(again) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload)))
        {
            std::mem::forget(again);
        }
    }
    IN_CALLBACK.with(|flag| flag.set(outer));
}

/// What a Watchdog dropped on its own thread leaves to the thread that stops it. Dropped
/// without running (the thread could not start), it leaks rather than free a running
/// callback.
struct DeferredStop {
    raw: *mut ffi::ncclshim_watchdog,
    callback: ManuallyDrop<Option<Box<OnFailure>>>,
    cuda: ManuallyDrop<Option<Cuda>>,
}

// SAFETY: the watchdog is stopped from any thread but its own; the callback is Send + Sync.
unsafe impl Send for DeferredStop {}

impl DeferredStop {
    fn run(mut self) {
        // SAFETY: ours; called off the watchdog's thread, so the stop waits for the callback
        // to return, then joins.
        unsafe { ffi::ncclshim_watchdog_stop(self.raw) };
        // SAFETY: each taken once, after the thread that used them is gone.
        unsafe {
            ManuallyDrop::drop(&mut self.callback);
            ManuallyDrop::drop(&mut self.cuda);
        }
    }
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
    // The communicator comes back whole on failure, as the caller gave it.
    #[allow(clippy::result_large_err)]
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
        if IN_CALLBACK.with(Cell::get) {
            // On the watchdog's own thread, inside the callback: a thread of its own stops
            // it (and drops the callback) once the callback has returned. If that thread
            // cannot start, the watchdog is leaked, never freed under its running callback.
            let deferred = DeferredStop {
                raw: self.raw,
                callback: ManuallyDrop::new(self.callback.take()),
                cuda: ManuallyDrop::new(self._cuda.take()),
            };
            let _ = std::thread::Builder::new()
                .name("ncclshim-watchdog-stop".into())
                .spawn(move || deferred.run());
            return;
        }
        // SAFETY: ours; no Watched borrows it any more; not the watchdog's thread (above), so
        // the stop cannot be refused.
        let _ = unsafe { ffi::ncclshim_watchdog_stop(self.raw) };
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

/// What the watchdog counted on one communicator ([`Watched::counts`]): the members of C's
/// `ncclshim_watch_counts` after its `size` ([`ffi::ncclshim_watch_counts`] holds it).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WatchCounts {
    /// Operations and replays recorded outside a capture.
    pub recorded: u64,
    /// Operations and replays seen on a capturing stream: no event, no clock.
    pub captured: u64,
    /// [`Watched::record_graph`] calls outside a capture.
    pub replays: u64,
    /// Events recorded (operations share one while their stream's newest is pending).
    pub events: u64,
    /// Events the watchdog recorded itself after the last operations of a burst.
    pub catch_ups: u64,
    /// Operations not yet known to be complete.
    pub outstanding: u64,
}

/// The methods of the rows of [`for_each_collective!`] on a watched communicator: the
/// watchdog's failure, if any, at once; then the [`Communicator`]'s call; then the record
/// that starts the operation's clock, named by the NCCL call, its count and its type.
macro_rules! watched_collectives {
    ($($(#[$doc:meta])* fn $name:ident($($param:ident: $type:ty),* $(,)?)
        [$count:ident, $dtype:ident] => $call:ident($($arg:expr),* $(,)?);)*) => {
        $(
            #[doc = concat!("[`Communicator::", stringify!($name), "`], checked, then recorded.")]
            ///
            /// # Safety
            #[doc = concat!("As [`Communicator::", stringify!($name), "`].")]
            pub unsafe fn $name(&self, $($param: $type,)* stream: &Stream) -> Result<()> {
                let call = CStr::from_bytes_with_nul(concat!(stringify!($call), "\0").as_bytes())
                    .expect("an NCCL name holds no NUL");
                self.comm.check_named(0, call)?;
                // SAFETY: the caller's promise.
                unsafe { self.comm.$name($($param,)* stream)? };
                self.record(stream, call, $count, $dtype)
            }
        )*
    };
}

/// A communicator the watchdog watches. Its collectives are checked, then recorded (one
/// `cuEventRecord`); once the watchdog has failed it, every call returns that failure at
/// once. It derefs to the [`Communicator`] (waits, state); teardown is [`Watched::destroy`],
/// [`Watched::abort`], [`Watched::into_inner`] or dropping it, which tears the communicator
/// down as `Communicator`'s `Drop` does (which unwatches first).
///
/// The communicator cannot be taken out or swapped while watched: there is no `&mut` to it,
/// since a communicator moved to another `Watched` would outlive the watchdog that watches
/// it. These do not compile:
///
/// ```compile_fail
/// # use ncclshim::{Communicator, Watched};
/// // A fresh communicator in, the watched one out: the watch stays behind (double free).
/// fn take(w: &mut Watched<'_>, fresh: Communicator) -> Communicator {
///     std::mem::replace(w.communicator_mut(), fresh)
/// }
/// ```
///
/// ```compile_fail
/// # use ncclshim::Watched;
/// // Two watched communicators trade watchdogs: dropping one watchdog frees the watch the
/// // other `Watched` records on (use after free).
/// fn trade(a: &mut Watched<'_>, b: &mut Watched<'_>) {
///     std::mem::swap(a.communicator_mut(), b.communicator_mut());
/// }
/// ```
///
/// ```compile_fail
/// # use ncclshim::{Communicator, Watched};
/// // Any other way to a `&mut Communicator` is refused as well.
/// fn out(w: &mut Watched<'_>, fresh: Communicator) -> Communicator {
///     std::mem::replace(&mut **w, fresh)
/// }
/// ```
pub struct Watched<'w> {
    comm: Communicator,
    _dog: PhantomData<&'w Watchdog>,
}

impl Watched<'_> {
    /// Mark an operation just enqueued on `stream` (`ncclshim_comm_record`): `call` names it
    /// in the watchdog's message.
    ///
    /// `stream` is borrowed for the call only, and that is all ncclshim needs: the record
    /// enqueues an event of ncclshim's own on the stream during the call, and nothing after
    /// the call (no thread of ncclshim's) names the stream again. The stream may be destroyed
    /// as soon as this returns, while the operation is still watched:
    ///
    /// ```no_run
    /// # fn f(cuda: &ncclshim::Cuda, comm: &ncclshim::Watched<'_>, buf: &mut ncclshim::DeviceBuffer<f32>) -> ncclshim::Result<()> {
    /// let stream = cuda.create_stream()?;
    /// comm.all_reduce_in_place(buf, ncclshim::RedOp::Sum, &stream)?; // recorded
    /// cuda.sync_stream(&stream)?;
    /// drop(stream); // the watchdog never uses it again
    /// # Ok(()) }
    /// ```
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

    /// Mark a CUDA graph just launched on `stream` (`ncclshim_comm_record_graph`): one event
    /// per replay, with its deadline. `label` (cut at 63 bytes; the C side keeps a copy)
    /// and `ops`, the collectives the graph holds, name it in a failure. Call it after each
    /// launch of a graph whose capture recorded operations of this communicator: those
    /// records started no clock (a capture runs nothing).
    pub fn record_graph(&self, stream: &Stream, label: &str, ops: u32) -> Result<()> {
        let label = CString::new(label.replace('\0', " ")).expect("no NUL is left");
        let ops = c_int::try_from(ops).map_err(|_| {
            Error::new(
                Status::InvalidArgument,
                format!("record_graph: {ops} collectives in one graph is more than C's int holds"),
            )
        })?;
        // SAFETY: ours; the label is copied before the call returns.
        check(unsafe {
            ffi::ncclshim_comm_record_graph(self.comm.raw(), stream.as_raw(), label.as_ptr(), ops)
        })
    }

    /// What the watchdog counted on this communicator (`ncclshim_comm_watch_counts`).
    pub fn counts(&self) -> Result<WatchCounts> {
        let mut c = ffi::ncclshim_watch_counts {
            size: std::mem::size_of::<ffi::ncclshim_watch_counts>(),
            ..Default::default()
        };
        // SAFETY: ours; `c` is written up to the size it names.
        check(unsafe { ffi::ncclshim_comm_watch_counts(self.comm.raw(), &mut c) })?;
        Ok(c.counts)
    }

    /// The watchdog's message when it has failed the communicator.
    pub fn failure(&self) -> Option<String> {
        // SAFETY: ours.
        let message = text(unsafe { ffi::ncclshim_comm_failure(self.comm.raw()) });
        (!message.is_empty()).then_some(message)
    }

    for_each_collective!(watched_collectives);
    typed_collectives!();
    config_collectives!();

    /// A `...Config` call on the watched communicator: the watchdog's failure at once, the
    /// communicator's call, then the record, as for the plain collectives.
    fn enqueue_config(
        &self,
        call: &'static str,
        count: usize,
        dtype: DataType,
        stream: &Stream,
        make: impl FnOnce(&ffi::ncclshim_nccl_table, ffi::ncclComm_t) -> ffi::ncclResult_t,
    ) -> Result<()> {
        let name: &'static CStr = match call {
            "ncclAllReduceConfig" => c_name(b"ncclAllReduceConfig\0"),
            "ncclBroadcastConfig" => c_name(b"ncclBroadcastConfig\0"),
            "ncclAllGatherConfig" => c_name(b"ncclAllGatherConfig\0"),
            _ => c_name(b"ncclReduceScatterConfig\0"),
        };
        self.comm.check_named(0, name)?;
        self.comm.enqueue_config(call, count, dtype, stream, make)?;
        self.record(stream, name, count, dtype)
    }

    /// Stop watching and give the communicator back.
    pub fn into_inner(self) -> Communicator {
        // SAFETY: ours.
        unsafe { ffi::ncclshim_comm_unwatch(self.comm.raw()) };
        self.comm
    }

    /// [`Communicator::destroy`]: it unwatches, then tears down.
    pub fn destroy(&mut self, timeout: Duration) -> Result<()> {
        self.comm.destroy(timeout)
    }

    /// [`Communicator::abort`]: it unwatches, then aborts.
    pub fn abort(&mut self, timeout: Duration) -> Result<()> {
        self.comm.abort(timeout)
    }

    /// [`Communicator::set_timeout`].
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.comm.set_timeout(timeout)
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

/// A static C name.
fn c_name(bytes: &'static [u8]) -> &'static CStr {
    CStr::from_bytes_with_nul(bytes).expect("one terminating NUL")
}
