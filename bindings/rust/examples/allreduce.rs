//! The crate's multi-GPU example, the Rust twin of `examples/allreduce.c`: all-reduce and
//! broadcast of f32 between processes, one per GPU, in symmetric memory where the NCCL has it
//! (2.28+), checked on the host and timed, every wait bounded.
//!
//!   allreduce [--count FLOATS] [--iters N] [--timeout-ms MS] [--blocking] [--ranks N]
//!
//! Started alone it starts itself once per visible GPU (or --ranks times) and hands each rank
//! NCCL's unique id on its stdin. Started by a launcher (RANK, WORLD_SIZE, LOCAL_RANK and
//! NCCL_COMM_ID set on every rank) it is one rank of that job. Without NCCL or a GPU it says
//! so and exits 0. Exit codes: 0 passed (or nothing to do), 1 a rank failed, 2 wrong usage.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use ncclshim::{
    Capability, Communicator, Cuda, DeviceMemory, DeviceMemoryMut, Error, Nccl, RedOp, Stream,
    SymmetricBuffer, UniqueId,
};

const CHILD_RANK: &str = "NCCLSHIM_RS_EXAMPLE_RANK";
const CHILD_RANKS: &str = "NCCLSHIM_RS_EXAMPLE_RANKS";

#[derive(Clone, Debug)]
struct Job {
    rank: i32,
    nranks: i32,
    local_rank: i32,
    count: usize,
    iters: u32,
    timeout: Duration,
    blocking: bool,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("ncclshim rust example: {message}");
    eprintln!(
        "usage: allreduce [--count FLOATS] [--iters N] [--timeout-ms MS] [--blocking] [--ranks N]"
    );
    ExitCode::from(2)
}

fn parse(job: &mut Job, ranks: &mut i32) -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--blocking" {
            job.blocking = true;
            continue;
        }
        let value: u32 = args
            .next()
            .and_then(|v| v.parse().ok())
            .filter(|v| (1..=1 << 30).contains(v))
            .ok_or("option values are whole numbers >= 1")?;
        match arg.as_str() {
            "--count" => job.count = value as usize,
            "--iters" => job.iters = value,
            "--timeout-ms" => job.timeout = Duration::from_millis(value.into()),
            "--ranks" => *ranks = value as i32,
            _ => return Err(format!("unknown option {arg}")),
        }
    }
    Ok(())
}

fn env_int(name: &str) -> Option<i32> {
    std::env::var(name).ok()?.parse().ok().filter(|v| *v >= 0)
}

fn main() -> ExitCode {
    let mut job = Job {
        rank: 0,
        nranks: 1,
        local_rank: 0,
        count: 1 << 20,
        iters: 20,
        timeout: Duration::from_secs(60),
        blocking: false,
    };
    let mut ranks = 0;
    if let Err(message) = parse(&mut job, &mut ranks) {
        return usage(&message);
    }
    let nccl = Nccl::default_handle();
    if let Err(e) = nccl.status() {
        println!(
            "ncclshim rust example: no NCCL ({}): nothing to do",
            e.message()
        );
        return ExitCode::SUCCESS;
    }
    if !nccl.has(Capability::NonblockingInit) {
        job.blocking = true;
    }
    if let (Some(rank), Some(nranks)) = (env_int(CHILD_RANK), env_int(CHILD_RANKS)) {
        return child(
            &nccl,
            Job {
                rank,
                nranks,
                local_rank: rank,
                ..job
            },
        );
    }
    println!(
        "ncclshim rust example: {}; {} communicators",
        nccl.message(),
        if job.blocking {
            "blocking"
        } else {
            "non-blocking"
        }
    );
    if let (Some(rank), Some(nranks)) = (env_int("RANK"), env_int("WORLD_SIZE")) {
        return launched(
            &nccl,
            Job {
                rank,
                nranks,
                local_rank: env_int("LOCAL_RANK").unwrap_or(0),
                ..job
            },
        );
    }
    spawn_ranks(&nccl, job, ranks)
}

/// One rank of a launcher's job: the id comes from NCCL_COMM_ID, the same on every rank.
fn launched(nccl: &Nccl, job: Job) -> ExitCode {
    if std::env::var_os("NCCL_COMM_ID").is_none() {
        return usage("RANK and WORLD_SIZE are set but NCCL_COMM_ID is not: export NCCL_COMM_ID=<host of rank 0>:<port> on every rank");
    }
    match nccl.unique_id() {
        Ok(id) => finish(&job, run_rank(nccl, &job, &id)),
        Err(e) => finish(&job, Err(e)),
    }
}

