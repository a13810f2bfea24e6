//! A loaded NCCL: the process-wide default handle or one opened by path.

use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{check, Error, Result, Status};
use crate::ffi;
use crate::handle::{c_path, Handle};
use crate::{millis, text, Capability, Communicator, Config, UniqueId, Version};

/// An NCCL found and bound by ncclshim (or the record of why none was). Cheap to clone; the
/// library stays loaded for the life of the process, the handle's bookkeeping until the last
/// clone is dropped. Thread-safe.
#[derive(Clone)]
pub struct Nccl(Arc<Handle<ffi::ncclshim_nccl>>);

/// One candidate tried during the search, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The file name or path tried.
    pub candidate: String,
    /// The search step that tried it ("explicit", "system-search", ...).
    pub how: String,
    /// `Status::Ok` for the one chosen, else why it was refused.
    pub status: Status,
    /// The reason, dlerror's text included; "" for the one chosen.
    pub reason: String,
}

impl Nccl {
    /// The process-wide NCCL, searched for and loaded on first use (thread-safe). It exists
    /// even when no NCCL was found: [`Nccl::status`] and [`Nccl::message`] say why.
    pub fn default_handle() -> Nccl {
        // SAFETY: no arguments; never NULL (the handle is in the library's static storage).
        Nccl(Handle::shared(unsafe { ffi::ncclshim_nccl_default() }))
    }

    /// Open an NCCL beside the default one: `path` alone when given (never a fallback), else
    /// `NCCLSHIM_NCCL_LIBRARY`, else the search. Candidates older than `min_version` are
    /// refused. The error names every place tried and why each was refused (NOT_FOUND,
    /// VERSION_TOO_OLD, MISSING_SYMBOLS, ...).
    pub fn open(path: Option<&Path>, min_version: Option<Version>) -> Result<Nccl> {
        let path = path.map(c_path).transpose()?;
        let options = ffi::ncclshim_nccl_options {
            size: std::mem::size_of::<ffi::ncclshim_nccl_options>(),
            path: path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            min_version: min_version.map_or(0, |v| v.packed() as i32),
            refuse_second_copy: 0,
        };
        // SAFETY: options and out are valid for the call.
        Handle::open(|out| unsafe { ffi::ncclshim_nccl_open(&options, out) }).map(Nccl)
    }

    /// The C handle, for the raw API in [`crate::ffi`]; valid while this `Nccl` lives.
    pub fn raw(&self) -> *mut ffi::ncclshim_nccl {
        self.0.raw()
    }

