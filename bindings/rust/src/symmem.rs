//! Symmetric memory (NCCL 2.28+): buffers registered as symmetric windows on a communicator.

use std::ffi::c_void;
use std::time::Duration;

use crate::buffer::{byte_size, sealed::Sealed, Owner};
use crate::error::{check, Result};
use crate::ffi;
use crate::{millis, Blocking, Communicator, DeviceBuffer, DevicePtr, Element, Stream};

/// A buffer from `ncclMemAlloc` registered as a symmetric window on a communicator
/// (`ncclshim_symmem`), so that NCCL can run its symmetric kernels on it: a [`DeviceBuffer`]
/// of `len` elements of `T` whose memory a [`Symmetric`] owns. Allocation and free are
/// collective: every rank makes the same calls with the same size. On an NCCL without
/// symmetric memory (before 2.28) allocation is refused with UNAVAILABLE and a message naming
/// the version needed and the one loaded; where windows do not register on this
/// communicator (NCCL 2.29+ gives success with no window), with UNAVAILABLE and that reason
/// ([`Communicator::has`] asks beforehand). It borrows its communicator, so it goes before
/// the communicator is torn down. `Drop` on a [`Blocking::No`](crate::Blocking::No)
/// communicator deregisters and frees it within the communicator's
/// [`Communicator::timeout`]; on a blocking one ([`Blocking::Yes`](crate::Blocking::Yes),
/// [`Blocking::Split`](crate::Blocking::Split)), whose deregistration is a blocking
/// collective call with no bound, it leaves the buffer to the communicator, which frees the
/// memory once it is torn down (its `Drop`). [`SymmetricBuffer::free`] gives it back at once.
///
/// The buffer cannot outlive its communicator:
///
/// ```compile_fail,E0505
/// # fn f(nccl: &ncclshim::Nccl, id: &ncclshim::UniqueId, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// use std::time::Duration;
/// let comm = ncclshim::Communicator::init_with_deadline(nccl, 1, id, 0, Duration::from_secs(9))?;
/// let buffer = ncclshim::SymmetricBuffer::<f32>::alloc(&comm, 1024, stream, Duration::from_secs(9))?;
/// drop(comm); // the buffer still borrows it
/// drop(buffer);
/// # Ok(()) }
/// ```
pub type SymmetricBuffer<'c, T> = DeviceBuffer<T, Symmetric<'c>>;

/// The owner of a [`SymmetricBuffer`]'s memory: the registered window and its communicator.
pub struct Symmetric<'c> {
    raw: *mut ffi::ncclshim_symmem,
    comm: &'c Communicator,
}

impl Sealed for Symmetric<'_> {}
impl Owner for Symmetric<'_> {
    fn address(&self) -> DevicePtr {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_ptr(self.raw) as usize as DevicePtr }
    }
}

impl<'c, T: Element> DeviceBuffer<T, Symmetric<'c>> {
    /// `len` elements of `T` (the bytes rounded up to 4096), registered on `comm`, waiting at
    /// most `timeout` for the registration; `stream` is the stream it will be used on (checked
    /// for CUDA graph capture).
    pub fn alloc(
        comm: &'c Communicator,
        len: usize,
        stream: &Stream,
        timeout: Duration,
    ) -> Result<SymmetricBuffer<'c, T>> {
        let bytes = byte_size::<T>(len, "symmetric buffer")?;
        comm.nccl().status()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a live communicator and a valid out-pointer.
        check(unsafe {
            ffi::ncclshim_symmem_alloc(
                comm.raw(),
                bytes,
                stream.as_raw(),
                millis(timeout),
                &mut raw,
            )
        })?;
        Ok(DeviceBuffer::from_owner(Symmetric { raw, comm }, len))
    }

    /// The device address (4096-aligned), for the raw collectives.
    pub fn as_ptr(&self) -> *mut c_void {
        self.owner.address() as usize as *mut c_void
    }
    /// The size registered: the bytes asked for rounded up to 4096.
    pub fn registered_bytes(&self) -> usize {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_size(self.owner.raw) }
    }
    /// NCCL's window (`ncclWindow_t`).
    pub fn window(&self) -> ffi::ncclshim_window_t {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_window(self.owner.raw) }
    }

    /// Deregister the window (collective, at most `timeout`) and free the memory. When
    /// deregistration fails NCCL may still use the memory, so it is left allocated (leaked)
    /// and the error returned.
    pub fn free(mut self, timeout: Duration) -> Result<()> {
        let raw = std::mem::replace(&mut self.owner.raw, std::ptr::null_mut());
        // SAFETY: ours; not used again.
        check(unsafe { ffi::ncclshim_symmem_free(raw, millis(timeout)) })
    }
}

impl Drop for Symmetric<'_> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        if self.comm.blocking() != Blocking::No {
            self.comm.dropped_buffers.borrow_mut().push(self.raw);
            return;
        }
        // SAFETY: ours; NULL-safe in C as well.
        let _ = unsafe { ffi::ncclshim_symmem_free(self.raw, millis(self.comm.timeout())) };
    }
}
