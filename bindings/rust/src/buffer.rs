//! Typed device memory: the element types NCCL knows, the traits through which any device
//! memory takes part in a collective, owning buffers (freed on drop) and borrowed views.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use crate::error::{Error, Result, Status};
use crate::{ffi, Cuda, DataType, DevicePtr, Nccl};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL reduces and moves: its [`DataType`] is known at compile time, so a
/// collective's buffers agree on it by their types. Every bit pattern is a valid value (device
/// memory comes back to the host as it is). Sealed: NCCL's types are the ones listed here.
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// NCCL's type for it.
    const DATA_TYPE: DataType;
}

macro_rules! elements {
    ($($(#[$doc:meta])* $ty:ty => $dtype:ident;)*) => {
        $(
            impl sealed::Sealed for $ty {}
            $(#[$doc])*
            impl Element for $ty {
                const DATA_TYPE: DataType = DataType::$dtype;
            }
        )*
    };
}

/// IEEE half precision (`ncclFloat16`), as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(pub u16);
/// bfloat16 (`ncclBfloat16`), as its bits: the upper half of an `f32`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);
/// fp8 e4m3 (`ncclFloat8e4m3`, NCCL 2.24+), as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp8E4M3(pub u8);
/// fp8 e5m2 (`ncclFloat8e5m2`, NCCL 2.24+), as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp8E5M2(pub u8);

impl Bf16 {
    /// The bfloat16 nearest `value` (round to nearest even; NaN stays NaN).
    pub fn from_f32(value: f32) -> Bf16 {
        let bits = value.to_bits();
        if value.is_nan() {
            return Bf16((bits >> 16) as u16 | 0x40);
        }
        let round = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(round) >> 16) as u16)
    }
    /// Its value as an `f32` (exact).
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}

elements! {
    i8 => Int8;
    u8 => Uint8;
    i32 => Int32;
    u32 => Uint32;
    i64 => Int64;
    u64 => Uint64;
    f32 => Float32;
    f64 => Float64;
    F16 => Float16;
    Bf16 => Bfloat16;
    Fp8E4M3 => Float8e4m3;
    Fp8E5M2 => Float8e5m2;
}

/// Device memory that a collective may read: `len()` elements of `Elem` at `device_ptr()`.
/// Implemented by [`DeviceBuffer`], [`DeviceView`], [`DeviceViewMut`] and [`Registered`]; an
/// engine's own device memory type takes part by implementing it:
///
/// ```
/// use ncclshim::{DeviceMemory, DeviceMemoryMut, DevicePtr};
///
/// /// The engine's own allocation, made by its own allocator.
/// struct EngineTensor {
///     address: DevicePtr,
///     elements: usize,
/// }
///
/// // SAFETY: the engine's allocator gives `elements` f32 at `address`, freed only when the
/// // tensor is dropped, and a `&mut EngineTensor` is the only way to write them.
/// unsafe impl DeviceMemory for EngineTensor {
///     type Elem = f32;
///     fn device_ptr(&self) -> DevicePtr {
///         self.address
///     }
///     fn len(&self) -> usize {
///         self.elements
///     }
/// }
/// // SAFETY: as above.
/// unsafe impl DeviceMemoryMut for EngineTensor {}
/// ```
///
/// # Safety
/// While `self` is borrowed, `device_ptr()` is the address of `len()` elements of `Elem` of
/// device memory that stays allocated (memory of the device the communicator or stream it is
/// used with works on), and both answers stay the same.
pub unsafe trait DeviceMemory {
    /// The element type.
    type Elem: Element;
    /// The device address of the first element.
    fn device_ptr(&self) -> DevicePtr;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether it holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The size in bytes.
    fn bytes(&self) -> usize {
        self.len() * std::mem::size_of::<Self::Elem>()
    }
    /// The elements of `range`, borrowed: INVALID_ARGUMENT when the range is not within it.
    fn view(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, Self::Elem>> {
        let (start, end) = bounds(&range, self.len())?;
        Ok(DeviceView {
            ptr: element_at::<Self::Elem>(self.device_ptr(), start),
            len: end - start,
            _borrow: PhantomData,
        })
    }
}

/// Device memory that a collective may write: a `&mut` to it is the only way to write its
/// elements while the borrow lasts.
///
/// # Safety
/// As [`DeviceMemory`], and nothing reachable through a shared borrow of `self` writes the
/// elements.
pub unsafe trait DeviceMemoryMut: DeviceMemory {
    /// The elements of `range`, borrowed mutably: INVALID_ARGUMENT when the range is not
    /// within it.
    fn view_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceViewMut<'_, Self::Elem>> {
        let (start, end) = bounds(&range, self.len())?;
        Ok(DeviceViewMut {
            ptr: element_at::<Self::Elem>(self.device_ptr(), start),
            len: end - start,
            _borrow: PhantomData,
        })
    }
}

fn element_at<T>(base: DevicePtr, index: usize) -> DevicePtr {
    base + (index * std::mem::size_of::<T>()) as DevicePtr
}

/// `range` of a thing of `len` elements as `start..end`, or INVALID_ARGUMENT.
fn bounds(range: &impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::new(
            Status::InvalidArgument,
            format!(
                "range {:?}..{:?} is not within the {len} elements",
                range.start_bound(),
                range.end_bound()
            ),
        )),
    }
}

