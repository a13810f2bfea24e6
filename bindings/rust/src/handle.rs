//! The library handles behind [`crate::Nccl`] and [`crate::Cuda`]: opened, checked and closed
//! the same way, through ncclshim's `*_open`, `*_status`, `*_message` and `*_close`.

use std::ffi::{c_char, c_int, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result, Status};
use crate::{ffi, text};

/// A handle type of ncclshim's, with the functions that check and free it.
///
/// # Safety
/// Every function of the handle may be called from any thread, and the three constants are
/// the type's own close, status and message functions.
pub(crate) unsafe trait LibraryHandle: Sized {
    /// `ncclshim_*_close`: frees a handle that the type's open call made.
    const CLOSE: unsafe extern "C" fn(*mut Self);
    /// `ncclshim_*_status` of a live handle (or NULL): 0 when usable.
    const STATUS: unsafe extern "C" fn(*const Self) -> c_int;
    /// `ncclshim_*_message` of a live handle (or NULL): what is bound, or why nothing is; it
    /// lives as long as the handle.
    const MESSAGE: unsafe extern "C" fn(*const Self) -> *const c_char;
}

// SAFETY: ncclshim's NCCL handle functions are thread-safe (ncclshim.h).
unsafe impl LibraryHandle for ffi::ncclshim_nccl {
    const CLOSE: unsafe extern "C" fn(*mut Self) = ffi::ncclshim_nccl_close;
    const STATUS: unsafe extern "C" fn(*const Self) -> c_int = ffi::ncclshim_nccl_status;
    const MESSAGE: unsafe extern "C" fn(*const Self) -> *const c_char = ffi::ncclshim_nccl_message;
}

// SAFETY: every ncclshim CUDA function is thread-safe (cuda.h).
unsafe impl LibraryHandle for ffi::ncclshim_cuda {
    const CLOSE: unsafe extern "C" fn(*mut Self) = ffi::ncclshim_cuda_close;
    const STATUS: unsafe extern "C" fn(*const Self) -> c_int = ffi::ncclshim_cuda_status;
    const MESSAGE: unsafe extern "C" fn(*const Self) -> *const c_char = ffi::ncclshim_cuda_message;
}

/// One handle, shared by the clones of its `Nccl` or `Cuda` (an `Arc`).
pub(crate) struct Handle<T: LibraryHandle> {
    raw: *mut T,
    owned: bool, // false for the default handle, which is never closed
}

// SAFETY: the handle's functions are thread-safe (LibraryHandle's contract); it is closed only
// when the last clone is dropped, so no other thread can be using it then.
unsafe impl<T: LibraryHandle> Send for Handle<T> {}
unsafe impl<T: LibraryHandle> Sync for Handle<T> {}

impl<T: LibraryHandle> Handle<T> {
    /// The library's process-wide handle (`ncclshim_*_default`): never closed.
    pub(crate) fn shared(raw: *mut T) -> Arc<Handle<T>> {
        Arc::new(Handle { raw, owned: false })
    }

    /// A handle of our own from `open` (an `ncclshim_*_open` given the out-pointer): the
    /// thread's last error when none came back, the handle's status and message when it is
    /// not usable (it is closed then).
    pub(crate) fn open(open: impl FnOnce(&mut *mut T) -> c_int) -> Result<Arc<Handle<T>>> {
        let mut raw = std::ptr::null_mut();
        let status = open(&mut raw);
        if raw.is_null() {
            return Err(Error::last(status));
        }
        let handle = Arc::new(Handle { raw, owned: true });
        handle.status()?;
        Ok(handle)
    }

    /// The C handle; valid while self lives.
    pub(crate) fn raw(&self) -> *mut T {
        self.raw
    }
    /// Ok when usable, else its status with its message.
    pub(crate) fn status(&self) -> Result<()> {
        // SAFETY: our handle, live while self is.
        match unsafe { (T::STATUS)(self.raw) } {
            0 => Ok(()),
            status => Err(Error::new(Status::from_code(status), self.message())),
        }
    }
    /// Its one-line message.
    pub(crate) fn message(&self) -> String {
        // SAFETY: as in status; text copies the string at once.
        text(unsafe { (T::MESSAGE)(self.raw) })
    }
}

impl<T: LibraryHandle> Drop for Handle<T> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: ours (opened by Handle::open), and no clone is left.
            unsafe { (T::CLOSE)(self.raw) }
        }
    }
}

/// A path for ncclshim's options; INVALID_ARGUMENT when it holds a NUL byte.
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("path {path:?} contains a NUL byte"),
        )
    })
}
