//! The raw C API of libncclshim, for what the safe layer does not cover.
//!
//! The function tables (`ncclshim_nccl_table`, `ncclshim_cuda_table`), the rows of the lists,
//! [`Capability`], [`CommCapability`], [`ConfigField`] and [`Status`] are generated at build
//! time from ncclshim's X-macro lists, [`DataType`] and [`RedOp`] from NCCL's enums in
//! `nccl_abi.h` (see build.rs). The `ncclshim_*` functions and the types below are written from the headers
//! in `include/ncclshim/`; the crate's tests compare them with the library's export list and
//! the C structs' layout, so that a change on the C side fails a test. Everything here follows
//! the C headers' documentation; every call is `unsafe`.
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
/// being built, moved or read on this side.
macro_rules! opaque {
    ($($(#[$attr:meta])* $name:ident;)+) => {
        $(
            $(#[$attr])*
            #[repr(C)]
            pub struct $name {
                _opaque: [u8; 0],
            }
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
    ncclshim_dev_comm_requirements;
    ncclshim_dev_comm;
    ncclshim_dev_resource_requirements;
    ncclshim_lsa_barrier_handle;
    ncclshim_gin_barrier_handle;
    ncclshim_lla2a_handle;
    ncclshim_comm_properties;
    ncclshim_gin_outbox_handle;
    ncclshim_gin_inbox_a2a_handle;
}
pub type ncclshim_dev_comm_requirements_t = ncclshim_dev_comm_requirements;
pub type ncclshim_dev_comm_t = ncclshim_dev_comm;
pub type ncclshim_dev_resource_requirements_t = ncclshim_dev_resource_requirements;
pub type ncclshim_lsa_barrier_handle_t = ncclshim_lsa_barrier_handle;
pub type ncclshim_gin_barrier_handle_t = ncclshim_gin_barrier_handle;
pub type ncclshim_lla2a_handle_t = ncclshim_lla2a_handle;
pub type ncclshim_comm_properties_t = ncclshim_comm_properties;
pub type ncclshim_gin_outbox_handle_t = ncclshim_gin_outbox_handle;
pub type ncclshim_gin_inbox_a2a_handle_t = ncclshim_gin_inbox_a2a_handle;

/// `struct ncclshim_nccl_config`: the newest `ncclConfig_t` layout (2.30.7, 96 bytes).
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
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ncclshim_watch_counts {
    pub size: usize,
    pub recorded: u64,
    pub captured: u64,
    pub replays: u64,
    pub events: u64,
    pub catch_ups: u64,
    pub outstanding: u64,
}

#[link(name = "ncclshim")]
extern "C" {
    // status.h
    pub fn ncclshim_status_name(status: ncclshim_status) -> *const c_char;
    pub fn ncclshim_status_string(status: ncclshim_status) -> *const c_char;
    pub fn ncclshim_found_via_name(via: ncclshim_found_via) -> *const c_char;
    pub fn ncclshim_last_error() -> *const c_char;

    // ncclshim.h
    pub fn ncclshim_nccl_function_name(fn_: c_int) -> *const c_char;
    pub fn ncclshim_nccl_function_version(fn_: c_int) -> c_int;
    pub fn ncclshim_nccl_function_required(fn_: c_int) -> c_int;
    pub fn ncclshim_capability_name(cap: c_int) -> *const c_char;
    pub fn ncclshim_capability_version(cap: c_int) -> c_int;
    pub fn ncclshim_capability_from_name(name: *const c_char) -> c_int;
    pub fn ncclshim_library_version() -> *const c_char;
    pub fn ncclshim_decode_version(
        code: c_int,
        major: *mut c_int,
        minor: *mut c_int,
        patch: *mut c_int,
    ) -> c_int;
    pub fn ncclshim_format_version(packed: c_int, buf: *mut c_char, size: usize) -> *const c_char;
    pub fn ncclshim_nccl_open(
        options: *const ncclshim_nccl_options,
        out: *mut *mut ncclshim_nccl,
    ) -> ncclshim_status;
    pub fn ncclshim_nccl_close(nccl: *mut ncclshim_nccl);
    pub fn ncclshim_nccl_default() -> *mut ncclshim_nccl;
    pub fn ncclshim_nccl_status(nccl: *const ncclshim_nccl) -> ncclshim_status;
    pub fn ncclshim_nccl_message(nccl: *const ncclshim_nccl) -> *const c_char;
    pub fn ncclshim_nccl_functions(nccl: *const ncclshim_nccl) -> *const ncclshim_nccl_table;
    pub fn ncclshim_nccl_version(nccl: *const ncclshim_nccl) -> c_int;
    pub fn ncclshim_nccl_version_code(nccl: *const ncclshim_nccl) -> c_int;
    pub fn ncclshim_nccl_path(nccl: *const ncclshim_nccl) -> *const c_char;
    pub fn ncclshim_nccl_found_via(nccl: *const ncclshim_nccl) -> ncclshim_found_via;
    pub fn ncclshim_nccl_preloaded(nccl: *const ncclshim_nccl) -> c_int;
    pub fn ncclshim_nccl_build(nccl: *mut ncclshim_nccl) -> *const c_char;
    pub fn ncclshim_nccl_capabilities(nccl: *const ncclshim_nccl) -> u64;
    pub fn ncclshim_nccl_has(nccl: *const ncclshim_nccl, cap: c_int) -> c_int;
    pub fn ncclshim_nccl_has_function(nccl: *const ncclshim_nccl, fn_: c_int) -> c_int;
    pub fn ncclshim_nccl_unexpectedly_missing(nccl: *const ncclshim_nccl, fn_: c_int) -> c_int;
    pub fn ncclshim_nccl_capability_reason(
        nccl: *const ncclshim_nccl,
        cap: c_int,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;
    pub fn ncclshim_nccl_fingerprint_content(
        nccl: *mut ncclshim_nccl,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;
    pub fn ncclshim_nccl_census_count(nccl: *const ncclshim_nccl) -> usize;
    pub fn ncclshim_nccl_census_entry(
        nccl: *const ncclshim_nccl,
        index: usize,
    ) -> *const ncclshim_nccl_entry;
    pub fn ncclshim_nccl_list_visible(
        chosen: *const ncclshim_nccl,
        out: *mut *mut ncclshim_nccl_list,
    ) -> ncclshim_status;
    pub fn ncclshim_nccl_list_count(list: *const ncclshim_nccl_list) -> usize;
    pub fn ncclshim_nccl_list_entry(
        list: *const ncclshim_nccl_list,
        index: usize,
    ) -> *const ncclshim_nccl_entry;
    pub fn ncclshim_nccl_list_free(list: *mut ncclshim_nccl_list);
    pub fn ncclshim_nccl_fingerprint(
        nccl: *mut ncclshim_nccl,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;
    pub fn ncclshim_nccl_attempt_count(nccl: *const ncclshim_nccl) -> usize;
    pub fn ncclshim_nccl_attempt(
        nccl: *const ncclshim_nccl,
        index: usize,
    ) -> *const ncclshim_attempt;
    pub fn ncclshim_init() -> ncclshim_status;
    pub fn ncclshim_version() -> c_int;
    pub fn ncclshim_table() -> *const ncclshim_nccl_table;
    pub fn ncclshim_nccl_config_init(config: *mut c_void, config_size: usize) -> ncclshim_status;
    pub fn ncclshim_nccl_config_check(
        nccl: *const ncclshim_nccl,
        config_size: usize,
        field: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_nccl_config_set_int(
        nccl: *const ncclshim_nccl,
        config: *mut c_void,
        config_size: usize,
        field: c_int,
        value: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_nccl_config_set_str(
        nccl: *const ncclshim_nccl,
        config: *mut c_void,
        config_size: usize,
        field: c_int,
        value: *const c_char,
    ) -> ncclshim_status;
    pub fn ncclshim_config_field_name(field: c_int) -> *const c_char;
    pub fn ncclshim_nccl_result_string(result: c_int) -> *const c_char;
    pub fn ncclshim_nccl_result_known(result: c_int) -> c_int;
    pub fn ncclshim_nccl_type_name(dtype: ncclDataType_t) -> *const c_char;

    // cuda.h
    pub fn ncclshim_cuda_function_name(fn_: c_int) -> *const c_char;
    pub fn ncclshim_cuda_function_version(fn_: c_int) -> c_int;
    pub fn ncclshim_cuda_function_required(fn_: c_int) -> c_int;
    pub fn ncclshim_cuda_open(
        options: *const ncclshim_cuda_options,
        out: *mut *mut ncclshim_cuda,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_close(cuda: *mut ncclshim_cuda);
    pub fn ncclshim_cuda_default() -> *mut ncclshim_cuda;
    pub fn ncclshim_cuda_status(cuda: *const ncclshim_cuda) -> ncclshim_status;
    pub fn ncclshim_cuda_message(cuda: *const ncclshim_cuda) -> *const c_char;
    pub fn ncclshim_cuda_functions(cuda: *const ncclshim_cuda) -> *const ncclshim_cuda_table;
    pub fn ncclshim_cuda_path(cuda: *const ncclshim_cuda) -> *const c_char;
    pub fn ncclshim_cuda_found_via(cuda: *const ncclshim_cuda) -> ncclshim_found_via;
    pub fn ncclshim_cuda_preloaded(cuda: *const ncclshim_cuda) -> c_int;
    pub fn ncclshim_cuda_driver_version(
        cuda: *const ncclshim_cuda,
        major: *mut c_int,
        minor: *mut c_int,
    ) -> c_int;
    pub fn ncclshim_cuda_format_version(
        version: c_int,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;
    pub fn ncclshim_cuda_is_stub(cuda: *const ncclshim_cuda) -> c_int;
    pub fn ncclshim_cuda_bootstrap_used(cuda: *const ncclshim_cuda) -> c_int;
    pub fn ncclshim_cuda_bootstrap_name(bootstrap: c_int) -> *const c_char;
    pub fn ncclshim_cuda_has_function(cuda: *const ncclshim_cuda, fn_: c_int) -> c_int;
    pub fn ncclshim_cuda_function_abi(cuda: *const ncclshim_cuda, fn_: c_int) -> c_int;
    pub fn ncclshim_cuda_attempt_count(cuda: *const ncclshim_cuda) -> usize;
    pub fn ncclshim_cuda_attempt(
        cuda: *const ncclshim_cuda,
        index: usize,
    ) -> *const ncclshim_attempt;
    pub fn ncclshim_cuda_init(cuda: *mut ncclshim_cuda) -> ncclshim_status;
    pub fn ncclshim_cuda_result_name(cuda: *const ncclshim_cuda, result: c_int) -> *const c_char;
    pub fn ncclshim_cuda_result_string(cuda: *const ncclshim_cuda, result: c_int) -> *const c_char;
    pub fn ncclshim_cuda_device_count(
        cuda: *const ncclshim_cuda,
        count: *mut c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_device_activate(
        cuda: *const ncclshim_cuda,
        ordinal: c_int,
        ctx: *mut CUcontext,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_device_release(
        cuda: *const ncclshim_cuda,
        ordinal: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_stream_create(
        cuda: *const ncclshim_cuda,
        flags: c_uint,
        stream: *mut CUstream,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_stream_destroy(
        cuda: *const ncclshim_cuda,
        stream: CUstream,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_stream_query(
        cuda: *const ncclshim_cuda,
        stream: CUstream,
        ready: *mut c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_stream_synchronize(
        cuda: *const ncclshim_cuda,
        stream: CUstream,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_stream_wait_event(
        cuda: *const ncclshim_cuda,
        stream: CUstream,
        event: CUevent,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_event_create(
        cuda: *const ncclshim_cuda,
        flags: c_uint,
        event: *mut CUevent,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_event_destroy(
        cuda: *const ncclshim_cuda,
        event: CUevent,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_event_record(
        cuda: *const ncclshim_cuda,
        event: CUevent,
        stream: CUstream,
    ) -> ncclshim_status;
    pub fn ncclshim_cuda_support_name(support: c_int) -> *const c_char;
    /// `info` points to an `ncclshim_cuda_device_info` whose `size` the caller set; the crate
    /// does not mirror that struct (see [`crate::probe()`]).
    pub fn ncclshim_cuda_describe_device(
        cuda: *const ncclshim_cuda,
        ordinal: c_int,
        info: *mut c_void,
    ) -> ncclshim_status;

    // comm.h
    pub fn ncclshim_nccl_result_name(result: c_int) -> *const c_char;
    pub fn ncclshim_last_nccl_result() -> c_int;
    pub fn ncclshim_nccl_check(
        nccl: *mut ncclshim_nccl,
        result: ncclResult_t,
        call: *const c_char,
    ) -> ncclshim_status;
    pub fn ncclshim_nccl_wait(
        nccl: *mut ncclshim_nccl,
        comm: ncclComm_t,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_state_name(state: ncclshim_comm_state) -> *const c_char;
    pub fn ncclshim_comm_init(
        nccl: *mut ncclshim_nccl,
        nranks: c_int,
        id: *const ncclUniqueId,
        rank: c_int,
        options: *const ncclshim_comm_options,
        out: *mut *mut ncclshim_comm,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_state_of(comm: *const ncclshim_comm) -> ncclshim_comm_state;
    pub fn ncclshim_comm_raw(comm: *const ncclshim_comm) -> ncclComm_t;
    pub fn ncclshim_comm_library(comm: *const ncclshim_comm) -> *mut ncclshim_nccl;
    pub fn ncclshim_comm_rank(comm: *const ncclshim_comm) -> c_int;
    pub fn ncclshim_comm_size(comm: *const ncclshim_comm) -> c_int;
    pub fn ncclshim_comm_wait(comm: *mut ncclshim_comm, timeout_ms: c_int) -> ncclshim_status;
    pub fn ncclshim_comm_check(
        comm: *mut ncclshim_comm,
        result: ncclResult_t,
        call: *const c_char,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_group_end(
        nccl: *mut ncclshim_nccl,
        comms: *const *mut ncclshim_comm,
        count: c_int,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_wait_stream(
        comm: *mut ncclshim_comm,
        cuda: *const ncclshim_cuda,
        stream: CUstream,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_destroy(comm: *mut ncclshim_comm, timeout_ms: c_int) -> ncclshim_status;
    pub fn ncclshim_comm_abort(comm: *mut ncclshim_comm, timeout_ms: c_int) -> ncclshim_status;
    pub fn ncclshim_comm_free(comm: *mut ncclshim_comm);
    // watchdog.h
    pub fn ncclshim_watchdog_start(
        options: *const ncclshim_watchdog_options,
        out: *mut *mut ncclshim_watchdog,
    ) -> ncclshim_status;
    /// INVALID_ARGUMENT (nothing stopped) on the watchdog's own thread; OK otherwise.
    pub fn ncclshim_watchdog_stop(dog: *mut ncclshim_watchdog) -> ncclshim_status;
    pub fn ncclshim_comm_watch(
        comm: *mut ncclshim_comm,
        dog: *mut ncclshim_watchdog,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_unwatch(comm: *mut ncclshim_comm) -> ncclshim_status;
    pub fn ncclshim_comm_record(
        comm: *mut ncclshim_comm,
        stream: CUstream,
        call: *const c_char,
        count: usize,
        dtype: ncclDataType_t,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_record_graph(
        comm: *mut ncclshim_comm,
        stream: CUstream,
        label: *const c_char,
        ops: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_watch_counts(
        comm: *mut ncclshim_comm,
        out: *mut ncclshim_watch_counts,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_failure(comm: *const ncclshim_comm) -> *const c_char;

    // symmem.h
    pub fn ncclshim_symmem_alloc(
        comm: *mut ncclshim_comm,
        size: usize,
        stream: cudaStream_t,
        timeout_ms: c_int,
        out: *mut *mut ncclshim_symmem,
    ) -> ncclshim_status;
    pub fn ncclshim_symmem_alloc_in_group(
        comm: *mut ncclshim_comm,
        size: usize,
        stream: cudaStream_t,
        out: *mut *mut ncclshim_symmem,
    ) -> ncclshim_status;
    pub fn ncclshim_symmem_complete(
        mem: *mut ncclshim_symmem,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_symmem_ptr(mem: *const ncclshim_symmem) -> *mut c_void;
    pub fn ncclshim_symmem_size(mem: *const ncclshim_symmem) -> usize;
    pub fn ncclshim_symmem_window(mem: *const ncclshim_symmem) -> ncclshim_window_t;
    pub fn ncclshim_symmem_free(mem: *mut ncclshim_symmem, timeout_ms: c_int) -> ncclshim_status;
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

#[link(name = "ncclshim")]
extern "C" {
    // comm_query.h
    pub fn ncclshim_comm_capability_name(cap: c_int) -> *const c_char;
    pub fn ncclshim_comm_capability_from_name(name: *const c_char) -> c_int;
    pub fn ncclshim_comm_has(
        comm: *mut ncclshim_comm,
        cap: c_int,
        timeout_ms: c_int,
        answer: *mut c_int,
        reason: *mut c_char,
        size: usize,
    ) -> ncclshim_status;
    pub fn ncclshim_comm_query_facts(
        comm: *mut ncclshim_comm,
        facts: *mut ncclshim_comm_facts,
    ) -> ncclshim_status;
    pub fn ncclshim_gin_type_name(gin_type: c_int) -> *const c_char;
    pub fn ncclshim_comm_agree(comm: *mut ncclshim_comm, timeout_ms: c_int) -> ncclshim_status;
    pub fn ncclshim_nccl_agree(
        nccl: *mut ncclshim_nccl,
        comm: ncclComm_t,
        nranks: c_int,
        timeout_ms: c_int,
    ) -> ncclshim_status;
    pub fn ncclshim_agree_record(
        nccl: *mut ncclshim_nccl,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;
    pub fn ncclshim_devapi_explain(
        nccl: *const ncclshim_nccl,
        reqs: *const c_void,
        buf: *mut c_char,
        size: usize,
    ) -> *const c_char;

    // nccl_plugins.h
    pub fn ncclshim_nccl_plugins(
        nccl: *const ncclshim_nccl,
        out: *mut *mut ncclshim_plugin_list,
    ) -> ncclshim_status;
    pub fn ncclshim_plugin_list_count(list: *const ncclshim_plugin_list) -> usize;
    pub fn ncclshim_plugin_list_entry(
        list: *const ncclshim_plugin_list,
        index: usize,
    ) -> *const ncclshim_plugin;
    pub fn ncclshim_plugin_list_free(list: *mut ncclshim_plugin_list);
    pub fn ncclshim_plugin_list_has_problem(list: *const ncclshim_plugin_list) -> c_int;
    pub fn ncclshim_plugin_abi_accepted(symbol: *const c_char, nccl_version: c_int) -> c_int;
    pub fn ncclshim_plugin_kind_name(kind: c_int) -> *const c_char;
    pub fn ncclshim_plugin_verdict_name(verdict: c_int) -> *const c_char;
}
