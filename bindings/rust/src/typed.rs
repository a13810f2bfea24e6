//! The safe collectives, on typed device memory ([`crate::DeviceMemory`]), and the buffer
//! registrations that end on drop.
//!
//! Every safe collective checks, before NCCL is called, that its buffers agree: the element
//! type by the types themselves (at compile time), the lengths against each other and the
//! communicator's size, the root or peer against the ranks. A refusal is INVALID_ARGUMENT
//! naming the collective and the numbers; NCCL is not called.
//!
//! Failure semantics, the same for every collective (the raw ones too):
//! - The call returns once NCCL has queued the work on the stream; the buffers must stay
//!   allocated until that work completes (sync the stream or wait on an event before dropping
//!   or reusing them). Their borrows end with the call.
//! - INVALID_ARGUMENT: refused here (lengths, ranks) or the communicator is not READY;
//!   UNAVAILABLE: fp8 data on an NCCL without fp8. NCCL is not called.
//! - NCCL_ERROR: NCCL refused the call, with NCCL's code, its text and its last error
//!   ([`crate::Error::nccl_result`], ...). On a [`crate::Blocking::No`] communicator NCCL may
//!   also fail the communicator itself for a bad argument (it then reports the error
//!   asynchronously): the communicator is FAILED, every later call returns NCCL_ERROR, and
//!   only an abort (or `Drop`) releases it.
//! - TIMEOUT: on a [`crate::Blocking::No`] communicator, NCCL did not finish queueing the work
//!   within [`crate::Communicator::timeout`]; the communicator is left as it is (wait again or
//!   abort).
//! - On a [`crate::Watched`] communicator, the watchdog's failure comes back at once
//!   (TIMEOUT, NCCL_ERROR or CUDA_ERROR with its message), and a collective that NCCL accepted
//!   is then recorded (one event); a failing record is that call's error.

use std::ffi::c_void;
use std::time::Duration;

use crate::error::{Error, Result, Status};
use crate::{ffi, Blocking, Capability, Communicator, DeviceMemory, DeviceMemoryMut, DevicePtr};

/// NCCL's `NCCL_WIN_COLL_SYMMETRIC` flag for [`Communicator::register_window`]: a window for
/// NCCL's symmetric kernels. NCCL 2.28 registers `ncclMemAlloc` memory with it, and can answer
/// success with no window (UNAVAILABLE here) to the same memory registered without it.
pub const WINDOW_COLL_SYMMETRIC: i32 = 0x01;

/// INVALID_ARGUMENT for `call`.
fn refuse(call: &str, why: String) -> Error {
    Error::new(Status::InvalidArgument, format!("{call}: {why}"))
}

/// What a collective passes NCCL once its buffers are checked: the send and receive
/// addresses and the count NCCL takes.
pub(crate) struct Plan {
    pub send: *const c_void,
    pub recv: *mut c_void,
    pub count: usize,
}

/// The checks of the safe collectives (plain and `_with`), of [`Communicator`] and
/// [`crate::Watched`] alike: each names the NCCL call it guards.
impl Plan {
    /// `send` into `recv`, as many elements (all-reduce, broadcast).
    #[inline]
    pub(crate) fn same<T: crate::Element>(
        call: &str,
        send: &impl DeviceMemory<Elem = T>,
        recv: &mut impl DeviceMemoryMut<Elem = T>,
    ) -> Result<Plan> {
        let (s, r) = (send.len(), recv.len());
        if s != r {
            return Err(unequal(call, s, r));
        }
        Ok(Plan::of(send, recv, s))
    }
    /// `buffer` into itself.
    #[inline]
    pub(crate) fn in_place(buffer: &mut impl DeviceMemoryMut) -> Plan {
        let p = buffer.device_ptr() as usize as *mut c_void;
        Plan {
            send: p,
            recv: p,
            count: buffer.len(),
        }
    }
    /// Every rank's `send` into `recv`, which holds send × ranks (all-gather).
    #[inline]
    pub(crate) fn gather<T: crate::Element>(
        comm: &Communicator,
        call: &str,
        send: &impl DeviceMemory<Elem = T>,
        recv: &mut impl DeviceMemoryMut<Elem = T>,
    ) -> Result<Plan> {
        ranks_times(comm, call, ("recv", recv.len()), ("send", send.len()))?;
        Ok(Plan::of(send, recv, send.len()))
    }
    /// `send` (recv × ranks) reduced, a block into `recv` (reduce-scatter).
    #[inline]
    pub(crate) fn scatter<T: crate::Element>(
        comm: &Communicator,
        call: &str,
        send: &impl DeviceMemory<Elem = T>,
        recv: &mut impl DeviceMemoryMut<Elem = T>,
    ) -> Result<Plan> {
        ranks_times(comm, call, ("send", send.len()), ("recv", recv.len()))?;
        Ok(Plan::of(send, recv, recv.len()))
    }
    #[inline]
    fn of(send: &impl DeviceMemory, recv: &mut impl DeviceMemoryMut, count: usize) -> Plan {
        Plan {
            send: send.device_ptr() as usize as *const c_void,
            recv: recv.device_ptr() as usize as *mut c_void,
            count,
        }
    }
}

