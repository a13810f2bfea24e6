//! `ncclConfig_t` for any NCCL, refusing a field the loaded one would silently ignore.

use std::ffi::{c_void, CString};
use std::mem::size_of;

use crate::error::{check, Error, Result, Status};
use crate::ffi;
use crate::{ConfigField, Nccl};

/// An `ncclConfig_t` made by `ncclshim_nccl_config_init` (every field undefined, so that
/// every NCCL from 2.14 on reads it right), filled by a builder that refuses (UNAVAILABLE,
/// naming the field and both versions) a field the loaded NCCL predates. It owns the strings
/// it points to. Pass [`Config::as_mut_ptr`] to `ncclCommInitRankConfig`, `ncclCommSplit`, ...
///
/// ```no_run
/// # fn main() -> ncclshim::Result<()> {
/// let nccl = ncclshim::Nccl::default_handle();
/// let mut config = nccl.config().blocking(false)?.comm_name("experts")?;
/// let raw: *mut ncclshim::ffi::ncclConfig_t = config.as_mut_ptr();
/// # let _ = raw; Ok(()) }
/// ```
pub struct Config {
    nccl: Nccl,
    raw: Box<ffi::ncclConfig_t>,
    strings: Vec<CString>,
}

impl Config {
    /// A config with every field undefined (NCCL's defaults).
    pub fn new(nccl: &Nccl) -> Config {
        // SAFETY: all-zero is a valid value of the C struct; config_init then fills it.
        let mut raw: Box<ffi::ncclConfig_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: the struct and its size; OK for any size that reaches `blocking`.
        unsafe {
            ffi::ncclshim_nccl_config_init(
                &mut *raw as *mut _ as *mut c_void,
                size_of::<ffi::ncclConfig_t>(),
            )
        };
        Config {
            nccl: nccl.clone(),
            raw,
            strings: Vec::new(),
        }
    }

    /// Set an int field. UNAVAILABLE when the loaded NCCL would ignore it (or none is loaded),
    /// INVALID_ARGUMENT for a string field.
    pub fn set_int(mut self, field: ConfigField, value: i32) -> Result<Config> {
        let size = size_of::<ffi::ncclConfig_t>();
        let config = &mut *self.raw as *mut _ as *mut c_void;
        // SAFETY: a config made by config_init, and its size.
        check(unsafe {
            ffi::ncclshim_nccl_config_set_int(self.nccl.raw(), config, size, field as i32, value)
        })?;
        Ok(self)
    }

    /// Set a string field (`netName`, `commName`); the config keeps the string.
    pub fn set_str(mut self, field: ConfigField, value: &str) -> Result<Config> {
        let value = CString::new(value).map_err(|_| {
            Error::new(
                Status::InvalidArgument,
                format!("config value {value:?} contains a NUL byte"),
            )
        })?;
        let size = size_of::<ffi::ncclConfig_t>();
        let config = &mut *self.raw as *mut _ as *mut c_void;
        // SAFETY: as above; the string's heap buffer lives as long as self.strings.
        check(unsafe {
            ffi::ncclshim_nccl_config_set_str(
                self.nccl.raw(),
                config,
                size,
                field as i32,
                value.as_ptr(),
            )
        })?;
        self.strings.push(value);
        Ok(self)
    }

    /// `blocking`: false makes init and operations return at once (NCCL 2.14+).
    pub fn blocking(self, blocking: bool) -> Result<Config> {
        self.set_int(ConfigField::Blocking, i32::from(blocking))
    }
    /// `commName` (NCCL 2.27+).
    pub fn comm_name(self, name: &str) -> Result<Config> {
        self.set_str(ConfigField::CommName, name)
    }

    /// The C struct as filled.
    pub fn raw(&self) -> &ffi::ncclConfig_t {
        &self.raw
    }
    /// A pointer for NCCL's functions; valid while the config lives.
    pub fn as_mut_ptr(&mut self) -> *mut ffi::ncclConfig_t {
        &mut *self.raw
    }
}

impl ConfigField {
    /// Its C name ("blocking").
    pub fn name(self) -> String {
        // SAFETY: any value; static string.
        crate::text(unsafe { ffi::ncclshim_config_field_name(self as i32) })
    }
}
