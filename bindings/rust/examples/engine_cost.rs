//! The crate's cost per collective against the raw table, in one process on one GPU: a
//! one-rank all-reduce of 8 floats enqueued through `Communicator::all_reduce_in_place` (the
//! buffer's checks, the table call, ncclshim's check of the result) and through
//! `nccl.table().ncclAllReduce` directly with an engine's own test of the result, on the same
//! stream and buffer, in interleaved blocks (each side first in every other block, both at
//! the block's stack depth, one of 64), each block's time per call; the ratio of the medians.
//!
//!   engine_cost [--csv PATH] [--blocks N] [--calls N] [--fake]
//!
//! `--fake`: the NCCL loaded is one of the project's fakes (a meson build tree's
//! `tests/fakes`), switched live here, for the crate's own cost on a CPU machine, e.g. from
//! the repository root with `build` a meson build tree:
//!
//!   NCCLSHIM_NCCL_LIBRARY=$PWD/build/tests/fakes/libfake-nccl-2.28.9.so \
//!   NCCLSHIM_CUDA_LIBRARY=$PWD/build/tests/fakes/libfake-cuda-13.0.so \
//!   target/release/examples/engine_cost --fake --blocks 201 --calls 2000
//!
//! The fake's collective does the same work on both sides, so the crate's cost is the
//! difference of the two times (the ratio is nearer 1 than on a GPU, where NCCL's own call
//! is not the fake's).
//!
//! Prints (and appends to PATH) one row `per_call_ratio,VERDICT,DETAIL` of engine_job's
//! report: ok when the crate costs at most 1.02 times the raw call. Raw calls need `unsafe`,
//! which is why this is not part of engine_job (`#![forbid(unsafe_code)]`).

use std::io::Write as _;
use std::time::{Duration, Instant};

use ncclshim::{Communicator, Cuda, DataType, DeviceMemory, Error, Nccl, RedOp};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

extern "C" {
    fn dlopen(filename: *const std::ffi::c_char, flags: i32) -> *mut std::ffi::c_void;
    fn dlsym(
        handle: *mut std::ffi::c_void,
        symbol: *const std::ffi::c_char,
    ) -> *mut std::ffi::c_void;
}

/// Switch the fake NCCL that `nccl` loaded live (`fake_nccl_set_live`, tests/fakes).
fn switch_fake_live(nccl: &Nccl) -> Result<(), Error> {
    let refuse =
        |why: &str| Error::new(ncclshim::Status::InvalidArgument, format!("--fake: {why}"));
    let path = nccl.path().ok_or_else(|| refuse("no NCCL loaded"))?;
    let path = std::ffi::CString::new(path.to_string_lossy().into_owned())
        .map_err(|_| refuse("a path with a NUL"))?;
    const RTLD_NOW_NOLOAD: i32 = 2 | 4;
    // SAFETY: plain libc calls on a library already loaded (ncclshim never unloads it); the
    // symbol is the fake's `void fake_nccl_set_live(int)`.
    unsafe {
        let handle = dlopen(path.as_ptr(), RTLD_NOW_NOLOAD);
        let live = if handle.is_null() {
            handle
        } else {
            dlsym(handle, b"fake_nccl_set_live\0".as_ptr().cast())
        };
        if live.is_null() {
            return Err(refuse(
                "the NCCL loaded is not a fake (no fake_nccl_set_live)",
            ));
        }
        std::mem::transmute::<*mut std::ffi::c_void, extern "C" fn(i32)>(live)(1);
    }
    Ok(())
}

/// `run`, `frames` stack frames further down. Where the stack begins is random in every
/// process (to 16 bytes), and a call's cost can depend on it (a store to the stack slows down
/// when a store elsewhere lies a multiple of 4 KiB away): the blocks run at 64 depths, so that
/// neither side's median rests on one chance place of its stack.
#[inline(never)]
fn deeper<R>(frames: usize, run: &mut dyn FnMut() -> R) -> R {
    let pad = std::hint::black_box([0u8; 48]);
    let result = if frames == 0 {
        run()
    } else {
        deeper(frames - 1, run)
    };
    std::hint::black_box(&pad);
    result
}

