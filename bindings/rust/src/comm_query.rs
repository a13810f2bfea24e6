//! What one communicator can really do, and whether the ranks of a job agree
//! (`ncclshim/comm_query.h`).

use std::ffi::c_char;
use std::os::raw::c_int;
use std::time::Duration;

use crate::error::{check, Result};
use crate::ffi::{self, CommCapability};
use crate::{millis, Communicator};

/// An answer that may not be known (`ncclshim_answer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The communicator does not have it.
    No,
    /// It has it.
    Yes,
    /// The loaded NCCL cannot say (2.28 has no `ncclCommQueryProperties`).
    Unknown,
}

impl Communicator {
    /// Collective: one all-gather of every rank's fingerprint (NCCL version and build, driver,
    /// plugins, the NCCL_* settings that must match), bounded by `timeout`. UNAVAILABLE
    /// naming every rank that differs from rank 0.
    pub fn agree(&self, timeout: Duration) -> Result<()> {
        // SAFETY: ours; collective, like every NCCL call on it (documented by the C API).
        check(unsafe { ffi::ncclshim_comm_agree(self.raw(), millis(timeout)) })
    }

    /// Whether this communicator has `cap`, and why. The first ask of
    /// [`CommCapability::SymmetricWindows`] is collective (a trial registration).
    pub fn has(&self, cap: CommCapability, timeout: Duration) -> Result<(Answer, String)> {
        let mut answer: c_int = 2;
        let mut reason = [0 as c_char; 512];
        // SAFETY: ours; valid out-pointers and the buffer's size.
        check(unsafe {
            ffi::ncclshim_comm_has(
                self.raw(),
                cap as c_int,
                millis(timeout),
                &mut answer,
                reason.as_mut_ptr(),
                reason.len(),
            )
        })?;
        let answer = match answer {
            0 => Answer::No,
            1 => Answer::Yes,
            _ => Answer::Unknown,
        };
        // SAFETY: ncclshim terminates the text within the buffer.
        Ok((answer, crate::text(reason.as_ptr())))
    }
}
