//! The capability report: what `ncclshim-probe` prints, as data.

use std::fmt;
use std::path::PathBuf;

use crate::ffi;
use crate::{text, Capability, Cuda, Error, Nccl, Version};

impl Capability {
    /// Its name ("symmetric-memory").
    pub fn name(self) -> String {
        // SAFETY: any value; static string.
        text(unsafe { ffi::ncclshim_capability_name(self as i32) })
    }
    /// The NCCL version that unlocks it.
    pub fn version(self) -> Version {
        // SAFETY: any value.
        Version::from_packed(unsafe { ffi::ncclshim_capability_version(self as i32) }.max(0) as u32)
    }
    /// The capability called `name`.
    pub fn from_name(name: &str) -> Option<Capability> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: a terminated string.
        let index = unsafe { ffi::ncclshim_capability_from_name(name.as_ptr()) };
        usize::try_from(index)
            .ok()
            .and_then(|i| Capability::ALL.get(i).copied())
    }
    /// Its bit in `ncclshim_nccl_capabilities`.
    pub fn bit(self) -> u64 {
        1u64 << (self as u32)
    }
}

/// One capability in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityReport {
    /// Which.
    pub capability: Capability,
    /// Whether the loaded NCCL has it.
    pub present: bool,
    /// Why not, when absent.
    pub reason: Option<String>,
}

/// The NCCL part of the report.
#[derive(Clone, Debug)]
pub struct NcclReport {
    /// Ok, or why no NCCL is loaded (with every place searched).
    pub status: Result<(), Error>,
    /// The file loaded.
    pub path: Option<PathBuf>,
    /// How it was found.
    pub found_via: String,
    /// Its version.
    pub version: Option<Version>,
    /// Its build tag ("+cuda13.0").
    pub build: String,
    /// Every capability, present or not.
    pub capabilities: Vec<CapabilityReport>,
    /// Functions its version should have but the library lacks.
    pub unexpectedly_missing: Vec<&'static str>,
    /// The string ranks compare before creating a communicator.
    pub fingerprint: String,
}

/// The CUDA driver part of the report (no cuInit is made, so no device facts).
#[derive(Clone, Debug)]
pub struct CudaReport {
    /// Ok, or why no driver is usable.
    pub status: Result<(), Error>,
    /// The driver file.
    pub path: Option<PathBuf>,
    /// The driver's CUDA version (major, minor).
    pub driver_version: Option<(i32, i32)>,
    /// Whether the file found is the toolkit's stub.
    pub is_stub: bool,
}

/// What NCCL and which CUDA driver this process would use, and what they can do.
#[derive(Clone, Debug)]
pub struct ProbeReport {
    /// NCCL.
    pub nccl: NcclReport,
    /// The CUDA driver.
    pub cuda: CudaReport,
}

/// The report for the process-wide default NCCL and driver. Makes no CUDA call beyond the
/// driver's version (no cuInit), so it is safe before fork.
pub fn probe() -> ProbeReport {
    probe_with(&Nccl::default_handle(), &Cuda::default_handle())
}

/// The report for these handles.
pub fn probe_with(nccl: &Nccl, cuda: &Cuda) -> ProbeReport {
    let capabilities = Capability::ALL
        .iter()
        .map(|&capability| CapabilityReport {
            capability,
            present: nccl.has(capability),
            reason: nccl.capability_reason(capability),
        })
        .collect();
    let unexpectedly_missing = ffi::NCCL_FUNCTIONS
        .iter()
        .map(|row| row.name)
        .filter(|name| nccl.unexpectedly_missing(name))
        .collect();
    ProbeReport {
        nccl: NcclReport {
            status: nccl.status(),
            path: nccl.path(),
            found_via: nccl.found_via(),
            version: nccl.version(),
            build: nccl.build(),
            capabilities,
            unexpectedly_missing,
            fingerprint: nccl.fingerprint(),
        },
        cuda: CudaReport {
            status: cuda.status(),
            path: cuda.path(),
            driver_version: cuda.driver_version(),
            is_stub: cuda.is_stub(),
        },
    }
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.nccl;
        match (&n.status, n.version) {
            (Ok(()), Some(v)) => {
                writeln!(
                    f,
                    "NCCL: {v}{} from {} ({})",
                    n.build,
                    n.path.as_deref().unwrap_or_else(|| "?".as_ref()).display(),
                    n.found_via
                )?;
                for c in &n.capabilities {
                    let mark = if c.present { "yes" } else { "no " };
                    writeln!(
                        f,
                        "  {mark} {:<22} {}",
                        c.capability.name(),
                        c.reason.as_deref().unwrap_or("")
                    )?;
                }
                if !n.unexpectedly_missing.is_empty() {
                    writeln!(
                        f,
                        "  missing although its version has them: {}",
                        n.unexpectedly_missing.join(", ")
                    )?;
                }
                writeln!(f, "  fingerprint {}", n.fingerprint)?;
            }
            (status, _) => {
                let why = status.as_ref().err().map_or("no version", |e| e.message());
                writeln!(f, "NCCL: not available ({why})")?;
            }
        }
        let c = &self.cuda;
        match (&c.status, c.driver_version) {
            (Ok(()), Some((major, minor))) => {
                writeln!(
                    f,
                    "CUDA driver: {major}.{minor} from {}",
                    c.path.as_deref().unwrap_or_else(|| "?".as_ref()).display()
                )
            }
            (status, _) => writeln!(
                f,
                "CUDA driver: not available ({})",
                status.as_ref().err().map_or("no version", |e| e.message())
            ),
        }
    }
}
