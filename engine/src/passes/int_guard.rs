//! Integer undefined behaviour: checks before the integer operations whose result SPIR-V leaves undefined,
//! recording their operands where they go wrong. The operation itself runs unchanged afterwards.
//!
//! Checked (scalars and vectors, any integer width; a vector fires when any component does):
//!
//! - `OpUDiv`, `OpUMod`: divisor 0 ([`SiteKind::IntOp`], values `dividend`, `divisor`);
//! - `OpSDiv`, `OpSRem`, `OpSMod`: divisor 0, or dividend the least value of its width and divisor -1;
//! - `OpShiftLeftLogical`, `OpShiftRightLogical`, `OpShiftRightArithmetic`: the shift, read as unsigned, at
//!   least the bit width of the base's components (values `base`, `shift`);
//! - `OpVectorExtractDynamic`, `OpVectorInsertDynamic`: the index, read as unsigned, not below the vector's
//!   size ([`SiteKind::IndexOutOfRange`]);
//! - `OpAccessChain`, `OpInBoundsAccessChain`: each index that selects a vector component, a matrix column
//!   or an element of a fixed-size `OpTypeArray` (a length given by a specialization constant is compared
//!   with its value at run time); not runtime arrays, not struct members. One site per instruction, with
//!   values `index <k>` and `length <k>` for each checked index `k` (its position among the indices, from
//!   0; the length in the index's type).
//!
//! Operands that are constants known to be safe are not checked (a division by 2, a shift by 3, a constant
//! index in range): most divisions and shifts of real shaders cost nothing. The check is a few integer
//! instructions inline and one call of a small guard helper that records only when the check failed.

use spirv::{Op, SelectionControl};

use crate::analysis::Type;
use crate::base::builder::{Emit, FnBuilder};
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::SiteKind;
use crate::module::{Instruction, Module};
use crate::util::FastMap;
use crate::Options;

/// The integer check pass.
pub(crate) struct IntGuardPass {
    on: bool,
    /// Integer constants (scalar and composite, spec constants excluded): their components' bits.
    consts: FastMap<u32, Vec<u64>>,
    /// The element type of each runtime array type.
    runtime_elements: FastMap<u32, u32>,
    /// Guard helpers, by the value helper they call.
    guards: FastMap<u32, u32>,
}

