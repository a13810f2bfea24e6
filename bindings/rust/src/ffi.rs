//! The raw C API of libncclshim, for what the safe layer does not cover.
//!
//! The function tables (`ncclshim_nccl_table`, `ncclshim_cuda_table`), the rows of the lists,
//! [`Capability`], [`CommCapability`], [`ConfigField`] and [`Status`] are generated at build
//! time from ncclshim's X-macro lists, [`DataType`] and [`RedOp`] from NCCL's enums in
//! `nccl_abi.h`, and the `ncclshim_*` functions from their declarations in `include/ncclshim/`
//! (see build.rs). The types below are written from those headers; the crate's tests compare
//! the functions with the library's export list and the types with the C structs' layout, so
//! that a change on the C side fails a test. Everything here follows the C headers'
//! documentation; every call is `unsafe`. `ncclshim_cuda_describe_device` takes its
//! `ncclshim_cuda_device_info` as `*mut c_void`: the crate does not mirror that struct (see
//! [`crate::probe()`]).
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs
)]

pub use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void};

include!(concat!(env!("OUT_DIR"), "/lists.rs"));

/// A row of a function list: its name, version (NCCL packed, or the driver ABI asked for) and
/// whether a library without it is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionRow {
    /// "ncclAllReduce"
    pub name: &'static str,
    /// 20300 for NCCL 2.3.0; for the driver the `cudaVersion` asked of cuGetProcAddress
    pub version: u32,
    /// a library without it is refused
    pub required: bool,
}

/// Declares C types that Rust only ever points to: the private zero-sized field keeps them from
/// being built, moved or read on this side. `name as alias` also declares the C typedef.
macro_rules! opaque {
    ($($(#[$attr:meta])* $name:ident $(as $alias:ident)?;)+) => {
        $(
            $(#[$attr])*
            #[repr(C)]
            pub struct $name {
                _opaque: [u8; 0],
            }
            $(pub type $alias = $name;)?
        )+
    };
}

// ---- status.h ----------------------------------------------------------------------------

/// `ncclshim_status` (stable values; see [`crate::Status`]).
pub type ncclshim_status = c_int;
/// `ncclshim_found_via`.
pub type ncclshim_found_via = c_int;

/// One candidate tried during a search.
#[repr(C)]
#[derive(Debug)]
pub struct ncclshim_attempt {
    pub candidate: *const c_char,
    pub how: ncclshim_found_via,
    pub result: ncclshim_status,
    pub reason: *const c_char,
}

// ---- nccl_abi.h ---------------------------------------------------------------------------

opaque! {
    /// Opaque NCCL communicator.
    ncclComm;
}
pub type ncclComm_t = *mut ncclComm;
pub type ncclResult_t = c_int;
pub type ncclDataType_t = c_int;
pub type ncclRedOp_t = c_int;
pub type ncclScalarResidence_t = c_int;

opaque! {
    /// Opaque CUDA stream, the same as the driver's.
    CUstream_st;
    /// Opaque CUDA event, the same as the driver's.
    CUevent_st;
    /// Opaque CUDA context, the same as the driver's.
    CUctx_st;
}
pub type cudaStream_t = *mut CUstream_st;
pub type CUstream = *mut CUstream_st;
pub type CUevent = *mut CUevent_st;
pub type CUcontext = *mut CUctx_st;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type ncclshim_cu_result = c_int;
pub type ncclshim_cu_device_attribute = c_int;
pub type ncclshim_cu_pointer_attribute = c_int;
pub type ncclshim_cu_stream_capture_status = c_int;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUuuid {
    pub bytes: [c_char; 16],
}

/// `ncclUniqueId`: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ncclUniqueId {
    pub internal: [c_char; 128],
}

opaque! {
    ncclWindow_vidmem;
}
pub type ncclshim_window_t = *mut ncclWindow_vidmem;
#[repr(C)]
pub struct ncclSimInfo_v22200 {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub estimatedTime: f32,
}
pub type ncclshim_sim_info_t = ncclSimInfo_v22200;
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_wait_signal_desc_t {
    pub opCnt: c_int,
    pub peer: c_int,
    pub sigIdx: c_int,
    pub ctx: c_int,
}
opaque! {
    ncclshim_param_handle;
}
pub type ncclshim_param_handle_t = *mut ncclshim_param_handle;

/// `ncclTeam_t` (device API, 2.28.3+): three ints, returned and passed by value.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ncclshim_team_t {
    pub nRanks: c_int,
    pub rank: c_int,
    pub stride: c_int,
}
/// `ncclMultimemHandle_t` (2.29.2+), passed by value.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_multimem_handle_t {
    pub mcBasePtr: *mut c_void,
}
// The device API's structs (2.28+): the table takes them by pointer only.
opaque! {
    ncclshim_dev_comm_requirements as ncclshim_dev_comm_requirements_t;
    ncclshim_dev_comm as ncclshim_dev_comm_t;
    ncclshim_dev_resource_requirements as ncclshim_dev_resource_requirements_t;
    ncclshim_lsa_barrier_handle as ncclshim_lsa_barrier_handle_t;
    ncclshim_gin_barrier_handle as ncclshim_gin_barrier_handle_t;
    ncclshim_lla2a_handle as ncclshim_lla2a_handle_t;
    ncclshim_comm_properties as ncclshim_comm_properties_t;
    ncclshim_gin_outbox_handle as ncclshim_gin_outbox_handle_t;
    ncclshim_gin_inbox_a2a_handle as ncclshim_gin_inbox_a2a_handle_t;
}