/// [`Plan::same`]'s refusal, out of the collectives' line.
#[cold]
#[inline(never)]
fn unequal(call: &str, send: usize, recv: usize) -> Error {
    refuse(
        call,
        format!("send holds {send} elements and recv {recv}: they must hold as many"),
    )
}

/// `big` must be `small` × the number of ranks.
#[inline]
fn ranks_times(
    comm: &Communicator,
    call: &str,
    big: (&str, usize),
    small: (&str, usize),
) -> Result<()> {
    let ranks = comm.size().max(0) as usize;
    match small.1.checked_mul(ranks) {
        Some(want) if want == big.1 => Ok(()),
        _ => Err(not_ranks_times(call, big, small, ranks)),
    }
}

/// [`ranks_times`]'s refusal, out of the collectives' line.
#[cold]
#[inline(never)]
fn not_ranks_times(
    call: &str,
    (big_name, big): (&str, usize),
    (small_name, small): (&str, usize),
    ranks: usize,
) -> Error {
    refuse(
        call,
        format!(
            "{big_name} holds {big} elements; {small_name} holds {small} and the \
             communicator has {ranks} ranks, so {big_name} must hold {small} x {ranks}"
        ),
    )
}

/// `rank` must be one of the communicator's.
#[inline]
pub(crate) fn a_rank(comm: &Communicator, call: &str, what: &str, rank: i32) -> Result<()> {
    let ranks = comm.size();
    if (0..ranks).contains(&rank) {
        return Ok(());
    }
    Err(not_a_rank(call, what, rank, ranks))
}

/// [`a_rank`]'s refusal, out of the collectives' line.
#[cold]
#[inline(never)]
fn not_a_rank(call: &str, what: &str, rank: i32, ranks: i32) -> Error {
    refuse(
        call,
        format!("{what} {rank} is not a rank of this communicator (0..{ranks})"),
    )
}

/// The safe collectives, for `impl Communicator` and `impl Watched`: each checks its buffers
/// (see the module's documentation), then calls the type's own raw collective.
// SAFETY of every raw call below: the plan's buffers hold the counts NCCL is given (checked),
// are borrowed for the call and stay allocated until dropped, which the caller does after the
// work completes (documented).
macro_rules! typed_collectives {
    () => {
        /// `ncclAllReduce` of `send` into `recv` (as many elements); the failure semantics
        /// are the crate's (README.md, "Failure semantics").
        #[inline]
        pub fn all_reduce<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::same("ncclAllReduce", send, recv)?;
            // SAFETY: see the macro.
            unsafe { self.all_reduce_raw(p.send, p.recv, p.count, T::DATA_TYPE, op, stream) }
        }
        /// `ncclAllReduce` in place: `buffer` reduced across the ranks.
        #[inline]
        pub fn all_reduce_in_place<T: $crate::Element>(
            &self,
            buffer: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::in_place(buffer);
            // SAFETY: see the macro.
            unsafe { self.all_reduce_raw(p.send, p.recv, p.count, T::DATA_TYPE, op, stream) }
        }
        /// `ncclBroadcast` of `root`'s `send` into every rank's `recv` (as many elements;
        /// `send` is read on the root only). `root` must be a rank.
        #[inline]
        pub fn broadcast<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            root: i32,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            $crate::typed::a_rank(self, "ncclBroadcast", "root", root)?;
            let p = $crate::typed::Plan::same("ncclBroadcast", send, recv)?;
            // SAFETY: see the macro.
            unsafe { self.broadcast_raw(p.send, p.recv, p.count, T::DATA_TYPE, root, stream) }
        }
        /// `ncclBroadcast` in place: `root`'s `buffer` into every rank's.
        #[inline]
        pub fn broadcast_in_place<T: $crate::Element>(
            &self,
            buffer: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            root: i32,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            $crate::typed::a_rank(self, "ncclBroadcast", "root", root)?;
            let p = $crate::typed::Plan::in_place(buffer);
            // SAFETY: see the macro.
            unsafe { self.broadcast_raw(p.send, p.recv, p.count, T::DATA_TYPE, root, stream) }
        }
        /// `ncclAllGather`: every rank's `send` into `recv`, in rank order; `recv` holds
        /// `send.len()` × the number of ranks.
        #[inline]
        pub fn all_gather<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::gather(self, "ncclAllGather", send, recv)?;
            // SAFETY: see the macro.
            unsafe { self.all_gather_raw(p.send, p.recv, p.count, T::DATA_TYPE, stream) }
        }
        /// `ncclReduceScatter`: `send` (`recv.len()` × the number of ranks) reduced, this
        /// rank's block into `recv`.
        #[inline]
        pub fn reduce_scatter<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::scatter(self, "ncclReduceScatter", send, recv)?;
            // SAFETY: see the macro.
            unsafe { self.reduce_scatter_raw(p.send, p.recv, p.count, T::DATA_TYPE, op, stream) }
        }
        /// `ncclSend` of `buffer` to `peer` (pair it with the peer's [`recv`](Self::recv),
        /// in a group when ranks exchange both ways). `peer` must be a rank.
        #[inline]
        pub fn send<T: $crate::Element>(
            &self,
            buffer: &impl $crate::DeviceMemory<Elem = T>,
            peer: i32,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            $crate::typed::a_rank(self, "ncclSend", "peer", peer)?;
            let p = buffer.device_ptr() as usize as *const std::ffi::c_void;
            // SAFETY: see the macro.
            unsafe { self.send_raw(p, buffer.len(), T::DATA_TYPE, peer, stream) }
        }
        /// `ncclRecv` into `buffer` from `peer`. `peer` must be a rank.
        #[inline]
        pub fn recv<T: $crate::Element>(
            &self,
            buffer: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            peer: i32,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            $crate::typed::a_rank(self, "ncclRecv", "peer", peer)?;
            let p = $crate::typed::Plan::in_place(buffer);
            // SAFETY: see the macro.
            unsafe { self.recv_raw(p.recv, p.count, T::DATA_TYPE, peer, stream) }
        }
    };
}

