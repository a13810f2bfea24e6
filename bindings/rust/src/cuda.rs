//! The CUDA driver through ncclshim: streams and events with the names an engine uses
//! (`create_stream` ... `sync_stream`), device memory for tests and examples.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{check, Error, Result, Status};
use crate::ffi;
use crate::handle::{c_path, Handle};
use crate::text;
use crate::{DeviceMemory, DeviceMemoryMut, Element};

/// A CUDA driver (libcuda.so.1) bound by ncclshim, or the record of why none is. Loading never
/// calls cuInit: call [`Cuda::init`] in the process that uses the GPU (after any fork).
#[derive(Clone)]
pub struct Cuda(Arc<Handle<ffi::ncclshim_cuda>>);

/// A CUDA stream (`CUstream`, the same object as `cudaStream_t`), owned: dropping it destroys
/// it (work already queued still completes), and [`Stream::destroy`] (or
/// [`Cuda::destroy_stream`]) does the same and reports the driver's answer. Functions that
/// queue work borrow it (`&Stream`).
///
/// A stream is destroyed once: the method takes it by value, so a second destroy does not
/// compile.
///
/// ```no_run
/// let cuda = ncclshim::Cuda::default_handle();
/// let stream = cuda.create_stream()?;
/// cuda.sync_stream(&stream)?;
/// cuda.destroy_stream(stream)?;
/// # Ok::<(), ncclshim::Error>(())
/// ```
///
/// ```compile_fail,E0382
/// let cuda = ncclshim::Cuda::default_handle();
/// let stream = cuda.create_stream()?;
/// cuda.destroy_stream(stream)?;
/// cuda.destroy_stream(stream)?; // use of a moved value
/// # Ok::<(), ncclshim::Error>(())
/// ```
///
/// A stream comes only from the driver, or from a raw handle through `unsafe`:
///
/// ```compile_fail,E0451
/// let forged = ncclshim::Stream { raw: 0x10 as *mut _, owner: None }; // private fields
/// ```
pub struct Stream {
    raw: ffi::CUstream,
    /// The driver that destroys it; None for the legacy default stream and released handles.
    owner: Option<Cuda>,
}

/// A CUDA event (`CUevent`), owned like [`Stream`]: dropping it destroys it, and
/// [`Event::destroy`] (or [`Cuda::destroy_event`]) reports the driver's answer.
///
/// ```compile_fail,E0382
/// let cuda = ncclshim::Cuda::default_handle();
/// let event = cuda.create_event()?;
/// event.destroy()?;
/// event.destroy()?; // use of a moved value
/// # Ok::<(), ncclshim::Error>(())
/// ```
pub struct Event {
    raw: ffi::CUevent,
    owner: Option<Cuda>,
}

/// A device address (`CUdeviceptr`).
pub type DevicePtr = ffi::CUdeviceptr;

// SAFETY: CUDA streams and events may be used and destroyed from any thread of the process;
// the owner is a `Cuda`, itself Send and Sync.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

/// `driver_owned!(Type, raw type, destroy function, what the destroy leaves running)`: what
/// [`Stream`] and [`Event`] share, a raw handle and the driver that destroys it once (None:
/// not owned): `as_raw`, `into_raw`, `destroy`, `Drop` and `Debug`.
macro_rules! driver_owned {
    ($type:ident, $raw:ty, $destroy:path, $pending:literal) => {
        impl $type {
            #[doc = concat!("The raw handle, for [`crate::ffi`]; valid while this `", stringify!($type), "` lives.")]
            #[inline]
            pub fn as_raw(&self) -> $raw {
                self.raw
            }
            /// Give up ownership: the raw handle, which the caller now destroys.
            pub fn into_raw(mut self) -> $raw {
                self.owner = None;
                self.raw
            }
            #[doc = concat!("Destroy it, with the driver's answer (", $pending, ").")]
            pub fn destroy(mut self) -> Result<()> {
                match self.owner.take() {
                    // SAFETY: ours, destroyed once (the owner is gone, so Drop does nothing).
                    Some(cuda) => check(unsafe { $destroy(cuda.raw(), self.raw) }),
                    None => Ok(()),
                }
            }
        }

        impl Drop for $type {
            fn drop(&mut self) {
                if let Some(cuda) = self.owner.take() {
                    // SAFETY: ours, destroyed once; a failure has nowhere to go.
                    unsafe { $destroy(cuda.raw(), self.raw) };
                }
            }
        }

        impl fmt::Debug for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($type), "({:p})"), self.raw)
            }
        }
    };
}