/// `struct ncclshim_nccl_config`: the newest `ncclConfig_t` layout (2.32.3, 120 bytes).
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug)]
pub struct ncclConfig_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub blocking: c_int,
    pub cgaClusterSize: c_int,
    pub minCTAs: c_int,
    pub maxCTAs: c_int,
    pub netName: *const c_char,
    pub splitShare: c_int,
    pub trafficClass: c_int,
    pub commName: *const c_char,
    pub collnetEnable: c_int,
    pub CTAPolicy: c_int,
    pub shrinkShare: c_int,
    pub nvlsCTAs: c_int,
    pub nChannelsPerNetPeer: c_int,
    pub nvlinkCentricSched: c_int,
    pub graphUsageMode: c_int,
    pub numRmaCtx: c_int,
    pub maxP2pPeers: c_int,
    pub graphStreamOrdering: c_int,
    pub launchOrderImplicit: c_int,
    pub numRmaSig: c_int,
    pub rmaEagerInit: c_int,
    pub hostCftMode: c_int,
    pub nvlsHostMode: c_int,
}

/// `ncclConfigExt_t` (2.32.3+): one vendor option of a per-collective config.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_config_ext_t {
    pub next: *mut ncclshim_config_ext_t,
    pub vendorId: c_int,
    pub optionId: c_int,
    /// The value: an int, a string or a pointer (a union in C).
    pub val: *mut c_void,
}

/// `ncclCollConfig_t` (2.32.3+, 72 bytes): the per-call options of the `...Config`
/// collectives.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_coll_config_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub ext: *mut ncclshim_config_ext_t,
    pub minCTAs: c_int,
    pub maxCTAs: c_int,
    pub nvlsCTAs: c_int,
    pub cgaClusterSize: c_int,
    pub algSelection: *const c_char,
    pub forceAlgSelection: c_int,
    pub CTAPolicy: c_int,
    pub userProfilerTag: u64,
    pub launchCompletionEvent: CUevent,
}

/// `ncclEncryptionConfig_t` (2.32.3+, 32 bytes): `ncclSetEncryption`'s argument.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_encryption_config_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    /// `ncclEncryptionMode_t`: 0 none, 1 a pre-shared key.
    pub mode: c_int,
    pub psk: *const c_char,
}

