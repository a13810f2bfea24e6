//! An inference engine's whole NCCL job on the crate, in safe Rust: the module that once bound
//! 19 NCCL functions by hand and called each in `unsafe` (README.md, "An engine's module,
//! before and after"). One rank on GPU 0: every case checked on the host, one line each.
//!
//!   engine_job [--csv PATH] [--count N] [--timeout-ms MS]
//!
//! Prints `case,verdict,detail` (verdict ok, FAIL or skip) and writes it to PATH too. Exit
//! codes: 0 every case ok or skipped, 1 a case failed, 2 wrong usage. Without NCCL or a GPU,
//! `load` fails saying why, and every other case is skipped.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::time::{Duration, Instant};

use ncclshim::{
    Bf16, Blocking, Capability, Communicator, Cuda, Error, Nccl, RedOp, Status, SymmetricBuffer,
    Watchdog, WINDOW_COLL_SYMMETRIC,
};

/// The report: its rows, each also written to the CSV file at once (a crash leaves the rows
/// before it).
struct Cases {
    rows: Vec<(String, &'static str, String)>,
    csv: Option<std::fs::File>,
}

impl Cases {
    /// Run `case`: Ok(detail) is ok, Err a failure; `skip` (Some(reason)) skips it.
    fn run(
        &mut self,
        name: &str,
        skip: Option<String>,
        case: impl FnOnce() -> Result<String, Error>,
    ) {
        let (verdict, detail) = match skip {
            Some(reason) => ("skip", reason),
            None => match case() {
                Ok(detail) => ("ok", detail),
                Err(e) => ("FAIL", e.to_string()),
            },
        };
        let row = format!("{name},{verdict},{}", detail.replace(['\n', ','], ";"));
        println!("{row}");
        if let Some(file) = &mut self.csv {
            if let Err(e) = writeln!(file, "{row}").and_then(|_| file.flush()) {
                eprintln!("engine_job: cannot write the CSV: {e}");
            }
        }
        self.rows.push((name.to_string(), verdict, detail));
    }
}

fn wrong(what: &str, detail: String) -> Error {
    Error::new(Status::NcclError, format!("{what}: {detail}"))
}

/// `got` must equal `want` element by element.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), Error> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        None => Err(wrong(
            what,
            format!("{} elements, expected {}", got.len(), want.len()),
        )),
        Some(i) => Err(wrong(
            what,
            format!("element {i} is {:?}, expected {:?}", got[i], want[i]),
        )),
    }
}

