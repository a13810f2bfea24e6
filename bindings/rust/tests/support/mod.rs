//! What the crate's tests share: the meson build tree's fake NCCLs and drivers, their
//! behaviour switches (tests/fakes/fake_nccl.h, tests/fakes/fake_cuda.h), and one lock, since
//! a fake's switches are global to the process.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ncclshim::{Blocking, Communicator, Cuda, Error, Nccl, Status, UniqueId};

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlclose(handle: *mut c_void) -> c_int;
}
const RTLD_NOW: c_int = 2;
const RTLD_NOLOAD: c_int = 4;

static LOCK: Mutex<()> = Mutex::new(());

/// Held by every test that loads a fake: one at a time.
pub fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The meson build tree: NCCLSHIM_BUILD_DIR, else the one libncclshim was linked from. None
/// (the test skips) only when neither has the fakes and NCCLSHIM_BUILD_DIR is unset.
pub fn build_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("NCCLSHIM_BUILD_DIR") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("tests/fakes").is_dir(),
            "NCCLSHIM_BUILD_DIR={} has no tests/fakes: build it with meson first",
            dir.display()
        );
        return Some(dir);
    }
    let dir = PathBuf::from(env!("NCCLSHIM_RS_LIB_DIR")).join("..");
    if dir.join("tests/fakes").is_dir() {
        return Some(dir);
    }
    eprintln!("skipped: no meson build tree with the fakes (set NCCLSHIM_BUILD_DIR)");
    None
}

/// The build tree and the lock (held until the test ends), or skip the test (return) when
/// there are no fakes. `need_fakes!("2.28.9")` also opens that fake NCCL, under the lock.
#[macro_export]
macro_rules! need_fakes {
    () => {
        match support::build_dir() {
            Some(dir) => (dir, support::lock()),
            None => return,
        }
    };
    ($variant:expr) => {{
        let (dir, guard) = need_fakes!();
        let fake = support::Fake::open(&dir, $variant);
        (dir, guard, fake)
    }};
}

/// The id of the tests' communicators.
pub const ID: UniqueId = UniqueId::from_bytes([0x5a; 128]);
/// The tests' usual deadline.
pub const SECOND: Duration = Duration::from_secs(1);

/// Rank 0 of 2 on `fake`, made in `blocking` mode (not waited for).
pub fn init(fake: &Fake, blocking: Blocking) -> Communicator {
    Communicator::init(&fake.nccl, 2, &ID, 0, blocking).unwrap()
}

/// The error of `result`, which must have `status` and a message holding every one of
/// `fragments`.
pub fn expect_error<T>(result: ncclshim::Result<T>, status: Status, fragments: &[&str]) -> Error {
    let Err(error) = result else {
        panic!("expected {status:?}, got Ok");
    };
    assert_eq!(error.status(), status, "{error}");
    for fragment in fragments {
        assert!(
            error.message().contains(fragment),
            "{fragment:?} not in: {error}"
        );
    }
    error
}

