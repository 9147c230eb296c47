//! NaN/Inf guards.
//!
//! **`ops`** checks the result of every float operation that can turn finite operands into NaN or Inf, and
//! records only where it first happens: every float operand finite, some result component not. Checked:
//! `OpFDiv` (`division`), `OpFRem` (`remainder`), `OpFMod` (`mod`) and the GLSL.std.450 instructions
//! `tan`, `asin`, `acos`, `sinh`, `cosh`, `acosh`, `atanh`, `atan2`, `pow`, `exp`, `log`, `exp2`, `log2`,
//! `sqrt`, `inversesqrt`, `inverse` (MatrixInverse), `smoothstep` (equal edges), `normalize` and `refract`.
//! Not checked: `OpFAdd`/`OpFSub`/`OpFMul`/`OpDot` and the like, whose only way from finite to Inf is an
//! overflow; checking every arithmetic instruction would cost more than the rare case is worth, and the
//! `outputs` checks (which the `ops` level includes) still catch such a value where it leaves the shader.
//!
//! **`outputs`** checks every float value that leaves the shader: `OpStore` to `Output`, `StorageBuffer`,
//! `PhysicalStorageBuffer` and `Uniform` (buffer blocks) pointers, and the texel of `OpImageWrite`. Structs
//! and arrays are checked member by member (up to 16 float leaves; larger stores are checked on their first
//! 16 leaves). Copies (`OpCopyMemory`) and atomics are not checked.
//!
//! The checks are integer tests on the bits (see [`crate::base::values::non_finite`]): `f16` is converted to
//! `f32` first, `f64` bit-cast to two words; scalars, vectors and matrices (column by column) are handled.
//! The check and the record live in a helper function; the site is one call right after the instruction.

use spirv::{GlslStd450Op, Op, StorageClass};

use crate::analysis::GLSL_STD_450_SET;
use crate::base::values::shape;
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::SiteKind;
use crate::module::Instruction;
use crate::NanLevel;

/// The largest number of float leaves a store is checked for.
const MAX_LEAVES: usize = 16;

/// The NaN guard pass.
pub(crate) struct NanGuardPass {
    pub level: NanLevel,
}

/// The GLSL.std.450 instructions checked at the `ops` level, with their GLSL names.
fn glsl_op_name(op: GlslStd450Op) -> Option<&'static str> {
    use GlslStd450Op as G;
    Some(match op {
        G::Tan => "tan",
        G::Asin => "asin",
        G::Acos => "acos",
        G::Sinh => "sinh",
        G::Cosh => "cosh",
        G::Acosh => "acosh",
        G::Atanh => "atanh",
        G::Atan2 => "atan2",
        G::Pow => "pow",
        G::Exp => "exp",
        G::Log => "log",
        G::Exp2 => "exp2",
        G::Log2 => "log2",
        G::Sqrt => "sqrt",
        G::InverseSqrt => "inversesqrt",
        G::MatrixInverse => "inverse",
        G::SmoothStep => "smoothstep",
        G::Normalize => "normalize",
        G::Refract => "refract",
        _ => return None,
    })
}

impl NanGuardPass {
    /// The name and float operands of an instruction checked at the `ops` level.
    fn checked_op<'i>(base: &Base<'_>, inst: &'i Instruction) -> Option<(&'static str, &'i [u32])> {
        match inst.op()? {
            Op::FDiv => Some(("division", &inst.operands)),
            Op::FRem => Some(("remainder", &inst.operands)),
            Op::FMod => Some(("mod", &inst.operands)),
            Op::ExtInst => {
                let (&set, rest) = inst.operands.split_first()?;
                if base.an.ext_set(set)? != GLSL_STD_450_SET {
                    return None;
                }
                let (&number, args) = rest.split_first()?;
                Some((glsl_op_name(GlslStd450Op::from_u32(number)?)?, args))
            }
            _ => None,
        }
    }

    fn visit_op(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
        name: &'static str,
        operands: &[u32],
    ) -> Result<Edit, NotInstrumented> {
        let (Some(ty), Some(result)) = (inst.result_type, inst.result_id) else {
            return Ok(Edit::Keep);
        };
        if !shape(&base.b.types, ty).is_some_and(|s| s.is_float()) {
            return Ok(Edit::Keep);
        }
        let mut values = Vec::new();
        for (i, &operand) in operands.iter().enumerate() {
            let float = base
                .an
                .type_of(operand)
                .and_then(|t| shape(&base.b.types, t))
                .is_some_and(|s| s.is_float());
            if float {
                values.push((format!("operand {i}"), operand));
            }
        }
        let inputs = values.len();
        values.push(("result".to_string(), result));
        let kind = SiteKind::NanOp { op: name };
        let site = base.site(
            at,
            kind,
            None,
            &values,
            HelperKind::NanCheck { inputs },
            None,
        )?;
        Ok(match site {
            Some(site) if base.groupable(ty) => Edit::CheckLater { result, site },
            Some(insts) => Edit::After(insts),
            None => Edit::Keep,
        })
    }

    fn visit_store(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        value: u32,
        what: &'static str,
    ) -> Result<Edit, NotInstrumented> {
        let Some(ty) = base.an.type_of(value) else {
            return Ok(Edit::Keep);
        };
        let mut extracts = Vec::new();
        let mut leaves = Vec::new();
        flatten(
            base,
            value,
            ty,
            "value".to_string(),
            &mut extracts,
            &mut leaves,
            0,
        );
        if leaves.is_empty() {
            return Ok(Edit::Keep);
        }
        let kind = SiteKind::NanOutput { what };
        let Some(call) = base.site(
            at,
            kind,
            None,
            &leaves,
            HelperKind::NanCheck { inputs: 0 },
            None,
        )?
        else {
            return Ok(Edit::Keep);
        };
        extracts.extend(call);
        Ok(Edit::After(extracts))
    }
}

