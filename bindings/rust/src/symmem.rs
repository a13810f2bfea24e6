//! Symmetric memory (NCCL 2.28+): buffers registered as symmetric windows on a communicator.

use std::ffi::c_void;
use std::time::Duration;

use crate::error::{check, Result};
use crate::ffi;
use crate::{millis, Blocking, Communicator, Stream};

/// A buffer from `ncclMemAlloc` registered as a symmetric window on a communicator
/// (`ncclshim_symmem`), so that NCCL can run its symmetric kernels on it. Allocation and free
/// are collective: every rank makes the same calls with the same size. On an NCCL without
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
pub struct SymmetricBuffer<'c> {
    raw: *mut ffi::ncclshim_symmem,
    comm: &'c Communicator,
}

impl<'c> SymmetricBuffer<'c> {
    /// At least `bytes` bytes (rounded up to 4096), registered on `comm`, waiting at most
    /// `timeout` for the registration; `stream` is the stream it will be used on (checked
    /// for CUDA graph capture).
    pub fn alloc(
        comm: &'c Communicator,
        bytes: usize,
        stream: &Stream,
        timeout: Duration,
    ) -> Result<SymmetricBuffer<'c>> {
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
        Ok(SymmetricBuffer { raw, comm })
    }

    /// The device address (4096-aligned), for collectives on the communicator.
    pub fn as_ptr(&self) -> *mut c_void {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_ptr(self.raw) }
    }
    /// The size registered: the size asked for rounded up to 4096.
    pub fn len(&self) -> usize {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_size(self.raw) }
    }
    /// Never true: a buffer holds at least one page.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// NCCL's window (`ncclWindow_t`).
    pub fn window(&self) -> ffi::ncclshim_window_t {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_symmem_window(self.raw) }
    }

    /// Deregister the window (collective, at most `timeout`) and free the memory. When
    /// deregistration fails NCCL may still use the memory, so it is left allocated (leaked)
    /// and the error returned.
    pub fn free(mut self, timeout: Duration) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // SAFETY: ours; not used again.
        check(unsafe { ffi::ncclshim_symmem_free(raw, millis(timeout)) })
    }
}

impl Drop for SymmetricBuffer<'_> {
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