/// Elements of device memory borrowed for reading (a sub-range of a buffer, or memory made
/// elsewhere through [`DeviceView::from_raw`]).
#[derive(Clone, Copy, Debug)]
pub struct DeviceView<'a, T: Element> {
    ptr: DevicePtr,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

/// Elements of device memory borrowed for writing.
#[derive(Debug)]
pub struct DeviceViewMut<'a, T: Element> {
    ptr: DevicePtr,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T: Element> DeviceView<'_, T> {
    /// `len` elements at `ptr`, made elsewhere.
    ///
    /// # Safety
    /// As [`DeviceMemory`] for the lifetime chosen: the memory stays allocated and holds
    /// `len` elements of `T`.
    pub unsafe fn from_raw(ptr: DevicePtr, len: usize) -> Self {
        DeviceView {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }
}

impl<T: Element> DeviceViewMut<'_, T> {
    /// `len` elements at `ptr`, made elsewhere, to be written.
    ///
    /// # Safety
    /// As [`DeviceMemoryMut`] for the lifetime chosen.
    pub unsafe fn from_raw(ptr: DevicePtr, len: usize) -> Self {
        DeviceViewMut {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }
}

// SAFETY: a view is made from memory that satisfies the traits for its lifetime (a borrow of
// a buffer, or the promise of from_raw).
unsafe impl<T: Element> DeviceMemory for DeviceView<'_, T> {
    type Elem = T;
    fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}
// SAFETY: as above.
unsafe impl<T: Element> DeviceMemory for DeviceViewMut<'_, T> {
    type Elem = T;
    fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}
// SAFETY: made from a mutable borrow (or from_raw's promise).
unsafe impl<T: Element> DeviceMemoryMut for DeviceViewMut<'_, T> {}

/// What owns a [`DeviceBuffer`]'s memory and frees it on drop: an [`Allocation`]
/// (`cuMemAlloc` or `ncclMemAlloc`) or a [`Symmetric`] window. Sealed.
pub trait Owner: sealed::Sealed {
    /// The device address.
    fn address(&self) -> DevicePtr;
}

/// Memory from `cuMemAlloc` ([`Cuda::alloc`]) or `ncclMemAlloc` ([`Nccl::alloc`]), freed on
/// drop by the same library (which the allocation keeps loaded). Drop a buffer once the work
/// that uses it has completed (a stream sync, an event), as with any CUDA memory.
pub struct Allocation {
    ptr: DevicePtr,
    by: Allocator,
}

enum Allocator {
    Cuda(Cuda),
    Nccl(Nccl),
}

impl sealed::Sealed for Allocation {}
impl Owner for Allocation {
    fn address(&self) -> DevicePtr {
        self.ptr
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: ours, allocated by this library, freed once; a failure has nowhere to go.
        unsafe {
            match &self.by {
                Allocator::Cuda(cuda) => {
                    (cuda.table().cuMemFree)(self.ptr);
                }
                Allocator::Nccl(nccl) => {
                    (nccl.table().ncclMemFree)(self.ptr as usize as *mut ffi::c_void);
                }
            }
        }
    }
}

