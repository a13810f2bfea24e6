//! The collectives, one row each, from which [`crate::Communicator`] and [`crate::Watched`]
//! both take their methods: a new collective is one row here.

/// `for_each_collective!(define)` calls `define!` with every row:
/// `fn method(parameters) [count, dtype] => ncclCall(arguments);`, where `count` and `dtype`
/// name the parameters that the watchdog's message shows and that the communicator checks.
/// Every method also takes the stream last, as every NCCL collective does.
macro_rules! for_each_collective {
    ($define:ident) => {
        $define! {
            /// `ncclAllReduce` of `count` elements.
            ///
            /// # Safety
            /// `send` and `recv` are device buffers of at least `count` elements of `dtype`
            /// (they may be the same), valid until the work on `stream` completes.
            fn all_reduce_raw(
                send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp
            ) [count, dtype] => ncclAllReduce(send, recv, count, dtype.raw(), op.raw());

            /// `ncclBroadcast` of `count` elements from `root`.
            ///
            /// # Safety
            /// As [`Communicator::all_reduce_raw`]; `send` is read on the root only.
            fn broadcast_raw(
                send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32
            ) [count, dtype] => ncclBroadcast(send, recv, count, dtype.raw(), root);

            /// `ncclAllGather`: `send_count` elements from each rank into `recv`
            /// (size × send_count).
            ///
            /// # Safety
            /// Device buffers of those sizes, valid until the work on `stream` completes.
            fn all_gather_raw(
                send: *const c_void, recv: *mut c_void, send_count: usize, dtype: DataType
            ) [send_count, dtype] => ncclAllGather(send, recv, send_count, dtype.raw());

            /// `ncclReduceScatter`: `send` (size × recv_count) reduced, this rank's block into
            /// `recv`.
            ///
            /// # Safety
            /// Device buffers of those sizes, valid until the work on `stream` completes.
            fn reduce_scatter_raw(
                send: *const c_void, recv: *mut c_void, recv_count: usize, dtype: DataType,
                op: RedOp
            ) [recv_count, dtype] => ncclReduceScatter(send, recv, recv_count, dtype.raw(), op.raw());

            /// `ncclSend` of `count` elements to `peer` (pair it with the peer's recv, in a
            /// group when ranks exchange both ways).
            ///
            /// # Safety
            /// A device buffer of `count` elements, valid until the work on `stream` completes.
            fn send_raw(send: *const c_void, count: usize, dtype: DataType, peer: i32)
                [count, dtype] => ncclSend(send, count, dtype.raw(), peer);

            /// `ncclRecv` of `count` elements from `peer`.
            ///
            /// # Safety
            /// As [`Communicator::send_raw`].
            fn recv_raw(recv: *mut c_void, count: usize, dtype: DataType, peer: i32)
                [count, dtype] => ncclRecv(recv, count, dtype.raw(), peer);
        }
    };
}