impl Stream {
    /// The legacy default stream (NULL): never destroyed.
    pub const DEFAULT: Stream = Stream {
        raw: std::ptr::null_mut(),
        owner: None,
    };

    /// Take ownership of a raw stream: dropping the `Stream` destroys it through `cuda`.
    ///
    /// # Safety
    /// `raw` is a live stream of `cuda`'s driver (or NULL, the legacy default stream, which
    /// is then never destroyed), and nothing else destroys it.
    pub unsafe fn from_raw(cuda: &Cuda, raw: ffi::CUstream) -> Stream {
        Stream {
            raw,
            owner: (!raw.is_null()).then(|| cuda.clone()),
        }
    }
}

impl Event {
    /// Take ownership of a raw event: dropping the `Event` destroys it through `cuda`.
    ///
    /// # Safety
    /// `raw` is a live event of `cuda`'s driver, and nothing else destroys it.
    pub unsafe fn from_raw(cuda: &Cuda, raw: ffi::CUevent) -> Event {
        Event {
            raw,
            owner: Some(cuda.clone()),
        }
    }
}

driver_owned!(
    Stream,
    ffi::CUstream,
    ffi::ncclshim_cuda_stream_destroy,
    "work already queued still completes"
);
driver_owned!(
    Event,
    ffi::CUevent,
    ffi::ncclshim_cuda_event_destroy,
    "a pending record completes first"
);

impl Cuda {
    /// The process-wide driver handle, opened on first use (no cuInit).
    pub fn default_handle() -> Cuda {
        // SAFETY: no arguments; never NULL (the handle is in the library's static storage).
        Cuda(Handle::shared(unsafe { ffi::ncclshim_cuda_default() }))
    }

    /// Open the driver at `path` alone (no fallback), or with None the search
    /// (`NCCLSHIM_CUDA_LIBRARY`, an already loaded libcuda.so.1, the system loader).
    pub fn open(path: Option<&Path>) -> Result<Cuda> {
        let path = path.map(c_path).transpose()?;
        let options = ffi::ncclshim_cuda_options {
            size: std::mem::size_of::<ffi::ncclshim_cuda_options>(),
            path: path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
        };
        // SAFETY: valid options and out-pointer.
        Handle::open(|out| unsafe { ffi::ncclshim_cuda_open(&options, out) }).map(Cuda)
    }

