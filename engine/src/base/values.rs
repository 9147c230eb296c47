//! Values in generated code: which types can be recorded, how a value becomes payload words, and the
//! integer test that tells a float is NaN or Inf.

use super::builder::{Builder, Emit, FnBuilder};
use crate::analysis::{Type, TypeTable};
use crate::record::ScalarType;
use spirv::Op;

/// How a recordable value is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The payload scalar type.
    pub scalar: ScalarType,
    /// The value's own scalar type id.
    pub scalar_type: u32,
    /// Its own scalar width in bits.
    pub width: u32,
    pub signed: bool,
    /// 0 for a scalar, else the vector size or the matrix column count.
    pub outer: u32,
    /// For matrices, the rows per column; 0 otherwise.
    pub rows: u32,
}

impl Shape {
    /// The number of components.
    pub(crate) fn components(&self) -> u32 {
        match (self.outer, self.rows) {
            (0, _) => 1,
            (n, 0) => n,
            (c, r) => c * r,
        }
    }

    /// Payload words.
    pub(crate) fn words(&self) -> usize {
        self.components() as usize * self.scalar.words()
    }

    pub(crate) fn is_float(&self) -> bool {
        matches!(
            self.scalar,
            ScalarType::F16 | ScalarType::F32 | ScalarType::F64
        )
    }
}

/// The payload type, width and signedness of a scalar type.
fn scalar_shape(ty: &Type) -> Option<(ScalarType, u32, bool)> {
    Some(match ty {
        Type::Bool => (ScalarType::Bool, 1, false),
        Type::Float { width: 16 } => (ScalarType::F16, 16, false),
        Type::Float { width: 32 } => (ScalarType::F32, 32, false),
        Type::Float { width: 64 } => (ScalarType::F64, 64, false),
        Type::Int { width, signed } => {
            let scalar = match (*width, *signed) {
                (8 | 16 | 32, true) => ScalarType::I32,
                (8 | 16 | 32, false) => ScalarType::U32,
                (64, true) => ScalarType::I64,
                (64, false) => ScalarType::U64,
                _ => return None,
            };
            (scalar, *width, *signed)
        }
        _ => return None,
    })
}

/// The shape of a scalar, vector or matrix of bools, 8/16/32/64-bit integers and 16/32/64-bit floats.
pub(crate) fn shape(types: &TypeTable, ty: u32) -> Option<Shape> {
    let make = |scalar_type: u32, outer: u32, rows: u32| {
        let (scalar, width, signed) = scalar_shape(types.get(scalar_type)?)?;
        Some(Shape {
            scalar,
            scalar_type,
            width,
            signed,
            outer,
            rows,
        })
    };
    // Vulkan allows vectors of 2 to 4 components (16 with `Vector16`) and matrices of 2 to 4 columns.
    let vector = |count: u32| (2..=16).contains(&count);
    let t = types.get(ty)?;
    match t {
        Type::Vector { component, count } if vector(*count) => make(*component, *count, 0),
        Type::Matrix { column, count } if (2..=4).contains(count) => match types.get(*column)? {
            Type::Vector {
                component,
                count: rows,
            } if (2..=4).contains(rows) => make(*component, *count, *rows),
            _ => None,
        },
        Type::Vector { .. } | Type::Matrix { .. } => None,
        // A scalar: the type found above, not looked up again.
        _ => {
            let (scalar, width, signed) = scalar_shape(t)?;
            Some(Shape {
                scalar,
                scalar_type: ty,
                width,
                signed,
                outer: 0,
                rows: 0,
            })
        }
    }
}

/// A value's component ids: a scalar's or a vector's (up to four) inline, without an allocation per value.
pub(crate) type Components = smallvec::SmallVec<[u32; 4]>;

/// The components of a value, as ids of its scalar type.
pub(crate) fn components(
    fb: &mut impl Emit,
    b: &mut Builder,
    value: u32,
    shape: &Shape,
) -> Components {
    match (shape.outer, shape.rows) {
        (0, _) => smallvec::smallvec![value],
        (n, 0) => (0..n)
            .map(|i| fb.emit(b, Op::CompositeExtract, shape.scalar_type, &[value, i]))
            .collect(),
        (c, r) => (0..c)
            .flat_map(|col| (0..r).map(move |row| (col, row)))
            .map(|(col, row)| {
                fb.emit(
                    b,
                    Op::CompositeExtract,
                    shape.scalar_type,
                    &[value, col, row],
                )
            })
            .collect(),
    }
}