/// A rank this program started: the id arrives on stdin.
fn child(nccl: &Nccl, job: Job) -> ExitCode {
    let mut bytes = [0u8; UniqueId::BYTES];
    if let Err(e) = std::io::stdin().read_exact(&mut bytes) {
        eprintln!("rank {}: no unique id came from the parent: {e}", job.rank);
        return ExitCode::FAILURE;
    }
    finish(&job, run_rank(nccl, &job, &UniqueId::from_bytes(bytes)))
}

fn finish(job: &Job, outcome: Result<Option<()>, Error>) -> ExitCode {
    match outcome {
        Ok(Some(())) => ExitCode::SUCCESS,
        Ok(None) => {
            println!("rank {}: no GPU: nothing to do", job.rank);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {}: {e}", job.rank);
            ExitCode::FAILURE
        }
    }
}

/// Started alone: one child process per GPU, each given the id on its stdin.
fn spawn_ranks(nccl: &Nccl, mut job: Job, ranks: i32) -> ExitCode {
    let cuda = Cuda::default_handle();
    let gpus = match cuda.init().and_then(|_| cuda.device_count()) {
        Ok(n) if n > 0 => n,
        Ok(_) | Err(_) => {
            println!(
                "ncclshim rust example: no GPU ({}): nothing to do",
                cuda.message()
            );
            return ExitCode::SUCCESS;
        }
    };
    job.nranks = if ranks > 0 && ranks < gpus {
        ranks
    } else {
        gpus
    };
    println!(
        "ncclshim rust example: {gpus} GPU(s), starting {} rank(s)",
        job.nranks
    );
    let me = match std::env::current_exe() {
        Ok(path) => path,
        Err(e) => return usage(&format!("cannot find this program: {e}")),
    };
    let mut children = Vec::new();
    for rank in 0..job.nranks {
        let spawned = Command::new(&me)
            .args(std::env::args().skip(1))
            .env(CHILD_RANK, rank.to_string())
            .env(CHILD_RANKS, job.nranks.to_string())
            .stdin(Stdio::piped())
            .spawn();
        match spawned {
            Ok(child) => children.push(child),
            Err(e) => eprintln!("ncclshim rust example: starting rank {rank}: {e}"),
        }
    }
    // Made after the ranks started; its bootstrap root lives in this process until they end.
    let id = nccl.unique_id();
    if let Err(e) = &id {
        eprintln!("ncclshim rust example: {e}");
    }
    for child in &mut children {
        let mut stdin = child.stdin.take();
        if let (Ok(id), Some(pipe)) = (&id, stdin.as_mut()) {
            let _ = pipe.write_all(id.as_bytes()); // a rank without its id reports it
        }
    }
    let passed = children
        .iter_mut()
        .map(|c| c.wait().map(|s| s.success()).unwrap_or(false))
        .filter(|ok| *ok)
        .count();
    if passed == job.nranks as usize {
        println!("ncclshim rust example: all {passed} rank(s) passed");
        ExitCode::SUCCESS
    } else {
        println!(
            "ncclshim rust example: {} of {} rank(s) failed",
            job.nranks as usize - passed,
            job.nranks
        );
        ExitCode::FAILURE
    }
}

/// Ok(None) when this machine has no GPU for the rank.
fn run_rank(nccl: &Nccl, job: &Job, id: &UniqueId) -> Result<Option<()>, Error> {
    let cuda = Cuda::default_handle();
    match cuda.init() {
        Err(e)
            if matches!(
                e.status(),
                ncclshim::Status::DriverUnavailable | ncclshim::Status::NoDevice
            ) =>
        {
            return Ok(None)
        }
        other => other?,
    }
    cuda.activate_device(job.local_rank)?;
    let stream = cuda.create_stream()?;
    let outcome = with_stream(nccl, &cuda, job, id, &stream);
    let _ = cuda.destroy_stream(stream);
    let _ = cuda.release_device(job.local_rank);
    outcome.map(Some)
}

fn with_stream(
    nccl: &Nccl,
    cuda: &Cuda,
    job: &Job,
    id: &UniqueId,
    stream: &Stream,
) -> Result<(), Error> {
    let mut comm = if job.blocking {
        Communicator::init(nccl, job.nranks, id, job.rank, ncclshim::Blocking::Yes)?
    } else {
        Communicator::init_with_deadline(nccl, job.nranks, id, job.rank, job.timeout)?
    };
    comm.set_timeout(job.timeout);
    let outcome = collectives(&mut comm, cuda, job, stream);
    match outcome {
        // Every rank passed its checks: tear down collectively, abort if that fails.
        Ok(()) => {
            if let Err(e) = comm.destroy(job.timeout) {
                let _ = comm.abort(job.timeout);
                return Err(e);
            }
            Ok(())
        }
        Err(e) => {
            let _ = comm.abort(job.timeout);
            Err(e)
        }
    }
}

