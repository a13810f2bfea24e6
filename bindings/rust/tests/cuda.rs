//! The CUDA driver on fake drivers: the engine's stream and event helpers, stream_ready's
//! "not ready", memory, and absent, stub and device-less drivers.

mod support;

use ncclshim::{Cuda, Event, Status};
use support::{fake_cuda, symbol};

#[repr(C)]
struct FakeControl {
    not_ready: i32,
    failing_attribute: i32,
}

#[test]
fn streams_and_events_with_the_engine_names() {
    let (build, _guard) = need_fakes!();
    let (cuda, path) = fake_cuda(&build, "13.0");
    assert_eq!(cuda.driver_version(), Some((13, 0)));
    assert_eq!(
        cuda.create_stream().unwrap_err().status(),
        Status::CudaError,
        "before cuInit"
    );
    cuda.init().unwrap();
    assert_eq!(cuda.device_count().unwrap(), 2);
    assert_eq!(
        cuda.create_stream().unwrap_err().status(),
        Status::CudaError,
        "no current context"
    );
    cuda.activate_device(0).unwrap();
    let stream = cuda.create_stream().unwrap();
    let event = cuda.create_event().unwrap();
    cuda.record_event(&event, &stream).unwrap();
    cuda.stream_wait_event(&stream, &event).unwrap();
    assert!(cuda.stream_ready(&stream).unwrap());
    // SAFETY: the fake's exported control block.
    let control = unsafe { &mut *(symbol(&path, "fake_control") as *mut FakeControl) };
    control.not_ready = 2; // cuStreamQuery answers 600 twice
    assert!(!cuda.stream_ready(&stream).unwrap());
    assert!(!cuda.stream_ready(&stream).unwrap());
    assert!(cuda.stream_ready(&stream).unwrap());
    control.not_ready = 5;
    cuda.sync_stream(&stream).unwrap();
    assert!(
        cuda.stream_ready(&stream).unwrap(),
        "sync waited for the work"
    );
    cuda.destroy_event(event).unwrap();
    assert_eq!(
        // SAFETY: NULL is refused by ncclshim before the driver sees it.
        unsafe { Event::from_raw(&cuda, std::ptr::null_mut()) }
            .destroy()
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    cuda.destroy_stream(stream).unwrap();
    cuda.release_device(0).unwrap();
}

/// The fake's call log (tests/fakes/fake_cuda.h, `fake_cuda_log`).
#[repr(C)]
struct FakeLog {
    requests: [[u64; 9]; 256],
    request_count: i32,
    calls: [[u8; 48]; 256],
    call_count: i32,
}

impl FakeLog {
    fn count(&self, name: &str) -> usize {
        let n = usize::try_from(self.call_count).unwrap().min(256);
        self.calls[..n]
            .iter()
            .filter(|c| c.split(|b| *b == 0).next() == Some(name.as_bytes()))
            .count()
    }
}

#[test]
fn streams_and_events_are_destroyed_once_by_drop_or_destroy() {
    let (build, _guard) = need_fakes!();
    // Not 13.0: streams_and_events_with_the_engine_names needs that one before cuInit.
    let (cuda, path) = fake_cuda(&build, "12.2");
    // SAFETY: the fake's exported log, used between calls on this thread (the tests hold a
    // lock); emptied so that earlier tests cannot fill it.
    let log = unsafe { &mut *(symbol(&path, "fake_log") as *mut FakeLog) };
    log.call_count = 0;
    cuda.init().unwrap();
    cuda.activate_device(0).unwrap();
    let (streams, events) = (0, 0);
    {
        let _stream = cuda.create_stream().unwrap();
        let _event = cuda.create_event().unwrap();
    }
    assert_eq!(
        log.count("cuStreamDestroy_v2"),
        streams + 1,
        "Drop destroys the stream"
    );
    assert_eq!(
        log.count("cuEventDestroy_v2"),
        events + 1,
        "Drop destroys the event"
    );
    cuda.create_stream().unwrap().destroy().unwrap();
    cuda.destroy_event(cuda.create_event().unwrap()).unwrap();
    assert_eq!(
        log.count("cuStreamDestroy_v2"),
        streams + 2,
        "destroy, then no Drop"
    );
    assert_eq!(
        log.count("cuEventDestroy_v2"),
        events + 2,
        "destroy, then no Drop"
    );
    // A released handle is the caller's; taken back, it is destroyed once more.
    let raw = cuda.create_stream().unwrap().into_raw();
    assert_eq!(
        log.count("cuStreamDestroy_v2"),
        streams + 2,
        "into_raw releases"
    );
    // SAFETY: the live stream just released, owned by nothing else.
    let stream = unsafe { ncclshim::Stream::from_raw(&cuda, raw) };
    assert_eq!(stream.as_raw(), raw);
    drop(stream);
    assert_eq!(log.count("cuStreamDestroy_v2"), streams + 3);
    // The legacy default stream is never destroyed.
    ncclshim::Stream::DEFAULT.destroy().unwrap();
    drop(ncclshim::Stream::DEFAULT);
    assert_eq!(log.count("cuStreamDestroy_v2"), streams + 3);
    cuda.release_device(0).unwrap();
}

#[test]
fn device_memory_round_trip() {
    let (build, _guard) = need_fakes!();
    let (cuda, _) = fake_cuda(&build, "12.2");
    cuda.init().unwrap();
    cuda.activate_device(1).unwrap();
    let data: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    let ptr = cuda.mem_alloc(400).unwrap();
    let mut back = vec![0f32; 100];
    // SAFETY: 400 bytes allocated above.
    unsafe {
        cuda.copy_to_device_raw(ptr, &data).unwrap();
        cuda.copy_to_host_raw(&mut back, ptr).unwrap();
        assert_eq!(back, data);
        cuda.memset_raw(ptr, 0, 400).unwrap();
        cuda.copy_to_host_raw(&mut back, ptr).unwrap();
        assert!(back.iter().all(|v| *v == 0.0));
        cuda.mem_free(ptr).unwrap();
    }
    cuda.release_device(1).unwrap();
}

#[test]
fn absent_stub_and_deviceless_drivers_are_errors() {
    let (build, _guard) = need_fakes!();
    assert_eq!(
        Cuda::open(Some("/nonexistent/libcuda.so.1".as_ref()))
            .err()
            .unwrap()
            .status(),
        Status::NotFound
    );
    let stub = Cuda::open(Some(&support::fake_cuda_path(&build, "stub")))
        .err()
        .unwrap();
    assert_eq!(stub.status(), Status::DriverUnavailable);
    let (cuda, _) = fake_cuda(&build, "no-device");
    let error = cuda.init().unwrap_err();
    assert_eq!(error.status(), Status::NoDevice);
    assert!(!error.message().is_empty());
    let not_cuda = Cuda::open(Some(&support::fake_cuda_path(&build, "not-cuda")))
        .err()
        .unwrap();
    assert_eq!(not_cuda.status(), Status::NotNccl);
}