    /// Ok when an NCCL is loaded, else why not (the handle's status and message).
    pub fn status(&self) -> Result<()> {
        self.0.status()
    }
    /// Whether an NCCL is loaded.
    pub fn is_loaded(&self) -> bool {
        self.status().is_ok()
    }
    /// One line: what was loaded, or why nothing was (every place searched).
    pub fn message(&self) -> String {
        self.0.message()
    }
    /// The loaded version; None without NCCL.
    pub fn version(&self) -> Option<Version> {
        // SAFETY: accessor.
        let packed = unsafe { ffi::ncclshim_nccl_version(self.raw()) };
        (packed > 0).then(|| Version::from_packed(packed as u32))
    }
    /// The raw `ncclGetVersion` code (22809, or 2708 for 2.7.8); 0 without NCCL.
    pub fn version_code(&self) -> i32 {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_nccl_version_code(self.raw()) }
    }
    /// The absolute path of the file loaded.
    pub fn path(&self) -> Option<PathBuf> {
        // SAFETY: accessor; NULL without NCCL.
        let p = unsafe { ffi::ncclshim_nccl_path(self.raw()) };
        (!p.is_null()).then(|| PathBuf::from(text(p)))
    }
    /// The search step that found it: "explicit", "environment", "already-loaded",
    /// "system-search", "well-known-place", or "none".
    pub fn found_via(&self) -> String {
        // SAFETY: accessor and static name.
        text(unsafe { ffi::ncclshim_found_via_name(ffi::ncclshim_nccl_found_via(self.raw())) })
    }
    /// Whether the library was already mapped in the process before ncclshim looked.
    pub fn preloaded(&self) -> bool {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_nccl_preloaded(self.raw()) != 0 }
    }
    /// The build tag of the library's banner ("+cuda13.0"), "" when none.
    pub fn build(&self) -> String {
        // SAFETY: thread-safe; the string lives as long as the handle.
        text(unsafe { ffi::ncclshim_nccl_build(self.raw()) })
    }
    /// Whether the loaded NCCL has `cap` (its version and every function it needs).
    pub fn has(&self, cap: Capability) -> bool {
        // SAFETY: accessor; any value is accepted.
        unsafe { ffi::ncclshim_nccl_has(self.raw(), cap as i32) != 0 }
    }
    /// Every capability present.
    pub fn capabilities(&self) -> Vec<Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(|c| self.has(*c))
            .collect()
    }
    /// Why `cap` is missing ("needs NCCL >= 2.28.0; loaded 2.27.3"), None when present.
    pub fn capability_reason(&self, cap: Capability) -> Option<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf and its size; always terminated.
        let reason = text(unsafe {
            ffi::ncclshim_nccl_capability_reason(
                self.raw(),
                cap as i32,
                buf.as_mut_ptr(),
                buf.len(),
            )
        });
        (!reason.is_empty()).then_some(reason)
    }
    /// Whether the loaded library exports `function` ("ncclCommWindowRegister"); false for a
    /// name that is not in the list.
    pub fn has_function(&self, function: &str) -> bool {
        // SAFETY: accessor.
        function_index(function)
            .is_some_and(|i| unsafe { ffi::ncclshim_nccl_has_function(self.raw(), i) != 0 })
    }
    /// Whether an optional function is missing although the version says it should be there.
    pub fn unexpectedly_missing(&self, function: &str) -> bool {
        // SAFETY: accessor.
        function_index(function)
            .is_some_and(|i| unsafe { ffi::ncclshim_nccl_unexpectedly_missing(self.raw(), i) != 0 })
    }
    /// A string for ranks to compare before creating a communicator (same NCCL, same file,
    /// same capabilities, same NCCL_* settings).
    pub fn fingerprint(&self) -> String {
        let mut buf = [0 as c_char; 128];
        // SAFETY: buf and its size; always terminated.
        text(unsafe { ffi::ncclshim_nccl_fingerprint(self.raw(), buf.as_mut_ptr(), buf.len()) })
    }
    /// The search trail, in the order tried.
    pub fn trail(&self) -> Vec<Attempt> {
        // SAFETY: accessors; records live as long as the handle, copied out here.
        unsafe {
            (0..ffi::ncclshim_nccl_attempt_count(self.raw()))
                .filter_map(|i| ffi::ncclshim_nccl_attempt(self.raw(), i).as_ref())
                .map(|a| Attempt {
                    candidate: text(a.candidate),
                    how: text(ffi::ncclshim_found_via_name(a.how)),
                    status: Status::from_code(a.result),
                    reason: text(a.reason),
                })
                .collect()
        }
    }

    /// The function table: every entry is callable (without NCCL, or for a function the
    /// loaded NCCL lacks, it returns an error result and leaves a message). Calling an entry is
    /// `unsafe`: the arguments are NCCL's.
    pub fn table(&self) -> &ffi::ncclshim_nccl_table {
        // SAFETY: never NULL; lives as long as the handle.
        unsafe { &*ffi::ncclshim_nccl_functions(self.raw()) }
    }

    /// Turn the result of the NCCL function `call` into a `Result`: `ncclSuccess` and
    /// `ncclInProgress` are Ok (the latter: a non-blocking communicator accepted the work),
    /// anything else an NCCL_ERROR carrying NCCL's code, text and last error.
    pub fn check_nccl(&self, result: ffi::ncclResult_t, call: &str) -> Result<()> {
        let call = CString::new(call).unwrap_or_default();
        // SAFETY: the handle and a terminated string.
        check(unsafe { ffi::ncclshim_nccl_check(self.raw(), result, call.as_ptr()) })
    }

    /// A new unique id (`ncclGetUniqueId`), made on one rank and sent to the others.
    pub fn unique_id(&self) -> Result<UniqueId> {
        self.status()?;
        let mut raw = ffi::ncclUniqueId { internal: [0; 128] };
        // SAFETY: a valid out-pointer.
        let result = unsafe { (self.table().ncclGetUniqueId)(&mut raw) };
        self.check_nccl(result, "ncclGetUniqueId")?;
        Ok(UniqueId::from_raw(&raw))
    }

    /// Poll `ncclCommGetAsyncError(comm)` until it stops saying `ncclInProgress`, at most
    /// `timeout`: Ok, NCCL_ERROR (the asynchronous error), or TIMEOUT. For communicators made
    /// through the raw table; a [`Communicator`] has [`Communicator::wait`].
    ///
    /// # Safety
    /// `comm` must be a live communicator of this NCCL (or NULL, refused cleanly).
    pub unsafe fn wait(&self, comm: ffi::ncclComm_t, timeout: Duration) -> Result<()> {
        check(ffi::ncclshim_nccl_wait(self.raw(), comm, millis(timeout)))
    }

    /// `ncclMemAlloc`: `bytes` of device memory NCCL can register (the mem-alloc capability,
    /// 2.19+; symmetric windows need 2.28, see [`crate::SymmetricBuffer`]). Needs the device
    /// current on this thread.
    pub fn nccl_mem_alloc(&self, bytes: usize) -> Result<*mut c_void> {
        self.require(Capability::MemAlloc, "ncclMemAlloc")?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let result = unsafe { (self.table().ncclMemAlloc)(&mut ptr, bytes) };
        self.check_nccl(result, "ncclMemAlloc")?;
        Ok(ptr)
    }

    /// `ncclMemFree` of memory from [`Nccl::nccl_mem_alloc`].
    ///
    /// # Safety
    /// `ptr` came from `nccl_mem_alloc` of this NCCL, is freed once and no longer used.
    pub unsafe fn nccl_mem_free(&self, ptr: *mut c_void) -> Result<()> {
        self.require(Capability::MemAlloc, "ncclMemFree")?;
        self.check_nccl((self.table().ncclMemFree)(ptr), "ncclMemFree")
    }

    /// UNAVAILABLE, naming `what` and why, when `cap` is missing.
    pub(crate) fn require(&self, cap: Capability, what: &str) -> Result<()> {
        self.status()?;
        match self.capability_reason(cap) {
            None => Ok(()),
            Some(reason) => Err(Error::new(Status::Unavailable, format!("{what}: {reason}"))),
        }
    }

    /// `ncclGroupStart`: the collectives that follow, up to [`Nccl::group_end`], are queued
    /// and launched together.
    pub fn group_start(&self) -> Result<()> {
        self.status()?;
        // SAFETY: no arguments.
        self.check_nccl(unsafe { (self.table().ncclGroupStart)() }, "ncclGroupStart")
    }

    /// `ncclGroupEnd`, then, on a non-blocking communicator, a wait on each of `comms` (the
    /// ones that took part), all within one `timeout`.
    pub fn group_end(&self, comms: &[&Communicator], timeout: Duration) -> Result<()> {
        let raw: Vec<*mut ffi::ncclshim_comm> = comms.iter().map(|c| c.raw()).collect();
        let count = i32::try_from(raw.len())
            .map_err(|_| Error::new(Status::InvalidArgument, "too many communicators"))?;
        // SAFETY: live communicators of this crate, and their count.
        check(unsafe {
            ffi::ncclshim_comm_group_end(self.raw(), raw.as_ptr(), count, millis(timeout))
        })
    }

    /// Run `work` between [`Nccl::group_start`] and [`Nccl::group_end`]; the group is ended
    /// even when `work` fails (its error is returned first) or panics (the panic goes on once
    /// the group is ended: NCCL's group is the thread's, and one left open would hold back
    /// every later call of the thread).
    pub fn group<T>(
        &self,
        comms: &[&Communicator],
        timeout: Duration,
        work: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        /// Ends the group when `work` unwinds.
        struct EndOnUnwind<'a> {
            nccl: &'a Nccl,
            comms: &'a [&'a Communicator],
            timeout: Duration,
        }
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let _ = self.nccl.group_end(self.comms, self.timeout);
                }
            }
        }
        self.group_start()?;
        let unwinding = EndOnUnwind {
            nccl: self,
            comms,
            timeout,
        };
        let out = work();
        drop(unwinding);
        let end = self.group_end(comms, timeout);
        let value = out?;
        end.map(|_| value)
    }

    /// A config for this NCCL, every field undefined (see [`Config`]).
    pub fn config(&self) -> Config {
        Config::new(self)
    }
}

fn function_index(name: &str) -> Option<i32> {
    ffi::NCCL_FUNCTIONS
        .iter()
        .position(|row| row.name == name)
        .map(|i| i as i32)
}