// The device API's CFT handles (2.32.3+): pointers only.
opaque! {
    ncclshim_cft_le_id as ncclshim_cft_le_id_t;
    ncclshim_cft_barrier_handle as ncclshim_cft_barrier_handle_t;
}

pub const ncclSuccess: ncclResult_t = 0;
pub const ncclInProgress: ncclResult_t = 7;

// ---- ncclshim.h --------------------------------------------------------------------------

opaque! {
    /// Opaque handle of a loaded (or not found) NCCL.
    ncclshim_nccl;
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_nccl_options {
    pub size: usize,
    pub path: *const c_char,
    pub min_version: c_int,
    pub refuse_second_copy: c_int,
}

/// One NCCL library: mapped in the process (the census) or visible to the search (the list).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_nccl_entry {
    pub path: *const c_char,
    pub version: c_int,
    pub how: ncclshim_found_via,
    pub mapped: c_int,
    pub in_program: c_int,
    pub chosen: c_int,
}

opaque! {
    /// Opaque list made by `ncclshim_nccl_list_visible`.
    ncclshim_nccl_list;
}

// ---- cuda.h ------------------------------------------------------------------------------

opaque! {
    /// Opaque handle of a loaded (or not found) CUDA driver.
    ncclshim_cuda;
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_cuda_options {
    pub size: usize,
    pub path: *const c_char,
}

pub const NCCLSHIM_CU_STREAM_DEFAULT: c_uint = 0;
pub const NCCLSHIM_CU_STREAM_NON_BLOCKING: c_uint = 1;
pub const NCCLSHIM_CU_EVENT_DEFAULT: c_uint = 0;
pub const NCCLSHIM_CU_EVENT_DISABLE_TIMING: c_uint = 2;

// ---- comm.h, symmem.h --------------------------------------------------------------------

opaque! {
    /// Opaque communicator wrapper.
    ncclshim_comm;
    /// Opaque symmetric buffer.
    ncclshim_symmem;
}
pub type ncclshim_comm_state = c_int;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_comm_options {
    pub size: usize,
    pub blocking: c_int,
}

opaque! {
    /// Opaque watchdog (`ncclshim/watchdog.h`).
    ncclshim_watchdog;
}
pub type ncclshim_watchdog_callback = unsafe extern "C" fn(
    comm: *mut ncclshim_comm,
    status: ncclshim_status,
    message: *const c_char,
    user: *mut c_void,
);
#[repr(C)]
pub struct ncclshim_watchdog_options {
    pub size: usize,
    pub interval_ms: c_int,
    pub cuda: *const ncclshim_cuda,
    pub on_failure: Option<ncclshim_watchdog_callback>,
    pub user: *mut c_void,
}
/// `ncclshim_watch_counts`: its size, then the counts, laid out as the C struct's members
/// after `size` are (all `uint64_t`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ncclshim_watch_counts {
    pub size: usize,
    pub counts: crate::WatchCounts,
}

// ---- comm_query.h, nccl_plugins.h ------------------------------------------------------------

/// `ncclshim_comm_facts`: what `ncclCommQueryProperties` says (-1: unknown).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclshim_comm_facts {
    pub size: usize,
    pub rank: c_int,
    pub nranks: c_int,
    pub cuda_device: c_int,
    pub nvml_device: c_int,
    pub device_api: c_int,
    pub multimem: c_int,
    pub gin_type: c_int,
    pub railed_gin_type: c_int,
    pub lsa_teams: c_int,
    pub host_rma: c_int,
}

/// One plugin library NCCL would try (`ncclshim_plugin`), owned by its list.
#[repr(C)]
#[derive(Debug)]
pub struct ncclshim_plugin {
    pub kind: c_int,
    pub variable: *const c_char,
    pub requested: *const c_char,
    pub path: *const c_char,
    pub exports: *const c_char,
    pub chosen: *const c_char,
    pub verdict: c_int,
    pub reason: *const c_char,
}

opaque! {
    /// Opaque list made by `ncclshim_nccl_plugins`.
    ncclshim_plugin_list;
}