/// `len` elements of `T` of device memory, owned: freed when dropped by what allocated it
/// (`O`: an [`Allocation`] of [`Cuda::alloc`] or [`Nccl::alloc`], or a [`Symmetric`] window,
/// see [`crate::SymmetricBuffer`]). Collectives take it, or views of parts of it
/// ([`DeviceMemory::view`], [`DeviceMemoryMut::view_mut`]), by reference: `&` for what they
/// read, `&mut` for what they write.
///
/// Its contents start undefined (any bit pattern is a valid element). The memory is freed
/// at once on drop: work still queued that uses it must have completed (sync its stream
/// first), as for any CUDA memory.
///
/// Misuse that does not compile (rustdoc checks that each fails; the error codes are the ones
/// rustc gives, checked when the crate was written):
///
/// A buffer of one element type where another is expected:
///
/// ```compile_fail,E0271
/// # fn f(comm: &ncclshim::Communicator, cuda: &ncclshim::Cuda, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// let floats = cuda.alloc::<f32>(4)?;
/// let mut ints = cuda.alloc::<i32>(4)?;
/// comm.all_reduce(&floats, &mut ints, ncclshim::RedOp::Sum, stream)?; // f32 into i32
/// # Ok(()) }
/// ```
///
/// A view that outlives its buffer:
///
/// ```compile_fail,E0597
/// # fn f(comm: &ncclshim::Communicator, cuda: &ncclshim::Cuda, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// let view = {
///     let buffer = cuda.alloc::<f32>(8)?;
///     buffer.view(0..4)?
/// }; // the buffer is freed here
/// comm.send(&view, 0, stream)?;
/// # Ok(()) }
/// ```
///
/// Writing through a shared view:
///
/// ```compile_fail,E0277
/// # fn f(comm: &ncclshim::Communicator, cuda: &ncclshim::Cuda, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// let buffer = cuda.alloc::<f32>(8)?;
/// let mut view = buffer.view(..)?;
/// comm.all_reduce_in_place(&mut view, ncclshim::RedOp::Sum, stream)?;
/// # Ok(()) }
/// ```
///
/// Reading a part of a buffer that the same call writes:
///
/// ```compile_fail,E0502
/// # fn f(comm: &ncclshim::Communicator, cuda: &ncclshim::Cuda, stream: &ncclshim::Stream) -> ncclshim::Result<()> {
/// let mut buffer = cuda.alloc::<f32>(8)?;
/// let front = buffer.view(0..4)?;
/// comm.all_reduce(&front, &mut buffer, ncclshim::RedOp::Sum, stream)?;
/// # Ok(()) }
/// ```
pub struct DeviceBuffer<T: Element, O: Owner = Allocation> {
    pub(crate) owner: O,
    len: usize,
    _elements: PhantomData<T>,
}

impl<T: Element, O: Owner> DeviceBuffer<T, O> {
    pub(crate) fn from_owner(owner: O, len: usize) -> Self {
        DeviceBuffer {
            owner,
            len,
            _elements: PhantomData,
        }
    }
}

impl<T: Element, O: Owner> DeviceBuffer<T, O> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no element (never: an allocation holds at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// [`DeviceMemory::view`], without the trait in scope.
    pub fn view(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        DeviceMemory::view(self, range)
    }
    /// [`DeviceMemoryMut::view_mut`], without the trait in scope.
    pub fn view_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        DeviceMemoryMut::view_mut(self, range)
    }
}

impl<T: Element, O: Owner> std::fmt::Debug for DeviceBuffer<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer<{:?}>({:#x}, {} elements)",
            T::DATA_TYPE,
            self.owner.address(),
            self.len
        )
    }
}

// SAFETY: the owner keeps `len` elements allocated at its address until it is dropped, which
// a borrow of the buffer prevents; writing needs `&mut`.
unsafe impl<T: Element, O: Owner> DeviceMemory for DeviceBuffer<T, O> {
    type Elem = T;
    fn device_ptr(&self) -> DevicePtr {
        self.owner.address()
    }
    fn len(&self) -> usize {
        self.len
    }
}
// SAFETY: as above.
unsafe impl<T: Element, O: Owner> DeviceMemoryMut for DeviceBuffer<T, O> {}

/// The bytes of `len` elements of `T`, or INVALID_ARGUMENT (none, or more than memory holds).
pub(crate) fn byte_size<T>(len: usize, what: &str) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .filter(|bytes| *bytes > 0 && *bytes <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::new(
                Status::InvalidArgument,
                format!(
                    "{what}: {len} elements of {} bytes is not a size to allocate",
                    std::mem::size_of::<T>()
                ),
            )
        })
}

impl Cuda {
    /// `len` elements of `T` from `cuMemAlloc`, in the current context, freed on drop.
    /// INVALID_ARGUMENT for no element or a size past memory; CUDA_ERROR with the driver's
    /// name and text.
    pub fn alloc<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_size::<T>(len, "cuMemAlloc")?;
        let ptr = self.mem_alloc(bytes)?;
        Ok(DeviceBuffer::from_owner(
            Allocation {
                ptr,
                by: Allocator::Cuda(self.clone()),
            },
            len,
        ))
    }
    /// A buffer holding a copy of `values` (`cuMemAlloc`, then `cuMemcpyHtoD`).
    pub fn alloc_from<T: Element>(&self, values: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.alloc(values.len())?;
        self.copy_to_device(values, &mut buffer)?;
        Ok(buffer)
    }
}

impl Nccl {
    /// `len` elements of `T` from `ncclMemAlloc` (memory NCCL registers best; the mem-alloc
    /// capability, 2.19+; UNAVAILABLE before), freed by `ncclMemFree` on drop. Needs the
    /// device current on this thread.
    pub fn alloc<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_size::<T>(len, "ncclMemAlloc")?;
        let ptr = self.nccl_mem_alloc(bytes)?;
        Ok(DeviceBuffer::from_owner(
            Allocation {
                ptr: ptr as usize as DevicePtr,
                by: Allocator::Nccl(self.clone()),
            },
            len,
        ))
    }
}
