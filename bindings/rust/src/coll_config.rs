//! NCCL 2.32's per-collective config (`ncclCollConfig_t`, the `...Config` collectives) and
//! `ncclSetEncryption`, only where the loaded NCCL has them (UNAVAILABLE, naming the version
//! that brought them, elsewhere; NCCL is not called).

use std::ffi::{c_int, CString};
use std::marker::PhantomData;

use crate::error::{Error, Result, Status};
use crate::{ffi, Capability, Communicator, DataType, Event, Nccl, Stream};

/// `int_setters! { /// doc\n method => cField; ... }`: a builder method setting each int field.
macro_rules! int_setters {
    ($($(#[$doc:meta])* $method:ident => $field:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $method(mut self, value: i32) -> Self {
                self.raw.$field = value;
                self
            }
        )*
    };
}

/// An `ncclCollConfig_t` as `NCCL_COLLCONFIG_INITIALIZER` makes it (every choice left to
/// NCCL), filled by a builder; it owns its algorithm string and borrows the launch event.
///
/// ```no_run
/// # fn f(comm: &ncclshim::Communicator, cuda: &ncclshim::Cuda, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// let launched = cuda.create_event()?;
/// let config = ncclshim::CollConfig::new().max_ctas(8).launch_event(&launched);
/// let mut buffer = cuda.alloc::<f32>(1024)?;
/// comm.all_reduce_in_place_with(&mut buffer, ncclshim::RedOp::Sum, &config, stream)?; // 2.32+
/// # Ok(()) }
/// ```
pub struct CollConfig<'e> {
    raw: ffi::ncclshim_coll_config_t,
    algorithm: Option<CString>,
    _event: PhantomData<&'e Event>,
}

impl Default for CollConfig<'_> {
    fn default() -> Self {
        CollConfig::new()
    }
}

impl<'e> CollConfig<'e> {
    /// Every field undefined: NCCL chooses (`ncclshim_coll_config_init`: NCCL's
    /// `NCCL_COLLCONFIG_INITIALIZER` values, for the 2.32.3 layout).
    pub fn new() -> CollConfig<'e> {
        // SAFETY: all-zero is a valid value of the C struct (NULL pointers, zero ints).
        let mut raw: ffi::ncclshim_coll_config_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<ffi::ncclshim_coll_config_t>();
        // SAFETY: the struct and its size, which holds the header: always OK.
        unsafe {
            ffi::ncclshim_coll_config_init(&mut raw as *mut _ as *mut std::ffi::c_void, size)
        };
        CollConfig {
            raw,
            algorithm: None,
            _event: PhantomData,
        }
    }
    int_setters! {
        /// `minCTAs`.
        min_ctas => minCTAs;
        /// `maxCTAs`.
        max_ctas => maxCTAs;
        /// `nvlsCTAs`.
        nvls_ctas => nvlsCTAs;
        /// `cgaClusterSize`.
        cga_cluster_size => cgaClusterSize;
        /// `CTAPolicy`.
        cta_policy => CTAPolicy;
    }
    /// `algSelection` (NCCL's syntax, as `NCCL_ALGO`) and `forceAlgSelection`.
    /// INVALID_ARGUMENT for a string holding a NUL byte.
    pub fn algorithm(mut self, selection: &str, force: bool) -> Result<Self> {
        let selection = CString::new(selection).map_err(|_| {
            Error::new(
                Status::InvalidArgument,
                format!("algorithm {selection:?} contains a NUL byte"),
            )
        })?;
        self.raw.algSelection = selection.as_ptr(); // the CString's heap buffer does not move
        self.raw.forceAlgSelection = c_int::from(force);
        self.algorithm = Some(selection);
        Ok(self)
    }
    /// `userProfilerTag`.
    pub fn profiler_tag(mut self, tag: u64) -> Self {
        self.raw.userProfilerTag = tag;
        self
    }
    /// `launchCompletionEvent`: NCCL records `event` when the collective's kernel has
    /// launched (the launch-event capability). The config borrows it.
    pub fn launch_event(mut self, event: &'e Event) -> Self {
        self.raw.launchCompletionEvent = event.as_raw();
        self
    }
    /// The C struct as filled.
    pub fn raw(&self) -> &ffi::ncclshim_coll_config_t {
        &self.raw
    }
}

/// `NCCL_API_MAGIC`, and the release whose `ncclEncryptionConfig_t` layout
/// `ffi::ncclshim_encryption_config_t` copies (2.32.3), as `NCCL_ENCRYPTION_CONFIG_INITIALIZER`
/// fills them.
const MAGIC: u32 = 0xcafe_beef;
const LAYOUT_VERSION: u32 = 23203;

impl Communicator {
    /// NCCL's communicator for a `...Config` call named `call` on `dtype`: UNAVAILABLE
    /// (naming the version that brought it) on an NCCL without per-collective config.
    pub(crate) fn config_ready(&self, call: &str, dtype: DataType) -> Result<ffi::ncclComm_t> {
        self.nccl().require(Capability::CollConfig, call)?;
        self.ready(dtype)
    }
}