fn collectives(
    comm: &mut Communicator,
    cuda: &Cuda,
    job: &Job,
    stream: &Stream,
) -> Result<(), Error> {
    let shared: &Communicator = comm;
    // Symmetric buffers where the NCCL has them, else cuMemAlloc; freed on drop.
    if shared.nccl().has(Capability::SymmetricMemory) {
        let mut send = SymmetricBuffer::<f32>::alloc(shared, job.count, stream, job.timeout)?;
        let mut recv = SymmetricBuffer::<f32>::alloc(shared, job.count, stream, job.timeout)?;
        return run(shared, cuda, job, stream, &mut send, &mut recv, "symmetric");
    }
    let reason = shared
        .nccl()
        .capability_reason(Capability::SymmetricMemory)
        .unwrap_or_default();
    println!(
        "rank {}: no symmetric memory ({reason}): plain device memory",
        job.rank
    );
    let (mut send, mut recv) = (cuda.alloc::<f32>(job.count)?, cuda.alloc::<f32>(job.count)?);
    run(shared, cuda, job, stream, &mut send, &mut recv, "plain")
}

fn sum_value(nranks: i32, i: usize) -> f32 {
    (nranks * (nranks + 1) / 2) as f32 * (i % 5 + 1) as f32
}
fn bcast_value(i: usize) -> f32 {
    1000.0 + (i % 13) as f32
}

/// Run `op` `iters` times, wait for the stream; the time per call in microseconds.
fn timed(
    comm: &Communicator,
    cuda: &Cuda,
    job: &Job,
    stream: &Stream,
    iters: u32,
    op: &mut dyn FnMut() -> Result<(), Error>,
) -> Result<f64, Error> {
    let start = Instant::now();
    for _ in 0..iters {
        op()?;
    }
    comm.wait_stream(cuda, stream, job.timeout)?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(iters))
}

fn check(
    cuda: &Cuda,
    what: &str,
    recv: &impl DeviceMemory<Elem = f32>,
    expected: impl Fn(usize) -> f32,
) -> Result<(), Error> {
    let host = cuda.to_vec(recv)?;
    match host.iter().enumerate().find(|(i, v)| **v != expected(*i)) {
        None => Ok(()),
        Some((i, v)) => Err(Error::new(
            ncclshim::Status::NcclError,
            format!("{what}: element {i} is {v}, expected {}", expected(i)),
        )),
    }
}

fn run(
    comm: &Communicator,
    cuda: &Cuda,
    job: &Job,
    stream: &Stream,
    send: &mut impl DeviceMemoryMut<Elem = f32>,
    recv: &mut impl DeviceMemoryMut<Elem = f32>,
    memory: &str,
) -> Result<(), Error> {
    let bytes = job.count * std::mem::size_of::<f32>();
    let n = job.nranks;
    let host: Vec<f32> = (0..job.count)
        .map(|i| (job.rank + 1) as f32 * (i % 5 + 1) as f32)
        .collect();
    cuda.copy_to_device(&host, send)?;
    cuda.fill_bytes(recv, 0xff)?; // NaN until written
    let mut all_reduce = || comm.all_reduce(&*send, &mut *recv, RedOp::Sum, stream);
    timed(comm, cuda, job, stream, 1, &mut all_reduce)?;
    let ar_us = timed(comm, cuda, job, stream, job.iters, &mut all_reduce)?;
    check(cuda, "all-reduce", recv, |i| sum_value(n, i))?;

    let host: Vec<f32> = (0..job.count).map(bcast_value).collect();
    if job.rank == 0 {
        cuda.copy_to_device(&host, send)?;
    }
    cuda.fill_bytes(recv, 0xff)?;
    let mut broadcast = || comm.broadcast(&*send, &mut *recv, 0, stream);
    timed(comm, cuda, job, stream, 1, &mut broadcast)?;
    let bc_us = timed(comm, cuda, job, stream, job.iters, &mut broadcast)?;
    check(cuda, "broadcast", recv, bcast_value)?;

    let nf = f64::from(n);
    println!(
        "rank {}/{} (GPU {}): all-reduce {} floats {:.1} us ({:.2} GB/s bus), broadcast {:.1} us ({:.2} GB/s bus): results OK [rust, {memory} memory]",
        job.rank,
        n,
        job.local_rank,
        job.count,
        ar_us,
        bytes as f64 * 2.0 * (nf - 1.0) / nf / ar_us / 1e3,
        bc_us,
        bytes as f64 / bc_us / 1e3
    );
    Ok(())
}