/// Collects the float leaves of a value: the value itself for a float scalar, vector or matrix; the members
/// of structs and arrays (by `OpCompositeExtract`, added to `extracts`) otherwise.
fn flatten(
    base: &mut Base<'_>,
    value: u32,
    ty: u32,
    name: String,
    extracts: &mut Vec<Instruction>,
    leaves: &mut Vec<(String, u32)>,
    depth: usize,
) {
    use crate::analysis::Type;
    if leaves.len() >= MAX_LEAVES || depth > 4 {
        return;
    }
    if let Some(s) = shape(&base.b.types, ty) {
        if s.is_float() {
            leaves.push((name, value));
        }
        return;
    }
    let members: Vec<(u32, String)> = match base.b.types.get(ty) {
        Some(Type::Struct { members }) => members
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let member = base
                    .an
                    .member_names
                    .get(&(ty, i as u32))
                    .filter(|n| !n.is_empty());
                let label = match member {
                    Some(n) => format!("{name}.{n}"),
                    None => format!("{name}.{i}"),
                };
                (m, label)
            })
            .collect(),
        Some(Type::Array { element, length }) => {
            let n = base
                .b
                .types
                .int_value(*length)
                .unwrap_or(0)
                .min(MAX_LEAVES as u32);
            (0..n).map(|i| (*element, format!("{name}[{i}]"))).collect()
        }
        _ => return,
    };
    for (i, (member_ty, label)) in members.into_iter().enumerate() {
        if leaves.len() >= MAX_LEAVES {
            return;
        }
        if !contains_float(base, member_ty, 0) {
            continue;
        }
        let id = base.b.id();
        extracts.push(Instruction::new(
            Op::CompositeExtract,
            Some(member_ty),
            Some(id),
            smallvec::smallvec![value, i as u32],
        ));
        base.an.set_type(id, member_ty);
        flatten(base, id, member_ty, label, extracts, leaves, depth + 1);
    }
}

fn contains_float(base: &Base<'_>, ty: u32, depth: usize) -> bool {
    use crate::analysis::Type;
    if depth > 4 {
        return false;
    }
    if let Some(s) = shape(&base.b.types, ty) {
        return s.is_float();
    }
    match base.b.types.get(ty) {
        Some(Type::Struct { members }) => {
            members.iter().any(|&m| contains_float(base, m, depth + 1))
        }
        Some(Type::Array { element, .. }) => contains_float(base, *element, depth + 1),
        _ => false,
    }
}

impl Pass for NanGuardPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        if self.level == NanLevel::Off {
            return Ok(Edit::Keep);
        }
        if self.level == NanLevel::Ops {
            if let Some((name, operands)) = Self::checked_op(base, inst) {
                let operands = operands.to_vec();
                return self.visit_op(base, at, inst, name, &operands);
            }
        }
        match inst.op() {
            Some(Op::Store) => {
                let (Some(pointer), Some(value)) = (inst.operand(0), inst.operand(1)) else {
                    return Ok(Edit::Keep);
                };
                let what = match base.an.type_of(pointer).and_then(|t| base.b.types.get(t)) {
                    Some(crate::analysis::Type::Pointer { storage: s, .. }) => match s {
                        Some(StorageClass::Output) => "output",
                        Some(
                            StorageClass::StorageBuffer
                            | StorageClass::PhysicalStorageBuffer
                            | StorageClass::Uniform,
                        ) => "storage buffer store",
                        _ => return Ok(Edit::Keep),
                    },
                    _ => return Ok(Edit::Keep),
                };
                self.visit_store(base, at, value, what)
            }
            Some(Op::ImageWrite) => match inst.operand(2) {
                Some(texel) => self.visit_store(base, at, texel, "image store"),
                None => Ok(Edit::Keep),
            },
            _ => Ok(Edit::Keep),
        }
    }
}