impl Nccl {
    /// `ncclSetEncryption` (2.32.3+; UNAVAILABLE before): NCCL's own TCP sockets encrypted
    /// with the pre-shared key `psk`, or plaintext with None. Call it before creating
    /// communicators. NCCL_ERROR with NCCL's code and text when NCCL refuses.
    pub fn set_encryption(&self, psk: Option<&str>) -> Result<()> {
        self.require(Capability::Encryption, "ncclSetEncryption")?;
        let psk = psk
            .map(|k| {
                CString::new(k).map_err(|_| {
                    Error::new(
                        Status::InvalidArgument,
                        "the pre-shared key contains a NUL byte",
                    )
                })
            })
            .transpose()?;
        let config = ffi::ncclshim_encryption_config_t {
            size: std::mem::size_of::<ffi::ncclshim_encryption_config_t>(),
            magic: MAGIC,
            version: LAYOUT_VERSION,
            mode: c_int::from(psk.is_some()),
            psk: psk.as_ref().map_or(std::ptr::null(), |k| k.as_ptr()),
        };
        // SAFETY: a filled config whose key outlives the call.
        let result = unsafe { (self.table().ncclSetEncryption)(&config) };
        self.check_nccl(result, "ncclSetEncryption")
    }
}

/// The safe collectives with a per-collective config, for `impl Communicator` and
/// `impl Watched` (each has `enqueue_config`): checked as their plain twins (the same
/// [`crate::typed::Plan`]), then the `...Config` call.
// SAFETY of every call below: as the plain twins' (crate::typed), and `config` is a filled
// ncclCollConfig_t borrowed for the call.
macro_rules! config_collectives {
    () => {
        /// [`all_reduce`](Self::all_reduce) with `config` (`ncclAllReduceConfig`, NCCL
        /// 2.32+: UNAVAILABLE before, NCCL not called).
        pub fn all_reduce_with<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::same("ncclAllReduceConfig", send, recv)?;
            self.all_reduce_config(p, T::DATA_TYPE, op, config, stream)
        }
        /// [`all_reduce_in_place`](Self::all_reduce_in_place) with `config`.
        pub fn all_reduce_in_place_with<T: $crate::Element>(
            &self,
            buffer: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::in_place(buffer);
            self.all_reduce_config(p, T::DATA_TYPE, op, config, stream)
        }
        fn all_reduce_config(
            &self,
            p: $crate::typed::Plan,
            dtype: $crate::DataType,
            op: $crate::RedOp,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let (d, o, s, c) = (dtype.raw(), op.raw(), stream.as_raw(), config.raw());
            self.enqueue_config("ncclAllReduceConfig", p.count, dtype, stream, |t, comm| {
                // SAFETY: see the macro.
                unsafe { (t.ncclAllReduceConfig)(p.send, p.recv, p.count, d, o, comm, s, c) }
            })
        }
        /// [`broadcast`](Self::broadcast) with `config` (`ncclBroadcastConfig`).
        pub fn broadcast_with<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            root: i32,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            $crate::typed::a_rank(self, "ncclBroadcastConfig", "root", root)?;
            let p = $crate::typed::Plan::same("ncclBroadcastConfig", send, recv)?;
            let (d, s, c) = (T::DATA_TYPE.raw(), stream.as_raw(), config.raw());
            self.enqueue_config(
                "ncclBroadcastConfig",
                p.count,
                T::DATA_TYPE,
                stream,
                |t, comm| {
                    // SAFETY: see the macro.
                    unsafe { (t.ncclBroadcastConfig)(p.send, p.recv, p.count, d, root, comm, s, c) }
                },
            )
        }
        /// [`all_gather`](Self::all_gather) with `config` (`ncclAllGatherConfig`).
        pub fn all_gather_with<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::gather(self, "ncclAllGatherConfig", send, recv)?;
            let (d, s, c) = (T::DATA_TYPE.raw(), stream.as_raw(), config.raw());
            self.enqueue_config(
                "ncclAllGatherConfig",
                p.count,
                T::DATA_TYPE,
                stream,
                |t, comm| {
                    // SAFETY: see the macro.
                    unsafe { (t.ncclAllGatherConfig)(p.send, p.recv, p.count, d, comm, s, c) }
                },
            )
        }
        /// [`reduce_scatter`](Self::reduce_scatter) with `config` (`ncclReduceScatterConfig`).
        pub fn reduce_scatter_with<T: $crate::Element>(
            &self,
            send: &impl $crate::DeviceMemory<Elem = T>,
            recv: &mut impl $crate::DeviceMemoryMut<Elem = T>,
            op: $crate::RedOp,
            config: &$crate::CollConfig<'_>,
            stream: &$crate::Stream,
        ) -> $crate::Result<()> {
            let p = $crate::typed::Plan::scatter(self, "ncclReduceScatterConfig", send, recv)?;
            let (d, o, s, c) = (T::DATA_TYPE.raw(), op.raw(), stream.as_raw(), config.raw());
            self.enqueue_config(
                "ncclReduceScatterConfig",
                p.count,
                T::DATA_TYPE,
                stream,
                |t, comm| {
                    // SAFETY: see the macro.
                    unsafe {
                        (t.ncclReduceScatterConfig)(p.send, p.recv, p.count, d, o, comm, s, c)
                    }
                },
            )
        }
    };
}

impl Communicator {
    /// A `...Config` call: gated, made with NCCL's communicator, its result checked.
    pub(crate) fn enqueue_config(
        &self,
        call: &'static str,
        _count: usize,
        dtype: DataType,
        _stream: &Stream,
        make: impl FnOnce(&ffi::ncclshim_nccl_table, ffi::ncclComm_t) -> ffi::ncclResult_t,
    ) -> Result<()> {
        let comm = self.config_ready(call, dtype)?;
        self.check(make(self.nccl().table(), comm), call)
    }

    config_collectives!();
}