fn measure(blocks: usize, calls: usize, fake: bool) -> Result<(f64, f64), Error> {
    let timeout = Duration::from_secs(60);
    let nccl = Nccl::default_handle();
    let cuda = Cuda::default_handle();
    nccl.status()?;
    if fake {
        switch_fake_live(&nccl)?;
    }
    cuda.init()?;
    cuda.activate_device(0)?;
    let comm = Communicator::init_with_deadline(&nccl, 1, &nccl.unique_id()?, 0, timeout)?;
    let stream = cuda.create_stream()?;
    let mut buffer = cuda.alloc_from(&[1f32; 8])?;
    let ptr = buffer.device_ptr() as usize as *mut std::ffi::c_void;
    let table = nccl.table();
    let raw_comm = comm.nccl_comm();
    let raw_call = || {
        // SAFETY: the buffer holds 8 floats and outlives the waits; a live communicator.
        let r = unsafe {
            (table.ncclAllReduce)(
                ptr,
                ptr,
                8,
                DataType::Float32.raw(),
                RedOp::Sum.raw(),
                raw_comm,
                stream.as_raw(),
            )
        };
        // The engine's own check: success or in progress; anything else is an error.
        match r {
            0 | 7 => Ok(()),
            _ => nccl.check_nccl(r, "ncclAllReduce"),
        }
    };
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for block in 0..blocks + 2 {
        let crate_block = |buffer: &mut ncclshim::DeviceBuffer<f32>| -> Result<f64, Error> {
            let start = Instant::now();
            for _ in 0..calls {
                comm.all_reduce_in_place(buffer, RedOp::Sum, &stream)?;
            }
            let t = start.elapsed().as_nanos() as f64 / calls as f64;
            comm.wait_stream(&cuda, &stream, timeout)?;
            Ok(t)
        };
        let raw_block = || -> Result<f64, Error> {
            let start = Instant::now();
            for _ in 0..calls {
                raw_call()?;
            }
            let t = start.elapsed().as_nanos() as f64 / calls as f64;
            comm.wait_stream(&cuda, &stream, timeout)?;
            Ok(t)
        };
        // Each side goes first in every other block, so neither gains from the order; both
        // run at the block's stack depth.
        let (t_ours, t_raw) = deeper(block % 64, &mut || {
            if block % 2 == 0 {
                let t = crate_block(&mut buffer)?;
                Ok((t, raw_block()?))
            } else {
                let t = raw_block()?;
                Ok((crate_block(&mut buffer)?, t))
            }
        })?;
        if block >= 2 {
            // the first two blocks warm up
            ours.push(t_ours);
            raw.push(t_raw);
        }
    }
    Ok((median(ours), median(raw)))
}

fn main() -> std::process::ExitCode {
    let (mut csv, mut blocks, mut calls, mut fake) = (None, 41, 500, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--fake" {
            fake = true;
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--csv", Some(v)) => csv = Some(v),
            ("--blocks", Some(v)) if v.parse::<usize>().is_ok_and(|n| n > 0) => {
                blocks = v.parse().unwrap_or(41)
            }
            ("--calls", Some(v)) if v.parse::<usize>().is_ok_and(|n| n > 0) => {
                calls = v.parse().unwrap_or(500)
            }
            _ => {
                eprintln!("usage: engine_cost [--csv PATH] [--blocks N] [--calls N] [--fake]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let (verdict, detail) = match measure(blocks, calls, fake) {
        Ok((ours, raw)) => {
            let ratio = ours / raw;
            let verdict = if ratio <= 1.02 { "ok" } else { "FAIL" };
            (verdict, format!("crate/raw {ratio:.3} (crate {ours:.1} ns; raw {raw:.1} ns per call; medians of {blocks} blocks of {calls})"))
        }
        Err(e) if e.status() == ncclshim::Status::NotFound => ("skip", e.to_string()),
        Err(e) => ("FAIL", e.to_string()),
    };
    let row = format!("per_call_ratio,{verdict},{}", detail.replace(',', ";"));
    println!("{row}");
    if let Some(path) = csv {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path);
        if let Err(e) = file.and_then(|mut f| writeln!(f, "{row}")) {
            eprintln!("engine_cost: cannot append to {path}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    if verdict == "FAIL" {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