/// A helper's payload word ids: most payloads are a few words, kept inline.
pub(crate) type Payload = smallvec::SmallVec<[u32; 16]>;

/// Appends the payload words of one component (see [`crate::record`]) to `payload` (rather than returning
/// a list of its one or two words: an allocation per component).
pub(crate) fn push_component_words(
    fb: &mut FnBuilder,
    b: &mut Builder,
    c: u32,
    shape: &Shape,
    payload: &mut Payload,
) {
    let uint = b.type_uint();
    match shape.scalar {
        ScalarType::F32 => payload.push(fb.op(b, Op::Bitcast, uint, &[c])),
        ScalarType::F16 => {
            let f32t = b.type_float(32);
            let wide = fb.op(b, Op::FConvert, f32t, &[c]);
            payload.push(fb.op(b, Op::Bitcast, uint, &[wide]));
        }
        ScalarType::F64 | ScalarType::I64 | ScalarType::U64 => {
            let v2 = b.type_vector(uint, 2);
            let pair = fb.op(b, Op::Bitcast, v2, &[c]);
            payload.push(fb.op(b, Op::CompositeExtract, uint, &[pair, 0]));
            payload.push(fb.op(b, Op::CompositeExtract, uint, &[pair, 1]));
        }
        ScalarType::I32 | ScalarType::U32 => {
            if shape.width == 32 {
                if shape.signed {
                    payload.push(fb.op(b, Op::Bitcast, uint, &[c]));
                } else {
                    payload.push(c);
                }
            } else if shape.signed {
                let int = b.type_int(32, true);
                let wide = fb.op(b, Op::SConvert, int, &[c]);
                payload.push(fb.op(b, Op::Bitcast, uint, &[wide]));
            } else {
                payload.push(fb.op(b, Op::UConvert, uint, &[c]));
            }
        }
        ScalarType::Bool => {
            let one = b.const_u32(1);
            let zero = b.const_u32(0);
            payload.push(fb.op(b, Op::Select, uint, &[c, one, zero]));
        }
    }
}

/// A bool that is true when the float component `c` is NaN or Inf: its exponent bits are all ones. An
/// integer test on the bits, never `OpIsNan`/`OpIsInf`, which drivers may fold away.
pub(crate) fn non_finite(fb: &mut impl Emit, b: &mut Builder, c: u32, shape: &Shape) -> u32 {
    let uint = b.type_uint();
    let bool_t = b.type_bool();
    let (high, mask) = match shape.scalar {
        ScalarType::F64 => {
            let v2 = b.type_vector(uint, 2);
            let pair = fb.emit(b, Op::Bitcast, v2, &[c]);
            (
                fb.emit(b, Op::CompositeExtract, uint, &[pair, 1]),
                0x7ff0_0000,
            )
        }
        ScalarType::F16 => {
            let f32t = b.type_float(32);
            let wide = fb.emit(b, Op::FConvert, f32t, &[c]);
            (fb.emit(b, Op::Bitcast, uint, &[wide]), 0x7f80_0000)
        }
        _ => (fb.emit(b, Op::Bitcast, uint, &[c]), 0x7f80_0000),
    };
    let mask = b.const_u32(mask);
    let exponent = fb.emit(b, Op::BitwiseAnd, uint, &[high, mask]);
    fb.emit(b, Op::IEqual, bool_t, &[exponent, mask])
}

/// A bool that is true when some float component in `comps` (of one value of `shape`) may be NaN or Inf,
/// cheaply: a 32- or 64-bit vector's components are summed and the sum tested, since a NaN or Inf among them
/// makes the sum NaN or Inf. A finite sum can still overflow; callers send that rare case on to an exact
/// test ([`non_finite`] per component).
pub(crate) fn maybe_non_finite(
    fb: &mut impl Emit,
    b: &mut Builder,
    comps: &[u32],
    shape: &Shape,
) -> u32 {
    let bool_t = b.type_bool();
    if matches!(shape.scalar, ScalarType::F32 | ScalarType::F64) && comps.len() > 1 {
        let sum = comps[1..].iter().fold(comps[0], |acc, &c| {
            fb.emit(b, Op::FAdd, shape.scalar_type, &[acc, c])
        });
        return non_finite(fb, b, sum, shape);
    }
    let mut any = non_finite(fb, b, comps[0], shape);
    for &c in &comps[1..] {
        let nf = non_finite(fb, b, c, shape);
        any = fb.emit(b, Op::LogicalOr, bool_t, &[any, nf]);
    }
    any
}