/// Integer scalar or vector: (component width, components, 0 for a scalar).
fn int_shape(base: &Base<'_>, ty: u32) -> Option<(u32, u32)> {
    match base.b.types.get(ty)? {
        Type::Int { width, .. } => Some((*width, 0)),
        Type::Vector { component, count } => match base.b.types.get(*component)? {
            Type::Int { width, .. } => Some((*width, *count)),
            _ => None,
        },
        _ => None,
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl IntGuardPass {
    /// The pass for `module`: reads its integer constants when the checks are on.
    pub(crate) fn new(module: &Module, base: &Base<'_>, options: &Options) -> IntGuardPass {
        let mut pass = IntGuardPass {
            on: options.int_checks,
            consts: FastMap::default(),
            runtime_elements: FastMap::default(),
            guards: FastMap::default(),
        };
        if !pass.on {
            return pass;
        }
        for inst in &module.globals {
            let (Some(id), o) = (inst.result_id, &inst.operands) else {
                continue;
            };
            match inst.op() {
                Some(Op::TypeRuntimeArray) => {
                    if let Some(&e) = o.first() {
                        pass.runtime_elements.insert(id, e);
                    }
                }
                Some(Op::Constant) => {
                    let Some((width, 0)) = inst.result_type.and_then(|t| int_shape(base, t)) else {
                        continue;
                    };
                    let lo = u64::from(o.first().copied().unwrap_or(0));
                    let hi = u64::from(o.get(1).copied().unwrap_or(0));
                    let bits = if width > 32 { lo | hi << 32 } else { lo };
                    pass.consts.insert(id, vec![bits & mask(width)]);
                }
                Some(Op::ConstantNull) => {
                    if let Some((_, n)) = inst.result_type.and_then(|t| int_shape(base, t)) {
                        pass.consts.insert(id, vec![0; n.max(1) as usize]);
                    }
                }
                Some(Op::ConstantComposite) => {
                    if inst.result_type.and_then(|t| int_shape(base, t)).is_none() {
                        continue;
                    }
                    let parts: Option<Vec<u64>> = o
                        .iter()
                        .map(|c| match pass.consts.get(c).map(Vec::as_slice) {
                            Some([v]) => Some(*v),
                            _ => None,
                        })
                        .collect();
                    if let Some(parts) = parts {
                        pass.consts.insert(id, parts);
                    }
                }
                _ => {}
            }
        }
        pass
    }

    /// A constant of the integer scalar or vector type `ty` with every component `value` (truncated to the
    /// width, sign-extended in its word for narrow signed types, as SPIR-V wants literals).
    fn int_const(base: &mut Base<'_>, ty: u32, value: u64) -> Option<u32> {
        let (component, count) = match base.b.types.get(ty)? {
            Type::Int { .. } => (ty, 0),
            Type::Vector { component, count } => (*component, *count),
            _ => return None,
        };
        let Some(Type::Int { width, signed }) = base.b.types.get(component).cloned() else {
            return None;
        };
        let v = value & mask(width);
        let words: Vec<u32> = if width > 32 {
            vec![v as u32, (v >> 32) as u32]
        } else if signed && width < 32 && (v >> (width - 1)) & 1 == 1 {
            vec![(v | !mask(width)) as u32]
        } else {
            vec![v as u32]
        };
        let scalar = base.b.constant(Op::Constant, component, &words);
        base.an.set_type(scalar, component);
        if count == 0 {
            return Some(scalar);
        }
        let parts = vec![scalar; count as usize];
        let id = base.b.const_composite(ty, &parts);
        base.an.set_type(id, ty);
        Some(id)
    }

    /// `op` of two integer values of `components` components (0: scalar): a bool or a bool vector.
    fn compare(
        base: &mut Base<'_>,
        out: &mut Vec<Instruction>,
        op: Op,
        components: u32,
        a: u32,
        b: u32,
    ) -> u32 {
        let bool_t = base.b.type_bool();
        let ty = if components == 0 {
            bool_t
        } else {
            base.b.type_vector(bool_t, components)
        };
        out.emit(&mut base.b, op, ty, &[a, b])
    }

    /// `OpAny` of a bool vector; a bool as it is.
    fn any(base: &mut Base<'_>, out: &mut Vec<Instruction>, components: u32, v: u32) -> u32 {
        if components == 0 {
            return v;
        }
        let bool_t = base.b.type_bool();
        out.emit(&mut base.b, Op::Any, bool_t, &[v])
    }

    /// The checks of a division, remainder or modulo: the condition, or `None` when the divisor is a
    /// constant that cannot go wrong.
    fn division(
        &self,
        base: &mut Base<'_>,
        out: &mut Vec<Instruction>,
        signed: bool,
        a: u32,
        d: u32,
    ) -> Option<u32> {
        let ta = base.an.type_of(a)?;
        let td = base.an.type_of(d)?;
        let (width, n) = int_shape(base, td)?;
        if let Some(c) = self.consts.get(&d) {
            if c.iter().all(|&v| v != 0 && !(signed && v == mask(width))) {
                return None;
            }
        }
        let zero = base.b.const_null(td);
        let mut bad = Self::compare(base, out, Op::IEqual, n, d, zero);
        if signed {
            let min = Self::int_const(base, ta, 1u64 << (width - 1))?;
            let minus_one = Self::int_const(base, td, u64::MAX)?;
            let a_min = Self::compare(base, out, Op::IEqual, n, a, min);
            let d_m1 = Self::compare(base, out, Op::IEqual, n, d, minus_one);
            let bool_t = base.b.type_bool();
            let bool_ty = if n == 0 {
                bool_t
            } else {
                base.b.type_vector(bool_t, n)
            };
            let overflow = out.emit(&mut base.b, Op::LogicalAnd, bool_ty, &[a_min, d_m1]);
            bad = out.emit(&mut base.b, Op::LogicalOr, bool_ty, &[bad, overflow]);
        }
        Some(Self::any(base, out, n, bad))
    }

    /// The check of a shift: the shift at least the base's component width.
    fn shift(
        &self,
        base: &mut Base<'_>,
        out: &mut Vec<Instruction>,
        result_type: u32,
        s: u32,
    ) -> Option<u32> {
        let (width, _) = int_shape(base, result_type)?;
        let ts = base.an.type_of(s)?;
        let (_, n) = int_shape(base, ts)?;
        if let Some(c) = self.consts.get(&s) {
            if c.iter().all(|&v| v < u64::from(width)) {
                return None;
            }
        }
        let bound = Self::int_const(base, ts, u64::from(width))?;
        let bad = Self::compare(base, out, Op::UGreaterThanEqual, n, s, bound);
        Some(Self::any(base, out, n, bad))
    }

    /// An index check: the (index, length) pair to compare and record, or `None` when the index is a
    /// constant in range or the length cannot be had in the index's type.
    fn index(&self, base: &mut Base<'_>, index: u32, length: Length) -> Option<(u32, u32)> {
        let ti = base.an.type_of(index)?;
        let (width, 0) = int_shape(base, ti)? else {
            return None;
        };
        match length {
            Length::Known(n) => {
                let n = u64::from(n);
                if self
                    .consts
                    .get(&index)
                    .is_some_and(|c| c.iter().all(|&v| v < n))
                {
                    return None;
                }
                if n > mask(width) {
                    return None;
                }
                Some((index, Self::int_const(base, ti, n)?))
            }
            Length::Spec(id) => {
                let (w, 0) = base.an.type_of(id).and_then(|t| int_shape(base, t))? else {
                    return None;
                };
                (w == width).then_some((index, id))
            }
        }
    }

    /// The indices of an access chain to check.
    fn chain_indices(&self, base: &mut Base<'_>, inst: &Instruction) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        let Some(&pointer) = inst.operands.first() else {
            return out;
        };
        let Some(Type::Pointer { pointee, .. }) = base
            .an
            .type_of(pointer)
            .and_then(|t| base.b.types.get(t))
            .cloned()
        else {
            return out;
        };
        let mut ty = pointee;
        for (k, &index) in inst.operands.iter().skip(1).enumerate() {
            let (length, next) = match base.b.types.get(ty).cloned() {
                Some(Type::Struct { members }) => {
                    let member = match self.consts.get(&index).map(Vec::as_slice) {
                        Some([v]) => base.b.types.members(members).get(*v as usize).copied(),
                        _ => None,
                    };
                    match member {
                        Some(m) => (None, m),
                        None => break,
                    }
                }
                Some(Type::Array { element, length }) => {
                    let l = match base.b.types.int_value(length) {
                        Some(n) => Length::Known(n),
                        None => Length::Spec(length),
                    };
                    (Some(l), element)
                }
                Some(Type::RuntimeArray) => match self.runtime_elements.get(&ty) {
                    Some(&e) => (None, e),
                    None => break,
                },
                Some(Type::Vector { component, count }) => (Some(Length::Known(count)), component),
                Some(Type::Matrix { column, count }) => (Some(Length::Known(count)), column),
                _ => break,
            };
            if let Some(length) = length {
                if let Some((i, l)) = self.index(base, index, length) {
                    out.push((k, i, l));
                }
            }
            ty = next;
        }
        out
    }

    /// The guard helper for a value helper: `void bb_if(bool fire, uint kind, uint site, uint cap, T...)`
    /// calls it when `fire`.
    fn guard(&mut self, base: &mut Base<'_>, call: &Instruction) -> Result<u32, NotInstrumented> {
        let callee = call.operands.first().copied().unwrap_or(0);
        if let Some(&g) = self.guards.get(&callee) {
            return Ok(g);
        }
        let bool_t = base.b.type_bool();
        let void = base.b.type_void();
        let uint = base.b.type_uint();
        // The kind word, the site and the cap, then the values.
        let mut types = vec![bool_t, uint, uint, uint];
        for &arg in call.operands.iter().skip(4) {
            types.push(base.an.type_of(arg).ok_or_else(|| {
                NotInstrumented::malformed(format!("site value %{arg} has no type"))
            })?);
        }
        let (mut fb, id, params) = FnBuilder::new(&mut base.b, void, &types);
        let (run, end) = (base.b.id(), base.b.id());
        fb.op_void(Op::SelectionMerge, &[end, SelectionControl::NONE.bits()]);
        fb.op_void(Op::BranchConditional, &[params[0], run, end]);
        fb.block(run);
        let mut operands = vec![callee];
        operands.extend_from_slice(&params[1..]);
        fb.op(&mut base.b, Op::FunctionCall, void, &operands);
        fb.op_void(Op::Branch, &[end]);
        fb.block(end);
        fb.op_void(Op::Return, &[]);
        base.b.add_function(fb.finish());
        self.guards.insert(callee, id);
        Ok(id)
    }

    /// The site: `out` (the check), then the guarded record call; `None` when no site could be made.
    fn record(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        mut out: Vec<Instruction>,
        bad: u32,
        kind: SiteKind,
        values: Vec<(String, u32)>,
    ) -> Result<Option<Vec<Instruction>>, NotInstrumented> {
        let Some(mut site) = base.site(at, kind, None, values, HelperKind::Record, None)? else {
            return Ok(None);
        };
        let Some(call) = site.pop() else {
            return Ok(None);
        };
        out.extend(site);
        let guard = self.guard(base, &call)?;
        let void = base.b.type_void();
        let mut operands = vec![guard, bad];
        operands.extend_from_slice(&call.operands[1..]);
        out.emit(&mut base.b, Op::FunctionCall, void, &operands);
        Ok(Some(out))
    }
}

/// The length an index must stay under.
#[derive(Clone, Copy)]
enum Length {
    Known(u32),
    /// A specialization constant's value.
    Spec(u32),
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::UDiv => "UDiv",
        Op::SDiv => "SDiv",
        Op::UMod => "UMod",
        Op::SRem => "SRem",
        Op::SMod => "SMod",
        Op::ShiftLeftLogical => "ShiftLeftLogical",
        Op::ShiftRightLogical => "ShiftRightLogical",
        Op::ShiftRightArithmetic => "ShiftRightArithmetic",
        Op::VectorExtractDynamic => "VectorExtractDynamic",
        Op::VectorInsertDynamic => "VectorInsertDynamic",
        Op::AccessChain => "AccessChain",
        Op::InBoundsAccessChain => "InBoundsAccessChain",
        _ => "?",
    }
}