fn main() -> std::process::ExitCode {
    let mut csv = None;
    let mut count = 1 << 20;
    let mut timeout = Duration::from_secs(60);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--csv", Some(v)) => csv = Some(v),
            ("--count", Some(v)) if v.parse::<usize>().is_ok_and(|n| n >= 1) => {
                count = v.parse().unwrap_or(1)
            }
            ("--timeout-ms", Some(v)) if v.parse::<u64>().is_ok() => {
                timeout = Duration::from_millis(v.parse().unwrap_or(60_000))
            }
            _ => {
                eprintln!("usage: engine_job [--csv PATH] [--count N] [--timeout-ms MS]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let csv = match csv.map(|path| open_csv(&path)).transpose() {
        Ok(file) => file,
        Err(message) => {
            eprintln!("engine_job: {message}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut cases = Cases {
        rows: Vec::new(),
        csv,
    };
    if let Err(e) = job(&mut cases, count, timeout) {
        cases.run("job", None, || Err(e));
    }
    if cases.rows.iter().any(|(_, verdict, _)| *verdict == "FAIL") {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// The CSV file at `path` (its folder made), with its header.
fn open_csv(path: &str) -> Result<std::fs::File, String> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut file = std::fs::File::create(path).map_err(|e| format!("cannot write {path}: {e}"))?;
    writeln!(file, "case,verdict,detail").map_err(|e| format!("cannot write {path}: {e}"))?;
    Ok(file)
}

fn job(cases: &mut Cases, count: usize, timeout: Duration) -> Result<(), Error> {
    // The engine's start-up: NCCL and the driver found at run time, device 0 current.
    let nccl = Nccl::default_handle();
    let cuda = Cuda::default_handle();
    let mut missing = None;
    cases.run("load", None, || {
        nccl.status()?;
        cuda.status()?;
        cuda.init()?;
        cuda.activate_device(0)?;
        Ok(format!("{}; {}", nccl.message(), cuda.message()))
    });
    if cases.rows.last().is_some_and(|r| r.1 != "ok") {
        missing = Some("no NCCL or no GPU (see load)".to_string());
    }
    if let Some(reason) = missing {
        for case in [
            "init",
            "all_reduce",
            "broadcast",
            "all_gather",
            "reduce_scatter",
            "send_recv",
            "bf16",
            "symmetric",
            "register",
            "window",
            "streams_events",
            "watched_1000",
            "bad_root",
            "teardown",
        ] {
            cases.run(case, Some(reason.clone()), || Ok(String::new()));
        }
        return Ok(());
    }

    // Non-blocking init polled within a deadline: the engine's loop on ncclCommGetAsyncError.
    let id = nccl.unique_id()?;
    let start = Instant::now();
    let comm = Communicator::init_with_deadline(&nccl, 1, &id, 0, timeout)?;
    cases.run("init", None, || {
        Ok(format!(
            "rank {} of {} in {:?}, {:?}",
            comm.rank(),
            comm.size(),
            start.elapsed(),
            comm.blocking()
        ))
    });
    let stream = cuda.create_stream()?;
    let host: Vec<f32> = (0..count).map(|i| (i % 97) as f32).collect();

    cases.run("all_reduce", None, || {
        let send = cuda.alloc_from(&host)?;
        let mut recv = cuda.alloc::<f32>(count)?;
        comm.all_reduce(&send, &mut recv, RedOp::Sum, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("all_reduce", &cuda.to_vec(&recv)?, &host)?;
        Ok(format!("{count} f32 summed over 1 rank"))
    });
    cases.run("broadcast", None, || {
        let mut buffer = cuda.alloc_from(&host)?;
        comm.broadcast_in_place(&mut buffer, 0, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("broadcast", &cuda.to_vec(&buffer)?, &host)?;
        Ok("in place from root 0".into())
    });
    cases.run("all_gather", None, || {
        let send = cuda.alloc_from(&host[..count / 2])?;
        let mut recv = cuda.alloc::<f32>(count / 2)?;
        comm.all_gather(&send, &mut recv, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("all_gather", &cuda.to_vec(&recv)?, &host[..count / 2])?;
        Ok(format!("{} f32 per rank", count / 2))
    });
    cases.run("reduce_scatter", None, || {
        let send = cuda.alloc_from(&host)?;
        let mut recv = cuda.alloc::<f32>(count)?;
        comm.reduce_scatter(&send, &mut recv, RedOp::Max, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("reduce_scatter", &cuda.to_vec(&recv)?, &host)?;
        Ok("max".into())
    });
    cases.run("send_recv", None, || {
        let send = cuda.alloc_from(&host)?;
        let mut recv = cuda.alloc::<f32>(count)?;
        // To itself, in a group (the engine's pipeline exchange).
        nccl.group(&[&comm], timeout, || {
            comm.send(&send.view(..count / 2)?, 0, &stream)?;
            comm.recv(&mut recv.view_mut(..count / 2)?, 0, &stream)
        })?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same(
            "send_recv",
            &cuda.to_vec(&recv.view(..count / 2)?)?,
            &host[..count / 2],
        )?;
        Ok("a view of half, grouped".into())
    });
    cases.run("bf16", None, || {
        let values: Vec<Bf16> = host.iter().map(|v| Bf16::from_f32(*v)).collect();
        let mut buffer = cuda.alloc_from(&values)?;
        comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("bf16", &cuda.to_vec(&buffer)?, &values)?;
        Ok("ncclBfloat16 in place".into())
    });
    let symmetric = nccl.capability_reason(Capability::SymmetricMemory);
    cases.run("symmetric", symmetric, || {
        let mut buffer = SymmetricBuffer::<f32>::alloc(&comm, count, &stream, timeout)?;
        cuda.copy_to_device(&host, &mut buffer)?;
        comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)?;
        comm.wait_stream(&cuda, &stream, timeout)?;
        same("symmetric", &cuda.to_vec(&buffer)?, &host)?;
        let bytes = buffer.registered_bytes();
        buffer.free(timeout)?;
        Ok(format!("ncclMemAlloc + window; {bytes} bytes registered"))
    });
    cases.run(
        "register",
        nccl.capability_reason(Capability::UserBufferRegister),
        || {
            let mut buffer = nccl.alloc::<f32>(count)?;
            cuda.copy_to_device(&host, &mut buffer)?;
            {
                let mut registered = comm.register(&mut buffer)?;
                comm.all_reduce_in_place(&mut registered, RedOp::Sum, &stream)?;
                comm.wait_stream(&cuda, &stream, timeout)?;
            } // deregistered here
            same("register", &cuda.to_vec(&buffer)?, &host)?;
            Ok("ncclCommRegister guard, deregistered on drop".into())
        },
    );
    cases.run(
        "window",
        nccl.capability_reason(Capability::WindowRegister),
        || {
            let mut buffer = nccl.alloc::<f32>(count)?;
            cuda.copy_to_device(&host, &mut buffer)?;
            {
                let mut window = comm.register_window(&mut buffer, WINDOW_COLL_SYMMETRIC)?;
                comm.all_reduce_in_place(&mut window, RedOp::Sum, &stream)?;
                comm.wait_stream(&cuda, &stream, timeout)?;
            }
            same("window", &cuda.to_vec(&buffer)?, &host)?;
            // Without the flag NCCL may register the window or decline it (success with no
            // window: UNAVAILABLE, documented); anything else is a failure.
            let plain = match comm.register_window(&mut buffer, 0) {
                Ok(_) => "registered".to_string(),
                Err(e) if e.status() == Status::Unavailable => format!("declined by NCCL ({e})"),
                Err(e) => return Err(e),
            };
            Ok(format!(
                "ncclCommWindowRegister guard on ncclMemAlloc memory, symmetric flag; \
                 without the flag: {plain}"
            ))
        },
    );
    cases.run("streams_events", None, || {
        let other = cuda.create_stream()?;
        let event = cuda.create_event()?;
        let mut buffer = cuda.alloc::<f32>(count)?;
        cuda.copy_to_device_async(&host, &mut buffer, &stream)?;
        comm.all_reduce_in_place(&mut buffer, RedOp::Sum, &stream)?;
        cuda.record_event(&event, &stream)?;
        cuda.stream_wait_event(&other, &event)?;
        let mut back = vec![0f32; count];
        cuda.copy_to_host_async(&buffer, &mut back, &other)?;
        cuda.sync_stream(&other)?;
        let ready = cuda.stream_ready(&stream)?;
        same("streams_events", &back, &host)?;
        cuda.destroy_event(event)?;
        cuda.destroy_stream(other)?;
        Ok(format!(
            "copies on streams ordered by an event; first stream ready: {ready}"
        ))
    });
    cases.run(
        "watched_1000",
        nccl.capability_reason(Capability::Split),
        || {
            let dog = Watchdog::start_with(Duration::from_millis(10), Some(&cuda), None)?;
            let split = Communicator::init(&nccl, 1, &nccl.unique_id()?, 0, Blocking::Split)?;
            split.wait(timeout)?;
            let watched = dog.watch(split, timeout).map_err(|(e, _)| e)?;
            let mut buffer = cuda.alloc_from(&host[..1024])?;
            let start = Instant::now();
            for round in 0..10 {
                // A stream per round, destroyed once synced: the watchdog never uses it again.
                let round_stream = cuda.create_stream()?;
                for _ in 0..100 {
                    watched.all_reduce_in_place(&mut buffer, RedOp::Max, &round_stream)?;
                }
                cuda.sync_stream(&round_stream)?;
                drop(round_stream);
                if let Some(failure) = watched.failure() {
                    return Err(wrong("watched_1000", format!("round {round}: {failure}")));
                }
            }
            let elapsed = start.elapsed();
            std::thread::sleep(Duration::from_millis(50));
            let counts = watched.counts()?;
            if counts.recorded != 1000 || watched.failure().is_some() {
                return Err(wrong(
                    "watched_1000",
                    format!("{counts:?}; failure {:?}", watched.failure()),
                ));
            }
            same("watched_1000", &cuda.to_vec(&buffer)?, &host[..1024])?;
            Ok(format!("1000 recorded in {elapsed:?}; {counts:?}"))
        },
    );
    cases.run("bad_root", None, || {
        let send = cuda.alloc::<f32>(16)?;
        let mut recv = cuda.alloc::<f32>(16)?;
        match comm.broadcast(&send, &mut recv, 3, &stream) {
            Err(e)
                if e.status() == Status::InvalidArgument
                    && comm.state() == ncclshim::CommState::Ready =>
            {
                Ok(format!(
                    "refused before NCCL; communicator still ready: {}",
                    e.message()
                ))
            }
            Err(e) => Err(e),
            Ok(()) => Err(wrong("bad_root", "root 3 of 1 rank was accepted".into())),
        }
    });
    let start = Instant::now();
    drop(stream);
    drop(comm);
    let took = start.elapsed();
    cases.run("teardown", None, || {
        if took > timeout {
            return Err(wrong("teardown", format!("{took:?}")));
        }
        Ok(format!("stream and communicator dropped in {took:?}"))
    });
    Ok(())
}
