//! Safe Rust bindings to **ncclshim**: whatever NCCL (and CUDA driver) is installed, loaded at
//! run time, with a clear error, never a panic, when it is absent, too old or broken.
//!
//! ```no_run
//! use ncclshim::{Capability, Nccl};
//! let nccl = Nccl::default_handle();
//! match nccl.version() {
//!     Some(v) => println!("NCCL {v} from {:?}", nccl.path()),
//!     None => println!("no NCCL: {}", nccl.message()),
//! }
//! if nccl.has(Capability::SymmetricMemory) {
//!     println!("symmetric memory available");
//! }
//! ```
//!
//! - [`Nccl`]: a loaded NCCL (the process-wide default, or one opened by path): version,
//!   capabilities, the search trail, unique ids, checked results, groups, the raw table.
//! - [`Communicator`]: blocking or non-blocking communicators whose every wait has a deadline,
//!   collectives, and a `Drop` that destroys (or aborts) with a bounded wait.
//! - [`Watchdog`], [`Watched`]: hang detection on blocking communicators by a watchdog thread.
//! - [`SymmetricBuffer`]: NCCL 2.28's symmetric memory, refused cleanly on an older NCCL.
//! - [`Cuda`]: the CUDA driver, streams and events.
//! - [`Config`]: `ncclConfig_t` for any NCCL, refusing fields the loaded one would ignore.
//! - [`probe()`]: the capability report.
//! - [`ffi`]: the raw C API, its function tables generated from ncclshim's own lists.
//!
//! Every failure is an [`Error`]: ncclshim's [`Status`], and for NCCL failures NCCL's result
//! code, its text and its last error.
#![deny(missing_docs)]

#[macro_use]
mod collectives;
mod buffer;
#[macro_use]
mod typed;
#[macro_use]
mod coll_config;
mod comm;
mod comm_query;
mod config;
mod cuda;
mod error;
pub mod ffi;
mod handle;
mod nccl;
mod probe;
mod symmem;
mod types;
mod watchdog;

pub use buffer::{
    Allocation, Bf16, DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceView, DeviceViewMut,
    Element, Fp8E4M3, Fp8E5M2, Owner, F16,
};
pub use coll_config::CollConfig;
pub use comm::{Blocking, CommState, Communicator};
pub use comm_query::Answer;
pub use config::Config;
pub use cuda::{Cuda, DevicePtr, Event, Stream};
pub use error::{Error, Result, Status};
pub use ffi::{Capability, CommCapability, ConfigField};
pub use nccl::{Attempt, Nccl};
pub use probe::{probe, probe_with, CapabilityReport, CudaReport, NcclReport, ProbeReport};
pub use symmem::{Symmetric, SymmetricBuffer};
pub use typed::{Registered, WINDOW_COLL_SYMMETRIC};
pub use types::{DataType, RedOp, UniqueId, Version};
pub use watchdog::{OnFailure, WatchCounts, Watchdog, Watched};

use std::ffi::{c_char, c_int, CStr};
use std::time::Duration;

/// A C string owned by ncclshim, as a Rust string ("" for NULL).
pub(crate) fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: ncclshim returns NUL-terminated strings that outlive this call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A deadline in ncclshim's milliseconds (saturating at the largest it takes).
pub(crate) fn millis(d: Duration) -> c_int {
    d.as_millis().min(c_int::MAX as u128) as c_int
}