impl Pass for IntGuardPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        if !self.on {
            return Ok(Edit::Keep);
        }
        Ok(match self.check(base, at, inst)? {
            Some(mut out) => {
                out.push(inst.clone());
                Edit::Replace(out)
            }
            None => Edit::Keep,
        })
    }

    /// Off: no checks.
    fn active(&self, _base: &Base<'_>) -> bool {
        self.on
    }
}

impl IntGuardPass {
    /// The check and the guarded record call to put before `inst`, if it is an instruction this pass
    /// checks with operands that need it.
    fn check(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Option<Vec<Instruction>>, NotInstrumented> {
        if !self.on {
            return Ok(None);
        }
        let Some(op) = inst.op() else {
            return Ok(None);
        };
        let o = &inst.operands;
        let mut out = Vec::new();
        match op {
            Op::UDiv | Op::UMod | Op::SDiv | Op::SRem | Op::SMod => {
                let (Some(&a), Some(&d)) = (o.first(), o.get(1)) else {
                    return Ok(None);
                };
                let signed = matches!(op, Op::SDiv | Op::SRem | Op::SMod);
                let Some(bad) = self.division(base, &mut out, signed, a, d) else {
                    return Ok(None);
                };
                let values = vec![("dividend".to_string(), a), ("divisor".to_string(), d)];
                let kind = SiteKind::IntOp { op: op_name(op) };
                self.record(base, at, out, bad, kind, values)
            }
            Op::ShiftLeftLogical | Op::ShiftRightLogical | Op::ShiftRightArithmetic => {
                let (Some(ty), Some(&a), Some(&s)) = (inst.result_type, o.first(), o.get(1)) else {
                    return Ok(None);
                };
                let Some(bad) = self.shift(base, &mut out, ty, s) else {
                    return Ok(None);
                };
                let values = vec![("base".to_string(), a), ("shift".to_string(), s)];
                let kind = SiteKind::IntOp { op: op_name(op) };
                self.record(base, at, out, bad, kind, values)
            }
            Op::VectorExtractDynamic
            | Op::VectorInsertDynamic
            | Op::AccessChain
            | Op::InBoundsAccessChain => {
                let checks: Vec<(usize, u32, u32)> = match op {
                    Op::AccessChain | Op::InBoundsAccessChain => self.chain_indices(base, inst),
                    _ => {
                        let position = if op == Op::VectorExtractDynamic { 1 } else { 2 };
                        let (Some(&v), Some(&index)) = (o.first(), o.get(position)) else {
                            return Ok(None);
                        };
                        let count = match base.an.type_of(v).and_then(|t| base.b.types.get(t)) {
                            Some(Type::Vector { count, .. }) => *count,
                            _ => return Ok(None),
                        };
                        self.index(base, index, Length::Known(count))
                            .map(|(i, l)| (0, i, l))
                            .into_iter()
                            .collect()
                    }
                };
                if checks.is_empty() {
                    return Ok(None);
                }
                let bool_t = base.b.type_bool();
                let mut bad: Option<u32> = None;
                let mut values = Vec::new();
                for &(k, index, length) in &checks {
                    let out_of_range =
                        Self::compare(base, &mut out, Op::UGreaterThanEqual, 0, index, length);
                    bad = Some(match bad {
                        None => out_of_range,
                        Some(b) => out.emit(&mut base.b, Op::LogicalOr, bool_t, &[b, out_of_range]),
                    });
                    values.push((format!("index {k}"), index));
                    values.push((format!("length {k}"), length));
                }
                let Some(bad) = bad else {
                    return Ok(None);
                };
                let kind = SiteKind::IndexOutOfRange { op: op_name(op) };
                self.record(base, at, out, bad, kind, values)
            }
            _ => Ok(None),
        }
    }
}