/// Whether `done` became true within `limit` (polled every 2 ms).
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// `collective_calls!(comm, send, recv, stream)`: each collective of `comm` (a
/// `Communicator` or a `Watched`) with its NCCL name, as closures over small counts.
/// SAFETY of the calls: for a fake NCCL, which touches no memory.
#[macro_export]
macro_rules! collective_calls {
    ($comm:expr, $send:expr, $recv:expr, $s:expr) => {{
        use ncclshim::{DataType, RedOp};
        let (comm, send, recv, s) = (&$comm, $send, $recv, $s);
        let calls: [(&str, Box<dyn Fn() -> ncclshim::Result<()> + '_>); 6] = [
            (
                "ncclAllReduce",
                Box::new(move || unsafe {
                    comm.all_reduce_raw(send, recv, 8, DataType::Float32, RedOp::Sum, s)
                }),
            ),
            (
                "ncclBroadcast",
                Box::new(move || unsafe {
                    comm.broadcast_raw(send, recv, 8, DataType::Float32, 0, s)
                }),
            ),
            (
                "ncclAllGather",
                Box::new(move || unsafe {
                    comm.all_gather_raw(send, recv, 8, DataType::Bfloat16, s)
                }),
            ),
            (
                "ncclReduceScatter",
                Box::new(move || unsafe {
                    comm.reduce_scatter_raw(send, recv, 8, DataType::Int64, RedOp::Max, s)
                }),
            ),
            (
                "ncclSend",
                Box::new(move || unsafe { comm.send_raw(send, 8, DataType::Uint8, 1, s) }),
            ),
            (
                "ncclRecv",
                Box::new(move || unsafe { comm.recv_raw(recv, 8, DataType::Uint8, 1, s) }),
            ),
        ];
        calls
    }};
}

pub fn fake_path(build: &std::path::Path, variant: &str) -> PathBuf {
    build.join(format!("tests/fakes/libfake-nccl-{variant}.so"))
}
pub fn fake_cuda_path(build: &std::path::Path, variant: &str) -> PathBuf {
    build.join(format!("tests/fakes/libfake-cuda-{variant}.so"))
}

/// A symbol of an already loaded library.
pub fn symbol(path: &std::path::Path, name: &str) -> *mut c_void {
    let path_c = CString::new(path.to_str().unwrap()).unwrap();
    let name_c = CString::new(name).unwrap();
    // SAFETY: plain libc calls; the library stays loaded (ncclshim never dlcloses it).
    unsafe {
        let handle = dlopen(path_c.as_ptr(), RTLD_NOW | RTLD_NOLOAD);
        assert!(!handle.is_null(), "{} is not loaded", path.display());
        let address = dlsym(handle, name_c.as_ptr());
        dlclose(handle);
        assert!(!address.is_null(), "{} has no {name}", path.display());
        address
    }
}

/// One fake NCCL, opened by path, steered through its switches.
pub struct Fake {
    pub nccl: Nccl,
    pub path: PathBuf,
}

impl Fake {
    /// Open variant `variant` ("2.28.9"), reset it and switch its behaviour on.
    pub fn open(build: &std::path::Path, variant: &str) -> Fake {
        let path = fake_path(build, variant);
        let nccl = Nccl::open(Some(&path), None)
            .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        let fake = Fake { nccl, path };
        fake.call_void("fake_nccl_reset");
        fake.live(true);
        fake
    }
    fn call_void(&self, name: &str) {
        // SAFETY: the fake's documented signature.
        unsafe { std::mem::transmute::<*mut c_void, extern "C" fn()>(symbol(&self.path, name))() }
    }
    fn call_int(&self, name: &str, value: c_int) {
        // SAFETY: the fake's documented signature.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn(c_int)>(symbol(&self.path, name))(
                value,
            )
        }
    }
    pub fn live(&self, on: bool) {
        self.call_int("fake_nccl_set_live", c_int::from(on));
    }
    /// ncclCommGetAsyncError: ncclInProgress `polls` more times (< 0: forever), then `last`.
    pub fn asynchronous(&self, polls: c_int, last: c_int) {
        // SAFETY: documented signature.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn(c_int, c_int)>(symbol(
                &self.path,
                "fake_nccl_set_async",
            ))(polls, last)
        }
    }
    pub fn null_window(&self, on: bool) {
        self.call_int("fake_nccl_set_null_window", c_int::from(on));
    }
    pub fn last_error(&self, text: &str) {
        let text = CString::new(text).unwrap();
        // SAFETY: documented signature; the fake copies the text.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn(*const c_char)>(symbol(
                &self.path,
                "fake_nccl_set_last_error",
            ))(text.as_ptr())
        }
    }
    /// The next `times` calls of `function` return `result`.
    pub fn inject(&self, function: &str, result: c_int, times: c_int) {
        let function = CString::new(function).unwrap();
        // SAFETY: documented signature.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn(*const c_char, c_int, c_int)>(symbol(
                &self.path,
                "fake_nccl_inject",
            ))(function.as_ptr(), result, times)
        }
    }
    /// Calls of `function` since the reset.
    pub fn count(&self, function: &str) -> c_int {
        let function = CString::new(function).unwrap();
        // SAFETY: documented signature.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn(*const c_char) -> c_int>(symbol(
                &self.path,
                "fake_nccl_count",
            ))(function.as_ptr())
        }
    }
    fn counter(&self, name: &str) -> c_int {
        // SAFETY: documented signature.
        unsafe {
            std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(symbol(&self.path, name))()
        }
    }
    pub fn allocations(&self) -> c_int {
        self.counter("fake_nccl_live_allocations")
    }
    pub fn windows(&self) -> c_int {
        self.counter("fake_nccl_live_windows")
    }
}

/// The fake driver `variant` ("13.0"), opened by path.
pub fn fake_cuda(build: &std::path::Path, variant: &str) -> (Cuda, PathBuf) {
    let path = fake_cuda_path(build, variant);
    let cuda =
        Cuda::open(Some(&path)).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    (cuda, path)
}
