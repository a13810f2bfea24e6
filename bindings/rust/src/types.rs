//! NCCL's value types: unique ids, data types, reduction operators, versions.

use std::fmt;

use crate::ffi;
pub use crate::ffi::{DataType, RedOp};

/// NCCL's `ncclUniqueId`: 128 bytes that rank 0 makes and every rank passes, by value, to
/// [`crate::Communicator::init`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId([u8; 128]);

impl UniqueId {
    /// The id's size in bytes, `NCCL_UNIQUE_ID_BYTES`.
    pub const BYTES: usize = 128;

    /// An id from bytes received from rank 0 (over a socket, a file, MPI, ...).
    pub const fn from_bytes(bytes: [u8; 128]) -> UniqueId {
        UniqueId(bytes)
    }
    /// The bytes to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }
    /// NCCL's C struct, by value.
    pub fn to_raw(&self) -> ffi::ncclUniqueId {
        ffi::ncclUniqueId {
            internal: self.0.map(|b| b as ffi::c_char),
        }
    }
    /// From NCCL's C struct.
    pub fn from_raw(raw: &ffi::ncclUniqueId) -> UniqueId {
        UniqueId(raw.internal.map(|c| c as u8))
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId(")?;
        self.0[..8].iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, "...)")
    }
}

// DataType and RedOp themselves are generated from nccl_abi.h's enums (gen_lists.rs).
impl DataType {
    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 | DataType::Float8e4m3 | DataType::Float8e5m2 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }
    /// Whether it needs NCCL's fp8 types (2.24+: the `fp8` capability).
    #[inline]
    pub fn is_fp8(self) -> bool {
        matches!(self, DataType::Float8e4m3 | DataType::Float8e5m2)
    }
}

/// An NCCL version, packed as MAJOR*10000 + MINOR*100 + PATCH (2.28.9 is 22809).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(u32);

impl Version {
    /// 2.28.9 from (2, 28, 9).
    ///
    /// # Panics
    /// When `minor` or `patch` is over 99, or `major` over 429495: the packed form has no
    /// room for them, and (2, 100, 0) would silently be 3.0.0. In a constant, a compile error.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        assert!(
            minor < 100 && patch < 100 && major <= (u32::MAX - 9999) / 10000,
            "Version::new: minor and patch must be below 100 (major at most 429495)"
        );
        Version(major * 10000 + minor * 100 + patch)
    }
    /// From the packed form (22809).
    pub const fn from_packed(packed: u32) -> Version {
        Version(packed)
    }
    /// The packed form.
    pub fn packed(self) -> u32 {
        self.0
    }
    /// 2
    pub fn major(self) -> u32 {
        self.0 / 10000
    }
    /// 28
    pub fn minor(self) -> u32 {
        self.0 / 100 % 100
    }
    /// 9
    pub fn patch(self) -> u32 {
        self.0 % 100
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major(), self.minor(), self.patch())
    }
}