    /// The C handle, for [`crate::ffi`]; valid while this `Cuda` lives.
    pub fn raw(&self) -> *mut ffi::ncclshim_cuda {
        self.0.raw()
    }
    /// Ok when a usable driver is bound, else why not.
    pub fn status(&self) -> Result<()> {
        self.0.status()
    }
    /// One line: the driver bound, or why none is usable.
    pub fn message(&self) -> String {
        self.0.message()
    }
    /// The driver file, when one is bound.
    pub fn path(&self) -> Option<PathBuf> {
        // SAFETY: accessor.
        let p = unsafe { ffi::ncclshim_cuda_path(self.raw()) };
        (!p.is_null()).then(|| PathBuf::from(text(p)))
    }
    /// The driver's version as (major, minor), None without one.
    pub fn driver_version(&self) -> Option<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: accessor and out-pointers.
        let v = unsafe { ffi::ncclshim_cuda_driver_version(self.raw(), &mut major, &mut minor) };
        (v > 0).then_some((major, minor))
    }
    /// Whether the file found is the toolkit's link-time stub.
    pub fn is_stub(&self) -> bool {
        // SAFETY: accessor.
        unsafe { ffi::ncclshim_cuda_is_stub(self.raw()) != 0 }
    }
    /// The driver's function table (calling an entry is `unsafe`).
    pub fn table(&self) -> &ffi::ncclshim_cuda_table {
        // SAFETY: never NULL; lives as long as the handle.
        unsafe { &*ffi::ncclshim_cuda_functions(self.raw()) }
    }

    /// cuInit(0) in this process: DRIVER_UNAVAILABLE, NO_DEVICE, FORKED, CUDA_ERROR.
    pub fn init(&self) -> Result<()> {
        // SAFETY: the handle.
        check(unsafe { ffi::ncclshim_cuda_init(self.raw()) })
    }
    /// The number of visible devices (after [`Cuda::init`]).
    pub fn device_count(&self) -> Result<i32> {
        let mut count = 0;
        // SAFETY: out-pointer.
        check(unsafe { ffi::ncclshim_cuda_device_count(self.raw(), &mut count) })?;
        Ok(count)
    }
    /// Retain device `ordinal`'s primary context and make it current on this thread.
    pub fn activate_device(&self, ordinal: i32) -> Result<()> {
        // SAFETY: ctx may be NULL.
        check(unsafe {
            ffi::ncclshim_cuda_device_activate(self.raw(), ordinal, std::ptr::null_mut())
        })
    }
    /// Release one retain of device `ordinal`'s primary context.
    pub fn release_device(&self, ordinal: i32) -> Result<()> {
        // SAFETY: plain values.
        check(unsafe { ffi::ncclshim_cuda_device_release(self.raw(), ordinal) })
    }

    /// A non-blocking stream (no implicit sync with the legacy default stream) in the current
    /// context.
    pub fn create_stream(&self) -> Result<Stream> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: out-pointer.
        check(unsafe {
            ffi::ncclshim_cuda_stream_create(
                self.raw(),
                ffi::NCCLSHIM_CU_STREAM_NON_BLOCKING,
                &mut stream,
            )
        })?;
        Ok(Stream {
            raw: stream,
            owner: Some(self.clone()),
        })
    }
    /// Destroy a stream (as [`Stream::destroy`]); work already queued still completes.
    pub fn destroy_stream(&self, stream: Stream) -> Result<()> {
        stream.destroy()
    }
    /// An event without timing (the cheapest to record and wait on).
    pub fn create_event(&self) -> Result<Event> {
        let mut event = std::ptr::null_mut();
        // SAFETY: out-pointer.
        check(unsafe {
            ffi::ncclshim_cuda_event_create(
                self.raw(),
                ffi::NCCLSHIM_CU_EVENT_DISABLE_TIMING,
                &mut event,
            )
        })?;
        Ok(Event {
            raw: event,
            owner: Some(self.clone()),
        })
    }
    /// Destroy an event (as [`Event::destroy`]); a pending record completes first.
    pub fn destroy_event(&self, event: Event) -> Result<()> {
        event.destroy()
    }
    /// Record `event` at the current end of `stream`'s work.
    pub fn record_event(&self, event: &Event, stream: &Stream) -> Result<()> {
        // SAFETY: handles validated by the driver.
        check(unsafe { ffi::ncclshim_cuda_event_record(self.raw(), event.raw, stream.raw) })
    }
    /// Make later work on `stream` wait for `event`'s last record (the host does not block).
    pub fn stream_wait_event(&self, stream: &Stream, event: &Event) -> Result<()> {
        // SAFETY: handles validated by the driver.
        check(unsafe { ffi::ncclshim_cuda_stream_wait_event(self.raw(), stream.raw, event.raw) })
    }
    /// Whether all work queued on `stream` has finished, without waiting: `Ok(false)` while
    /// it runs (CUDA's 600, CUDA_ERROR_NOT_READY, is not an error).
    pub fn stream_ready(&self, stream: &Stream) -> Result<bool> {
        let mut ready = 0;
        // SAFETY: out-pointer.
        check(unsafe { ffi::ncclshim_cuda_stream_query(self.raw(), stream.raw, &mut ready) })?;
        Ok(ready != 0)
    }
    /// Block until all work queued on `stream` has finished.
    pub fn sync_stream(&self, stream: &Stream) -> Result<()> {
        // SAFETY: handle validated by the driver.
        check(unsafe { ffi::ncclshim_cuda_stream_synchronize(self.raw(), stream.raw) })
    }

    fn cu(&self, result: ffi::ncclshim_cu_result, call: &str) -> Result<()> {
        if result == 0 {
            return Ok(());
        }
        // SAFETY: static strings, any code.
        let (name, what) = unsafe {
            (
                text(ffi::ncclshim_cuda_result_name(self.raw(), result)),
                text(ffi::ncclshim_cuda_result_string(self.raw(), result)),
            )
        };
        Err(Error::new(
            Status::CudaError,
            format!("{call} failed: {name} ({result}): {what}"),
        ))
    }

    /// `cuMemAlloc`: `bytes` of device memory in the current context.
    pub fn mem_alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let mut ptr = 0;
        // SAFETY: out-pointer.
        self.cu(
            unsafe { (self.table().cuMemAlloc)(&mut ptr, bytes) },
            "cuMemAlloc",
        )?;
        Ok(ptr)
    }
    /// `cuMemFree`.
    ///
    /// # Safety
    /// `ptr` came from [`Cuda::mem_alloc`], is freed once and no work still uses it.
    pub unsafe fn mem_free(&self, ptr: DevicePtr) -> Result<()> {
        self.cu((self.table().cuMemFree)(ptr), "cuMemFree")
    }
    /// Copy `src` to device memory at `dst` (`cuMemcpyHtoD`, synchronous); the typed
    /// [`Cuda::copy_to_device`] checks the sizes.
    ///
    /// # Safety
    /// `dst` holds at least `size_of_val(src)` bytes of device memory.
    pub unsafe fn copy_to_device_raw<T: Copy>(&self, dst: DevicePtr, src: &[T]) -> Result<()> {
        self.cu(
            (self.table().cuMemcpyHtoD)(dst, src.as_ptr().cast(), std::mem::size_of_val(src)),
            "cuMemcpyHtoD",
        )
    }
    /// Copy device memory at `src` into `dst` (`cuMemcpyDtoH`, synchronous); the typed
    /// [`Cuda::copy_to_host`] checks the sizes.
    ///
    /// # Safety
    /// `src` holds at least `size_of_val(dst)` bytes, which are valid values of `T`.
    pub unsafe fn copy_to_host_raw<T: Copy>(&self, dst: &mut [T], src: DevicePtr) -> Result<()> {
        self.cu(
            (self.table().cuMemcpyDtoH)(dst.as_mut_ptr().cast(), src, std::mem::size_of_val(dst)),
            "cuMemcpyDtoH",
        )
    }
    /// Set `bytes` bytes at `dst` to `value` (`cuMemsetD8`); the typed [`Cuda::fill_bytes`]
    /// checks the size.
    ///
    /// # Safety
    /// `dst` holds at least `bytes` bytes of device memory.
    pub unsafe fn memset_raw(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        self.cu((self.table().cuMemsetD8)(dst, value, bytes), "cuMemsetD8")
    }

    /// Copy `src` into `dst`, which holds as many elements (`cuMemcpyHtoD`; synchronous):
    /// INVALID_ARGUMENT, before the driver is called, when the lengths differ.
    pub fn copy_to_device<T: Element>(
        &self,
        src: &[T],
        dst: &mut impl DeviceMemoryMut<Elem = T>,
    ) -> Result<()> {
        same_len("copy_to_device", src.len(), dst.len())?;
        // SAFETY: dst holds src.len() elements (checked), borrowed mutably for the call.
        unsafe { self.copy_to_device_raw(dst.device_ptr(), src) }
    }
    /// Copy `src` into `dst`, which holds as many elements (`cuMemcpyDtoH`; synchronous, after
    /// the work queued on the legacy default stream): INVALID_ARGUMENT when the lengths differ.
    pub fn copy_to_host<T: Element>(
        &self,
        src: &impl DeviceMemory<Elem = T>,
        dst: &mut [T],
    ) -> Result<()> {
        same_len("copy_to_host", src.len(), dst.len())?;
        // SAFETY: src holds dst.len() elements of T (checked); any bits are a valid T.
        unsafe { self.copy_to_host_raw(dst, src.device_ptr()) }
    }
    /// The elements of `src`, copied into a new vector (synchronous).
    pub fn to_vec<T: Element>(&self, src: &impl DeviceMemory<Elem = T>) -> Result<Vec<T>> {
        let mut out = vec![fill_value::<T>(); src.len()];
        self.copy_to_host(src, &mut out)?;
        Ok(out)
    }
    /// Copy `src` into `dst` in `stream`'s order (`cuMemcpyHtoDAsync`): work queued on
    /// `stream` after it sees the values. `src` is host memory of this program (pageable): the
    /// driver has read it before this returns, so it may be reused at once. INVALID_ARGUMENT
    /// when the lengths differ; UNAVAILABLE on a driver without the function.
    pub fn copy_to_device_async<T: Element>(
        &self,
        src: &[T],
        dst: &mut impl DeviceMemoryMut<Elem = T>,
        stream: &Stream,
    ) -> Result<()> {
        same_len("copy_to_device_async", src.len(), dst.len())?;
        self.need("cuMemcpyHtoDAsync")?;
        // SAFETY: dst holds src.len() elements (checked); src is pageable host memory, read
        // before the call returns (the driver stages it).
        self.cu(
            unsafe {
                (self.table().cuMemcpyHtoDAsync)(
                    dst.device_ptr(),
                    src.as_ptr().cast(),
                    std::mem::size_of_val(src),
                    stream.raw,
                )
            },
            "cuMemcpyHtoDAsync",
        )
    }
    /// Copy `src` into `dst` in `stream`'s order (`cuMemcpyDtoHAsync`): after the work queued
    /// on `stream` before it. `dst` is host memory of this program (pageable): the driver has
    /// written it before this returns. INVALID_ARGUMENT when the lengths differ; UNAVAILABLE on
    /// a driver without the function.
    pub fn copy_to_host_async<T: Element>(
        &self,
        src: &impl DeviceMemory<Elem = T>,
        dst: &mut [T],
        stream: &Stream,
    ) -> Result<()> {
        same_len("copy_to_host_async", src.len(), dst.len())?;
        self.need("cuMemcpyDtoHAsync")?;
        // SAFETY: src holds dst.len() elements (checked); dst is pageable, written before the
        // call returns; any bits are a valid T.
        self.cu(
            unsafe {
                (self.table().cuMemcpyDtoHAsync)(
                    dst.as_mut_ptr().cast(),
                    src.device_ptr(),
                    std::mem::size_of_val(dst),
                    stream.raw,
                )
            },
            "cuMemcpyDtoHAsync",
        )
    }
    /// Set every byte of `dst` to `value` (`cuMemsetD8`).
    pub fn fill_bytes(&self, dst: &mut impl DeviceMemoryMut, value: u8) -> Result<()> {
        // SAFETY: dst's own size, borrowed mutably.
        unsafe { self.memset_raw(dst.device_ptr(), value, dst.bytes()) }
    }

    /// UNAVAILABLE when the driver lacks `function` (an optional row of the list).
    fn need(&self, function: &str) -> Result<()> {
        let index = ffi::CUDA_FUNCTIONS
            .iter()
            .position(|row| row.name == function)
            .map_or(-1, |i| i as i32);
        self.status()?;
        // SAFETY: accessor; any index.
        if unsafe { ffi::ncclshim_cuda_has_function(self.raw(), index) } != 0 {
            return Ok(());
        }
        Err(Error::new(
            Status::Unavailable,
            format!("{function}: the loaded CUDA driver does not have it"),
        ))
    }
}

/// INVALID_ARGUMENT unless a copy's two sides hold as many elements.
fn same_len(call: &str, src: usize, dst: usize) -> Result<()> {
    if src == dst {
        return Ok(());
    }
    Err(Error::new(
        Status::InvalidArgument,
        format!("{call}: the source holds {src} elements, the destination {dst}"),
    ))
}

/// A value to fill a vector with before the driver overwrites it.
fn fill_value<T: Element>() -> T {
    // SAFETY: every bit pattern, zero included, is a valid Element (its contract).
    unsafe { std::mem::zeroed() }
}
