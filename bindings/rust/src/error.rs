//! One error type for the whole crate.

use std::ffi::c_int;
use std::fmt;

use crate::ffi;

/// ncclshim's status codes, generated from `status.h`'s `NCCLSHIM_STATUSES` (build.rs), so
/// that the crate knows every code the library returns.
pub use crate::ffi::Status;

impl Status {
    /// The status of a C code.
    pub fn from_code(code: i32) -> Status {
        usize::try_from(code)
            .ok()
            .and_then(|i| Status::ALL.get(i).copied())
            .unwrap_or(Status::Unknown(code))
    }
    /// Its C value.
    pub fn code(self) -> i32 {
        match self {
            Status::Unknown(code) => code,
            known => Status::ALL.iter().position(|s| *s == known).unwrap_or(0) as i32,
        }
    }
    /// "NOT_FOUND", as `ncclshim_status_name` spells it.
    pub fn name(self) -> String {
        // SAFETY: any value is accepted; the string is static.
        crate::text(unsafe { ffi::ncclshim_status_name(self.code()) })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A failure: ncclshim's status and message and, when NCCL reported it, NCCL's result code,
/// NCCL's text for it and NCCL's last error (`ncclGetLastError`, 2.13+).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
    nccl_result: Option<i32>,
    nccl_text: Option<String>,
    nccl_last_error: Option<String>,
}

/// `Result<T, ncclshim::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with this status and message (no NCCL details).
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
            nccl_result: None,
            nccl_text: None,
            nccl_last_error: None,
        }
    }

    /// An error after NCCL answered `result` without doing what it said
    /// (success and no window, ...): NCCL's code and the result's name ride along.
    pub(crate) fn answered(status: Status, message: impl Into<String>, result: i32) -> Error {
        let mut error = Error::new(status, message);
        error.nccl_result = Some(result);
        error.nccl_text = usize::try_from(result)
            .ok()
            .and_then(|i| RESULT_NAMES.get(i))
            .map(|name| name.to_string());
        error
    }

    /// The calling thread's last ncclshim failure (`ncclshim_last_error`) with `status`; for
    /// NCCL_ERROR, with NCCL's details.
    pub(crate) fn last(status: c_int) -> Error {
        // SAFETY: never NULL; the thread's own buffer.
        let message = crate::text(unsafe { ffi::ncclshim_last_error() });
        let mut error = Error::new(Status::from_code(status), message);
        if error.status == Status::NcclError {
            if let Some((code, name)) = returned_without_result(&error.message) {
                error.nccl_result = Some(code);
                error.nccl_text = Some(name.to_string());
            } else if let Some(details) = NcclDetails::of(&error.message) {
                // SAFETY: no arguments; reads the calling thread's own value.
                let code = unsafe { ffi::ncclshim_last_nccl_result() };
                error.nccl_result = (code != 0).then_some(code);
                error.nccl_text = details.text;
                error.nccl_last_error = details.last_error;
            }
        }
        error
    }

    /// ncclshim's status.
    pub fn status(&self) -> Status {
        self.status
    }
    /// The whole message, naming what failed and why.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// NCCL's result code (`ncclResult_t`) when NCCL answered: an NCCL call that failed, or
    /// one that returned success (0) or in-progress (7) without doing its job.
    pub fn nccl_result(&self) -> Option<i32> {
        self.nccl_result
    }
    /// NCCL's text for that result (`ncclGetErrorString`); where NCCL returned a result that is
    /// not a failure but did not do what it said (success and no communicator), the result's name.
    pub fn nccl_text(&self) -> Option<&str> {
        self.nccl_text.as_deref()
    }
    /// NCCL's last error (`ncclGetLastError`), when the loaded NCCL has it and said something.
    pub fn nccl_last_error(&self) -> Option<&str> {
        self.nccl_last_error.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// NCCL's texts in an NCCL_ERROR message; the result code itself comes from
/// `ncclshim_last_nccl_result`, never from the text.
struct NcclDetails {
    text: Option<String>,
    last_error: Option<String>,
}

const LAST_ERROR: &str = "; NCCL's last error: ";

impl NcclDetails {
    /// Read from ncclshim_nccl_check's message, whose form is documented:
    /// "CALL failed: NAME (CODE): TEXT; NCCL's last error: LAST", or
    /// "CALL failed: unknown result code CODE...". None for an NCCL_ERROR of another form
    /// ("... returned ncclSuccess but no communicator"): no failing NCCL call behind it, and
    /// the thread's last NCCL result, which only ncclshim_nccl_check sets, is an older one.
    fn of(message: &str) -> Option<NcclDetails> {
        let (_, after) = message.split_once(" failed: ")?;
        let (what, last_error) = match after.split_once(LAST_ERROR) {
            Some((what, last)) => (what, Some(last.to_string())),
            None => (after, None),
        };
        let text = if what.starts_with("unknown result code ") {
            Some(what.to_string())
        } else {
            what.split_once("): ").map(|(_, text)| text.to_string())
        };
        Some(NcclDetails { text, last_error })
    }
}

/// NCCL's result names, in code order (`ncclResult_t`).
const RESULT_NAMES: &[&str] = &[
    "ncclSuccess",
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclInternalError",
    "ncclInvalidArgument",
    "ncclInvalidUsage",
    "ncclRemoteError",
    "ncclInProgress",
];

/// "CALL returned NAME but no communicator" (NCCL answered, without a failure): NAME's code
/// and NAME.
fn returned_without_result(message: &str) -> Option<(i32, &'static str)> {
    let (_, after) = message.split_once(" returned ")?;
    let (name, _) = after.split_once(" but no ")?;
    let code = RESULT_NAMES.iter().position(|n| *n == name)?;
    Some((code as i32, RESULT_NAMES[code]))
}

/// OK, or the thread's last error with that status.
pub(crate) fn check(status: c_int) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}