impl Communicator {
    typed_collectives!();

    /// Register `buffer` with NCCL (`ncclCommRegister`, the user-buffer-register capability,
    /// 2.19+; UNAVAILABLE before) for faster collectives on it. The guard holds the buffer's
    /// mutable borrow, and takes part in collectives in its place; dropping it deregisters
    /// (`ncclCommDeregister`, local: no other rank takes part, no wait). NCCL_ERROR with NCCL's
    /// code and text when NCCL refuses.
    pub fn register<'a, M: DeviceMemoryMut>(
        &'a self,
        buffer: &'a mut M,
    ) -> Result<Registered<'a, M>> {
        self.nccl()
            .require(Capability::UserBufferRegister, "ncclCommRegister")?;
        let comm = self.live("ncclCommRegister")?;
        let mut handle = std::ptr::null_mut();
        let ptr = buffer.device_ptr() as usize as *mut c_void;
        // SAFETY: a live communicator, the buffer's own address and size, an out-pointer.
        let result = unsafe {
            (self.nccl().table().ncclCommRegister)(comm, ptr, buffer.bytes(), &mut handle)
        };
        self.check(result, "ncclCommRegister")?;
        Ok(Registered {
            buffer,
            comm: self,
            handle,
            kind: Kind::Buffer,
        })
    }

    /// Register `buffer` as a window (`ncclCommWindowRegister` with `flags`, NCCL's
    /// `NCCL_WIN_*`; the window-register capability, 2.27+; UNAVAILABLE before). Collective:
    /// every rank registers its buffer of the same size. Only on a [`Blocking::No`]
    /// communicator (INVALID_ARGUMENT otherwise), whose wait the deregistration on drop can
    /// bound (at most [`Communicator::timeout`], which also bounds the wait for the
    /// registration to complete before the window is read); on a blocking one, use
    /// [`crate::SymmetricBuffer`]. UNAVAILABLE when the registration completed but NCCL gave
    /// no window (NCCL 2.29+ where windows do not register on this system).
    pub fn register_window<'a, M: DeviceMemoryMut>(
        &'a self,
        buffer: &'a mut M,
        flags: i32,
    ) -> Result<Registered<'a, M>> {
        self.nccl()
            .require(Capability::WindowRegister, "ncclCommWindowRegister")?;
        if self.blocking() != Blocking::No {
            return Err(refuse(
                "ncclCommWindowRegister",
                format!(
                    "the communicator is {:?}: its window deregistration would wait without a \
                     bound; register windows on a Blocking::No communicator",
                    self.blocking()
                ),
            ));
        }
        let comm = self.live("ncclCommWindowRegister")?;
        // On a non-blocking communicator NCCL finishes the registration in the background and
        // writes the window then: into a slot of its own on the heap, read after the wait.
        let mut slot: Box<ffi::ncclshim_window_t> = Box::new(std::ptr::null_mut());
        let ptr = buffer.device_ptr() as usize as *mut c_void;
        // SAFETY: a live communicator, the buffer's own address and size, an out-pointer
        // that outlives the registration (leaked below if the wait gives up).
        let result = unsafe {
            (self.nccl().table().ncclCommWindowRegister)(
                comm,
                ptr,
                buffer.bytes(),
                &mut *slot,
                flags,
            )
        };
        self.check(result, "ncclCommWindowRegister")?;
        if let Err(error) = self.wait(self.timeout()) {
            std::mem::forget(slot); // NCCL may still write the window into it
            return Err(error);
        }
        let window = *slot;
        if window.is_null() {
            return Err(Error::answered(
                Status::Unavailable,
                format!(
                    "ncclCommWindowRegister returned {} but no window: windows do not \
                     register on this communicator",
                    if result == ffi::ncclSuccess {
                        "ncclSuccess"
                    } else {
                        "ncclInProgress"
                    }
                ),
                result,
            ));
        }
        Ok(Registered {
            buffer,
            comm: self,
            handle: window.cast(),
            kind: Kind::Window,
        })
    }

    /// NCCL's communicator, or INVALID_ARGUMENT naming `call` when it is not READY.
    fn live(&self, call: &str) -> Result<ffi::ncclComm_t> {
        let comm = self.nccl_comm();
        if comm.is_null() {
            return Err(refuse(
                call,
                format!("the communicator is {:?}, not ready", self.state()),
            ));
        }
        Ok(comm)
    }
}

