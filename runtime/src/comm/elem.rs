//! What the data collectives carry and combine: [`Element`] types and the
//! reduction operators [`Op`].
//!
//! Elements travel little-endian, whatever the host's byte order. The
//! trait's items are the runtime's own (hidden from the docs): it is
//! implemented for `i8`..`i64`, `u8`..`u64`, `f32` and `f64`, and is not
//! meant to be implemented elsewhere.

use crate::error::Error;

/// A reduction operator. Integer `Sum` and `Prod` wrap on overflow;
/// float `Min`/`Max` are `f64::min`/`f64::max` (a NaN loses to a number).
/// The bit operators apply to integers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
}

impl Op {
    /// The operator's code in a fingerprint (`control::ROP_NAMES`).
    pub(crate) fn code(self) -> u8 {
        self as u8 + 1
    }

    fn is_bitwise(self) -> bool {
        matches!(self, Op::BitAnd | Op::BitOr | Op::BitXor)
    }
}

/// An element type of the data collectives.
pub trait Element: Copy + Send + Sync + 'static {
    /// The type's code in a fingerprint (`control::ELEMENT_NAMES`).
    #[doc(hidden)]
    const CODE: u8;
    /// Bytes per element on the wire.
    #[doc(hidden)]
    const SIZE: usize;
    /// Whether the bit operators are refused.
    #[doc(hidden)]
    const FLOAT: bool;
    /// Append `v`, little-endian, to `out`.
    #[doc(hidden)]
    fn put(v: &[Self], out: &mut Vec<u8>);
    /// Read `out.len()` elements from `b` (`b.len() == out.len() * SIZE`).
    #[doc(hidden)]
    fn get(b: &[u8], out: &mut [Self]);
    /// `acc[i] = acc[i] op b[i]`: `acc` holds the lower ranks' values.
    #[doc(hidden)]
    fn combine(op: Op, acc: &mut [Self], b: &[Self]);
}

/// `Err(InvalidArgument)` if `op` does not apply to `T`.
pub(crate) fn check_op<T: Element>(op: Op, call: &str) -> Result<(), Error> {
    if T::FLOAT && op.is_bitwise() {
        return Err(Error::InvalidArgument(format!(
            "{call}: {op:?} does not apply to a floating-point type"
        )));
    }
    Ok(())
}

/// `v` as bytes on the wire.
pub(crate) fn to_bytes<T: Element>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * T::SIZE);
    T::put(v, &mut out);
    out
}

/// Fill `out` from the wire bytes `b`; a length that does not fit is a
/// protocol error (a mismatched length is found by the fingerprint first).
pub(crate) fn from_bytes<T: Element>(b: &[u8], out: &mut [T], what: &str) -> Result<(), Error> {
    if b.len() != out.len() * T::SIZE {
        return Err(Error::Protocol(format!(
            "{what}: {} bytes arrived for {} elements of {} bytes",
            b.len(),
            out.len(),
            T::SIZE
        )));
    }
    T::get(b, out);
    Ok(())
}

// On a little-endian host the wire bytes are the memory bytes: one copy
// (bytemuck's casts of plain numbers), not an element at a time (which
// cost 40 % of a 256 KiB alltoall in a profile).
macro_rules! wire_codec {
    ($t:ty) => {
        fn put(v: &[Self], out: &mut Vec<u8>) {
            if cfg!(target_endian = "little") {
                out.extend_from_slice(bytemuck::cast_slice(v));
                return;
            }
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        fn get(b: &[u8], out: &mut [Self]) {
            let n = out.len() * Self::SIZE;
            if let Some(src) = b.get(..n).filter(|_| cfg!(target_endian = "little")) {
                bytemuck::cast_slice_mut::<Self, u8>(out).copy_from_slice(src);
                return;
            }
            for (o, c) in out.iter_mut().zip(b.chunks_exact(Self::SIZE)) {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(c);
                *o = <$t>::from_le_bytes(a);
            }
        }
    };
}

macro_rules! int_element {
    ($($t:ty = $code:expr),*) => {$(
        impl Element for $t {
            const CODE: u8 = $code;
            const SIZE: usize = std::mem::size_of::<$t>();
            const FLOAT: bool = false;
            wire_codec!($t);
            fn combine(op: Op, acc: &mut [Self], b: &[Self]) {
                let f: fn($t, $t) -> $t = match op {
                    Op::Sum => <$t>::wrapping_add,
                    Op::Prod => <$t>::wrapping_mul,
                    Op::Min => |a, b| a.min(b),
                    Op::Max => |a, b| a.max(b),
                    Op::BitAnd => |a, b| a & b,
                    Op::BitOr => |a, b| a | b,
                    Op::BitXor => |a, b| a ^ b,
                };
                acc.iter_mut().zip(b).for_each(|(a, &b)| *a = f(*a, b));
            }
        }
    )*};
}

macro_rules! float_element {
    ($($t:ty = $code:expr),*) => {$(
        impl Element for $t {
            const CODE: u8 = $code;
            const SIZE: usize = std::mem::size_of::<$t>();
            const FLOAT: bool = true;
            wire_codec!($t);
            fn combine(op: Op, acc: &mut [Self], b: &[Self]) {
                let f: fn($t, $t) -> $t = match op {
                    Op::Sum => |a, b| a + b,
                    Op::Prod => |a, b| a * b,
                    Op::Min => <$t>::min,
                    Op::Max => <$t>::max,
                    // Refused before anything is sent (`check_op`).
                    Op::BitAnd | Op::BitOr | Op::BitXor => return,
                };
                acc.iter_mut().zip(b).for_each(|(a, &b)| *a = f(*a, b));
            }
        }
    )*};
}

int_element!(
    i8 = 1,
    i16 = 2,
    i32 = 3,
    i64 = 4,
    u8 = 5,
    u16 = 6,
    u32 = 7,
    u64 = 8
);
float_element!(f32 = 9, f64 = 10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_little_endian() {
        let v = [1.5f64, -2.25, f64::MAX];
        let b = to_bytes(&v);
        assert_eq!(&b[..8], &1.5f64.to_le_bytes());
        let mut out = [0f64; 3];
        from_bytes(&b, &mut out, "t").unwrap();
        assert_eq!(out, v);
        assert!(from_bytes(&b[1..], &mut out, "t").is_err());
        let w = [i16::MIN, 7, -1];
        let mut o = [0i16; 3];
        from_bytes(&to_bytes(&w), &mut o, "t").unwrap();
        assert_eq!(o, w);
    }

    #[test]
    fn operators_combine_in_place() {
        let mut a = [250u8, 3, 0b1100];
        u8::combine(Op::Sum, &mut a, &[10, 4, 0]);
        assert_eq!(a, [4, 7, 0b1100], "integer sums wrap");
        u8::combine(Op::BitXor, &mut a, &[0, 0, 0b1010]);
        assert_eq!(a[2], 0b0110);
        let mut f = [1.0f32, 5.0];
        f32::combine(Op::Min, &mut f, &[2.0, 3.0]);
        assert_eq!(f, [1.0, 3.0]);
        assert!(check_op::<f32>(Op::BitOr, "x").is_err());
        assert!(check_op::<i32>(Op::BitOr, "x").is_ok());
        assert_eq!(Op::Sum.code(), 1);
        assert_eq!(Op::BitXor.code(), 7);
    }
}