enum Kind {
    Buffer,
    Window,
}

/// A buffer registered with a communicator ([`Communicator::register`],
/// [`Communicator::register_window`]): it holds the buffer's mutable borrow and stands in for
/// it in collectives; dropping it deregisters. It cannot outlive the buffer or the
/// communicator:
///
/// ```compile_fail,E0505
/// # fn f(cuda: &ncclshim::Cuda, comm: &ncclshim::Communicator) -> ncclshim::Result<()> {
/// let mut buffer = cuda.alloc::<f32>(1024)?;
/// let registered = comm.register(&mut buffer)?;
/// drop(buffer); // still registered
/// drop(registered);
/// # Ok(()) }
/// ```
pub struct Registered<'a, M: DeviceMemoryMut> {
    buffer: &'a mut M,
    comm: &'a Communicator,
    handle: *mut c_void,
    kind: Kind,
}

impl<M: DeviceMemoryMut> Registered<'_, M> {
    /// NCCL's handle (`ncclCommRegister`'s) or window (`ncclWindow_t`).
    pub fn handle(&self) -> *mut c_void {
        self.handle
    }
    /// Deregister now, with NCCL's answer (a window: collective, at most `timeout`).
    pub fn deregister(mut self, timeout: Duration) -> Result<()> {
        let result = self.release(timeout);
        std::mem::forget(self);
        result
    }

    fn release(&mut self, timeout: Duration) -> Result<()> {
        let comm = self.comm.live("ncclCommDeregister")?;
        let table = self.comm.nccl().table();
        // SAFETY: the handle NCCL gave for this communicator, deregistered once.
        let (result, call) = unsafe {
            match self.kind {
                Kind::Buffer => (
                    (table.ncclCommDeregister)(comm, self.handle),
                    "ncclCommDeregister",
                ),
                Kind::Window => (
                    (table.ncclCommWindowDeregister)(comm, self.handle.cast()),
                    "ncclCommWindowDeregister",
                ),
            }
        };
        self.comm.nccl().check_nccl(result, call)?;
        if result == ffi::ncclInProgress {
            self.comm.wait(timeout)?;
        }
        Ok(())
    }
}

impl<M: DeviceMemoryMut> Drop for Registered<'_, M> {
    fn drop(&mut self) {
        // Once the communicator is torn down or failed, NCCL has released the registration.
        let _ = self.release(self.comm.timeout());
    }
}

// SAFETY: the registered buffer's own memory, under its mutable borrow.
unsafe impl<M: DeviceMemoryMut> DeviceMemory for Registered<'_, M> {
    type Elem = M::Elem;
    fn device_ptr(&self) -> DevicePtr {
        self.buffer.device_ptr()
    }
    fn len(&self) -> usize {
        self.buffer.len()
    }
}
// SAFETY: as above.
unsafe impl<M: DeviceMemoryMut> DeviceMemoryMut for Registered<'_, M> {}
