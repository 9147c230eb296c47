//! NaN/Inf guards.
//!
//! **`ops`** checks the result of every float operation that can turn finite operands into NaN or Inf, and
//! records only where it first happens: every float operand finite, some result component not. Checked:
//! `OpFDiv` (`division`), `OpFRem` (`remainder`), `OpFMod` (`mod`) and the GLSL.std.450 instructions
//! `tan`, `asin`, `acos`, `sinh`, `cosh`, `acosh`, `atanh`, `atan2`, `pow`, `exp`, `log`, `exp2`, `log2`,
//! `sqrt`, `inversesqrt`, `inverse` (MatrixInverse), `smoothstep` (equal edges), `normalize`, `refract` and
//! `ldexp`.
//! `exp2(y * log2(x))` and `exp(y * log(x))` (how zink writes `pow`, and how shaders write it by hand) are
//! checked as one `pow` at the exponential, with x and y as operands: their `log2(0)` is -inf on purpose.
//! `exp(a) / exp(b)` and `exp(a) * exp(b)` are checked as one site at the division or product, on the two
//! exponentials: drivers compute them as `exp(a - b)` and `exp(a + b)` unless a check uses an exponential
//! or its argument (see `Fusions`).
//! `OpSelect` of a NaN constant is checked too, as where the NaN starts unless it came in through the other
//! choice or a float the condition compares (see `ConstantChoices`): how compilers that expand math
//! themselves (IREE, through MLIR) write a domain error.
//! An `OpFMul` by a power of two built from its bits (`bitcast(int(k) + 127 << 23)`) is checked too, against
//! `k`: how the same compilers scale an expanded `exp`, whose overflow starts there (see `BuiltPowers`).
//! Not checked: `OpFAdd`/`OpFSub`/`OpFMul`/`OpDot` and the like, whose only way from finite to Inf is an
//! overflow; checking every arithmetic instruction would cost more than the rare case is worth, and the
//! `outputs` checks (which the `ops` level includes) still catch such a value where it leaves the shader.
//! Exponentials are the exception (`exp`, `ldexp`, the products above): overflow is how they fail.
//! An operation whose result reaches nothing but selects that may throw it away (`d != 0 ? x / d : 0`) is
//! checked after the last of them, on its result where they keep it (see `SelectedResults`): a NaN the
//! program computes and discards on purpose is no report.
//!
//! **`outputs`** checks every float value that leaves the invocation through memory:
//!
//! - stores (`OpStore`) through pointers into `Output`, `StorageBuffer`, `PhysicalStorageBuffer` and
//!   `Uniform` (buffer blocks), and into the ray-tracing and mesh payloads: `RayPayloadKHR`,
//!   `IncomingRayPayloadKHR`, `CallableDataKHR`, `IncomingCallableDataKHR`, `HitAttributeKHR`,
//!   `TaskPayloadWorkgroupEXT` (where miss, hit and callable shaders put everything they compute);
//! - the texel of `OpImageWrite`;
//! - floats stored as integers: where the value stored (or written to an image, or given to an integer
//!   atomic store, exchange or compare-exchange) is an `OpBitcast` of a float, or an `OpCompositeConstruct`
//!   with such bitcasts among its parts (through `OpCopyObject`s), the floats are checked (taichi stores
//!   every f32 this way);
//! - copies: `OpCopyMemory` into any of the storage classes above: the source is loaded just before the
//!   copy, and the floats of that value are checked. `OpCopyMemorySized` only where a typed pointer at
//!   either end points to a float scalar or vector that the constant size covers exactly (see
//!   `sized_copy_type`, which says why the others are left);
//! - the hit distance an intersection shader reports (`OpReportIntersectionKHR`), checked before the
//!   report, which does not come back when an any-hit shader ends the ray;
//! - float atomics (`OpAtomicFAddEXT`, `OpAtomicFMinEXT`, `OpAtomicFMaxEXT`, and `OpAtomicStore` and
//!   `OpAtomicExchange` of floats) on buffers, images and task payloads: the value given.
//!
//! Pointers may be untyped (`SPV_KHR_untyped_pointers`): the storage class is the pointer type's, the value
//! type the store's. `OpCopyObject` copies a value, not memory: a store of its result is a store like any
//! other. Not checked: `Workgroup` (shared) memory, `Private` and `Function` variables (what leaves the
//! invocation from them goes through one of the writes above), the results of atomics (the value in
//! memory before), and the ray of `OpTraceRayKHR`. Structs and arrays are checked member by member (up to
//! 16 float leaves; larger values are checked on their first 16 leaves).
//!
//! The checks are integer tests on the bits (see [`crate::base::values::non_finite`]): `f16` is converted to
//! `f32` first, `f64` bit-cast to two words; scalars, vectors and matrices (column by column) are handled.
//! The check and the record live in a helper function; the site is one call right after the instruction
//! (for copies, the load of the copied value goes right before it; a reported hit distance is checked
//! before the report).

use spirv::{GlslStd450Op, MemoryAccess, Op, StorageClass};

use crate::analysis::disasm::id_positions;
use crate::analysis::{Type, GLSL_STD_450_SET};
use crate::base::values::shape;
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::{FragmentOutput, SiteKind};
use crate::module::{Instruction, Module};
use crate::util::{string_is, FastMap, FastSet};
use crate::NanLevel;

/// The largest number of float leaves a store is checked for.
const MAX_LEAVES: usize = 16;

/// The names of a checked operation's first operands.
const OPERAND_NAMES: [&str; 3] = ["operand 0", "operand 1", "operand 2"];

/// Shapes a driver's compiler rewrites only while each step has one use, which a check of a step would be
/// a second of: checked as one site, the rewrite still happens and the app computes what it computes
/// without Blackbox (Qt Quick 3D's shadows rendered 5 pixels one step darker on lavapipe while each `exp`
/// of `exp(a) / exp(b)` was checked alone). Found at `ops` only.
///
/// - `exp2(y * log2(x))` and `exp(y * log(x))`: `pow(x, y)` as NIR (zink's shaders) writes it, and shaders
///   by hand (gamma). There `log2(0)` is -inf on purpose and `exp2(-inf)` is 0, so the pair is checked as
///   one `pow`, at the exponential, with x and y as its operands, and the logarithm is not checked alone:
///   `pow(0, 0)` (a NaN) is still reported, a black pixel's `log2(0)` no longer.
/// - `exp(a) / exp(b)` and `exp(a) * exp(b)` (and `exp2`): exponential shadow maps. NIR makes them
///   `exp2(a - b)` and `exp2(a + b)`, and when `a` and `b` are products with a common factor (`k * d1`,
///   `k * d2`), `exp2(k * (d1 - d2))`: a check of either exponential is a second use of it and of its
///   argument, and both rewrites stop. So the pair is one site, at the division or product, on the two
///   exponentials' values (as a division is checked), and the exponentials are not checked alone. Where
///   a driver does not rewrite the pair and an exponential overflows, that Inf is no longer reported where
///   it starts: the division or product sees an operand that is not finite already, and the `outputs`
///   checks find what reaches memory.
#[derive(Default)]
struct Fusions {
    /// The exponentials that finish a `pow`, with its x and y.
    pows: FastMap<u32, [u32; 2]>,
    /// The logarithms that start one.
    logs: FastSet<u32>,
    /// The divisions and products of two exponentials, with the site's name.
    exp_pairs: FastMap<u32, &'static str>,
    /// The exponentials in them.
    paired_exps: FastSet<u32>,
}

impl Fusions {
    /// The shapes in `module`'s functions. Each link is used once: the logarithm by the multiply, the
    /// multiply by the exponential, an exponential by its division or product, through any `OpBitcast`s
    /// between them (zink passes every value through a `uint` and back). Any other mention of one of those
    /// ids, a literal included, leaves the shape alone.
    fn find(module: &Module) -> Fusions {
        let mut found = Fusions::default();
        let Some(set) = module
            .ext_inst_imports
            .iter()
            .find(|i| string_is(&i.operands, GLSL_STD_450_SET))
            .and_then(|i| i.result_id)
        else {
            return found;
        };
        let glsl = |inst: &Instruction| -> Option<(GlslStd450Op, u32)> {
            match inst.operands.as_slice() {
                [s, number, arg] if inst.is(Op::ExtInst) && *s == set => {
                    Some((GlslStd450Op::from_u32(*number)?, *arg))
                }
                _ => None,
            }
        };
        // Logarithm -> (x, its exponential); multiply -> (logarithm, y); exponential -> (its kind, its
        // argument); every id of a chain -> the logarithm, multiply or exponential it starts from.
        let mut logs: FastMap<u32, (u32, GlslStd450Op)> = FastMap::default();
        let mut muls: FastMap<u32, (u32, u32)> = FastMap::default();
        let mut exps: FastMap<u32, (GlslStd450Op, u32)> = FastMap::default();
        let mut root: FastMap<u32, u32> = FastMap::default();
        let mut pow_ends: Vec<(u32, u32, GlslStd450Op)> = Vec::new();
        let mut pairs: Vec<(u32, &'static str, u32, u32)> = Vec::new();
        for f in &module.functions {
            for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
                let Some(result) = inst.result_id else {
                    continue;
                };
                match glsl(inst) {
                    Some((GlslStd450Op::Log2, x)) => {
                        logs.insert(result, (x, GlslStd450Op::Exp2));
                        root.insert(result, result);
                    }
                    Some((GlslStd450Op::Log, x)) => {
                        logs.insert(result, (x, GlslStd450Op::Exp));
                        root.insert(result, result);
                    }
                    Some((exp @ (GlslStd450Op::Exp2 | GlslStd450Op::Exp), arg)) => {
                        if let Some(&m) = root.get(&arg).filter(|m| muls.contains_key(m)) {
                            pow_ends.push((result, m, exp));
                        }
                        exps.insert(result, (exp, arg));
                        root.insert(result, result);
                    }
                    _ => match (inst.op(), inst.operands.as_slice()) {
                        (Some(Op::Bitcast), [from]) => {
                            if let Some(&r) = root.get(from) {
                                root.insert(result, r);
                            }
                        }
                        (Some(op @ (Op::FMul | Op::FDiv)), [a, b]) => {
                            let log_of =
                                |id: &u32| root.get(id).copied().filter(|r| logs.contains_key(r));
                            let exp_of =
                                |id: &u32| root.get(id).copied().filter(|r| exps.contains_key(r));
                            let log_pair = match (log_of(a), log_of(b)) {
                                (Some(l), None) if !root.contains_key(b) => Some((l, *b)),
                                (None, Some(l)) if !root.contains_key(a) => Some((l, *a)),
                                _ => None,
                            };
                            if let (Some(pair), Op::FMul) = (log_pair, op) {
                                muls.insert(result, pair);
                                root.insert(result, result);
                            } else if let (Some(ea), Some(eb)) = (exp_of(a), exp_of(b)) {
                                let kind = exps[&ea].0;
                                let name = match (kind, op) {
                                    (GlslStd450Op::Exp, Op::FDiv) => "exp() / exp()",
                                    (GlslStd450Op::Exp, _) => "exp() * exp()",
                                    (_, Op::FDiv) => "exp2() / exp2()",
                                    _ => "exp2() * exp2()",
                                };
                                if ea != eb && exps[&eb].0 == kind {
                                    pairs.push((result, name, ea, eb));
                                }
                            }
                        }
                        _ => {}
                    },
                }
            }
        }
        if pow_ends.is_empty() && pairs.is_empty() {
            return found;
        }
        // Uses of every chain's ids, counted in a second walk (a phi may name a value defined further
        // down). Ids by the grammar (an extended instruction's number is a literal, and often equals a
        // nearby id); every word where it is unsure.
        let mut uses: FastMap<u32, u32> = FastMap::default();
        for inst in module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
        {
            let mut count = |w: u32| {
                if root.contains_key(&w) {
                    *uses.entry(w).or_default() += 1;
                }
            };
            match id_positions(inst) {
                Some(ids) => ids.iter().for_each(|&at| count(inst.operands[at])),
                None => inst.operands.iter().for_each(|&w| count(w)),
            }
        }
        // A chain is used once when each of its ids is used exactly once.
        let mut chain_ok: FastMap<u32, bool> = FastMap::default();
        for (&id, &r) in &root {
            *chain_ok.entry(r).or_insert(true) &= uses.get(&id) == Some(&1);
        }
        let once = |r: u32| chain_ok.get(&r) == Some(&true);
        for (exp, m, kind) in pow_ends {
            let (log, y) = muls[&m];
            let (x, wanted) = logs[&log];
            if wanted == kind && once(log) && once(m) {
                found.pows.insert(exp, [x, y]);
                found.logs.insert(log);
            }
        }
        for (result, name, ea, eb) in pairs {
            let free =
                |e: u32| once(e) && !found.pows.contains_key(&e) && !found.paired_exps.contains(&e);
            if free(ea) && free(eb) {
                found.paired_exps.insert(ea);
                found.paired_exps.insert(eb);
                found.exp_pairs.insert(result, name);
            }
        }
        found
    }
}

/// The name of a select site (see [`ConstantChoices`]).
const SELECT_OF_CONSTANT: &str = "select (choosing a NaN constant)";

/// Selects that choose a NaN the module holds as a constant: how a compiler that expands math itself
/// writes a domain error (IREE's `log`, through MLIR: `x < 0 ? NaN : (x == 0 ? -Inf : poly(x))`). No
/// checked operation makes that NaN (a division of it, a `sqrt`, sees it come in), so without these the
/// first place it shows is where it is written out. Checked at `ops` like an operation, with the select
/// as where the NaN starts unless it came in: through the other, non-constant choice, or through a float
/// its condition compares (`x < 0 || isnan(x)` chooses NaN for a NaN `x` too: not a new one). The
/// constants themselves never count as come in.
///
/// Inf constants are left alone: the same expansions choose them for results that are right, and often
/// only steps on the way (IREE's `pow(x, y)` is `exp(y * log(x))`, whose `log(0)` chooses -Inf so that
/// `pow(0, 2)` is 0, as zink's `log2(0)` in its `pow`: see `Fusions`). Modules without a NaN constant
/// (the shared corpus has none) cost one quick look at their globals.
#[derive(Default)]
struct ConstantChoices {
    /// Each such select's result, with the values it is checked against: the other choice, then the
    /// floats its condition compares (through `OpLogical*`), constants left out, up to
    /// [`MAX_CHOICE_INPUTS`].
    inputs: FastMap<u32, smallvec::SmallVec<[u32; MAX_CHOICE_INPUTS]>>,
}

/// The most values a select of a NaN constant is checked against.
const MAX_CHOICE_INPUTS: usize = 4;

impl ConstantChoices {
    fn find(module: &Module) -> ConstantChoices {
        let mut found = ConstantChoices::default();
        // Most modules have no constant whose last word has a float's exponent all ones (of any width):
        // no NaN, they are done after one quick look at each global.
        let candidate = |inst: &Instruction| {
            inst.is(Op::Constant)
                && inst.operands.last().is_some_and(|&w| {
                    (w >> 23) & 0xFF == 0xFF
                        || (w >> 20) & 0x7FF == 0x7FF
                        || (w <= 0xFFFF && (w >> 10) & 0x1F == 0x1F)
                })
        };
        if !module.globals.iter().any(candidate) {
            return found;
        }
        // Float constants that are NaN, and composites with one in them, in the order declared.
        // A module declares a float type or two: a short list, not a table.
        let mut float_widths: smallvec::SmallVec<[(u32, u32); 4]> = smallvec::SmallVec::new();
        let mut nans: FastSet<u32> = FastSet::default();
        for inst in &module.globals {
            let (Some(op), Some(id)) = (inst.op(), inst.result_id) else {
                continue;
            };
            match op {
                Op::TypeFloat => {
                    if let Some(&width) = inst.operands.first() {
                        float_widths.push((id, width));
                    }
                }
                Op::Constant => {
                    let width = inst
                        .result_type
                        .and_then(|t| float_widths.iter().find(|(f, _)| *f == t));
                    if width.is_some_and(|&(_, w)| is_nan_literal(w, &inst.operands)) {
                        nans.insert(id);
                    }
                }
                Op::ConstantComposite if inst.operands.iter().any(|c| nans.contains(c)) => {
                    nans.insert(id);
                }
                _ => {}
            }
        }
        if nans.is_empty() {
            return found;
        }
        // Constants are never what makes a select's NaN come in (an Inf one compared, `x == +Inf`, is the
        // program's own test): left out of its inputs, and of its report. Specialization constants are
        // the app's values, and stay.
        let constants: FastSet<u32> = module
            .globals
            .iter()
            .filter(|i| {
                matches!(
                    i.op(),
                    Some(Op::Constant | Op::ConstantComposite | Op::ConstantNull)
                )
            })
            .filter_map(|i| i.result_id)
            .collect();
        // Booleans by what they are made of: a comparison's operands, a logical operation's booleans.
        // Definitions come before their uses in a function's layout.
        let mut conditions: FastMap<u32, smallvec::SmallVec<[u32; 2]>> = FastMap::default();
        for inst in module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
        {
            let (Some(op), Some(result)) = (inst.op(), inst.result_id) else {
                continue;
            };
            let o = &inst.operands;
            if is_condition(op) {
                conditions.insert(result, smallvec::SmallVec::from_slice(o));
                continue;
            }
            let [condition, a, b, ..] = o[..] else {
                continue;
            };
            if op != Op::Select || !(nans.contains(&a) || nans.contains(&b)) {
                continue;
            }
            let mut inputs = smallvec::SmallVec::new();
            let add = |v: u32, inputs: &mut smallvec::SmallVec<[u32; MAX_CHOICE_INPUTS]>| {
                if !constants.contains(&v)
                    && !inputs.contains(&v)
                    && inputs.len() < MAX_CHOICE_INPUTS
                {
                    inputs.push(v);
                }
            };
            add(a, &mut inputs);
            add(b, &mut inputs);
            // The condition's floats, a few logical steps deep.
            let mut pending: smallvec::SmallVec<[(u32, u8); 4]> =
                smallvec::smallvec![(condition, 0)];
            while let Some((id, depth)) = pending.pop() {
                match conditions.get(&id) {
                    Some(parts) if depth < 4 => {
                        pending.extend(parts.iter().map(|&p| (p, depth + 1)));
                    }
                    Some(_) => {}
                    // Not made by a comparison or logical operation here: a value (a float compared,
                    // or a boolean from elsewhere, which the check leaves out as not a float).
                    None if depth > 0 => add(id, &mut inputs),
                    None => {}
                }
            }
            found.inputs.insert(result, inputs);
        }
        found
    }
}

/// The name of a product site (see [`BuiltPowers`]).
const PRODUCT_BY_BUILT_POWER: &str = "product by 2^k (built from exponent bits: an expanded exp)";

/// Powers of two built from their bits, `bitcast(int(k) + bias << 23)` (52 for `double`, 10 for `half`):
/// how a compiler that expands math itself scales an exponential's polynomial by `2^k` (IREE's `exp`,
/// through MLIR: `poly(r) * bitcast((int(k) + 127) << 23)`, with `k`, a float, clamped so that the power
/// is finite). Where `exp` overflows, the Inf starts at that product, an `OpFMul` of two finite values,
/// which `ops` does not check otherwise (see the module's comment); a product with one of these as a
/// factor is checked like an operation.
///
/// It is checked against `k`, not its factors: a NaN argument reaches `k` through the clamps (they let a
/// NaN through) as it reaches the polynomial, so a NaN `k` says the NaN came in. The polynomial factor
/// is often an add that the driver folds into the product while the add has that one use (lavapipe's
/// results changed in their last bits with it checked); `k` has several uses already. The cost: a NaN
/// that comes in through the other factor alone, not made from `k`'s argument (code that scales some
/// unrelated value by such a power), is reported as made by the product.
///
/// The pattern is exact: a shift by a constant (all components alike) of the mantissa's width, of an
/// integer converted from a float (`OpConvertFToS`/`OpConvertFToU`, then any `OpIAdd`/`OpISub`), bit-cast
/// to a float of that width. Bits put together any other way (a manual `half` to `float`, a random float
/// from a hash, an exponent that was an integer all along) are left alone. Modules without such a
/// constant cost one quick look at their globals.
#[derive(Default)]
struct BuiltPowers {
    /// The bitcasts' results, with the float `k` each is built from.
    powers: FastMap<u32, u32>,
}

impl BuiltPowers {
    fn find(module: &Module, base: &Base<'_>) -> BuiltPowers {
        let mut found = BuiltPowers::default();
        // Shift amounts, by the float width they build: scalar constants, and composites of one of them.
        let width_of_shift = |bits: u32| match bits {
            10 => Some(16),
            23 => Some(32),
            52 => Some(64),
            _ => None,
        };
        let mut shifts: smallvec::SmallVec<[(u32, u32); 4]> = smallvec::SmallVec::new();
        for inst in &module.globals {
            let width = match (inst.op(), inst.operands.as_slice()) {
                // A 64-bit shift amount is two words, the high one 0.
                (Some(Op::Constant), [low] | [low, 0]) => width_of_shift(*low),
                (Some(Op::ConstantComposite), [first, rest @ ..]) if !shifts.is_empty() => shifts
                    .iter()
                    .find(|(c, _)| c == first)
                    .filter(|_| rest.iter().all(|c| c == first))
                    .map(|&(_, w)| w),
                _ => None,
            };
            if let (Some(width), Some(id)) = (width, inst.result_id) {
                shifts.push((id, width));
            }
        }
        if shifts.is_empty() {
            return found;
        }
        // Integers converted from floats (with the float), shifts of them (with the width and the float),
        // then bitcasts of those shifts to floats of the width. Definitions come before their uses in a
        // function's layout.
        let mut from_float: FastMap<u32, u32> = FastMap::default();
        let mut shifted: FastMap<u32, (u32, u32)> = FastMap::default();
        for inst in module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
        {
            let Some(result) = inst.result_id else {
                continue;
            };
            match (inst.op(), inst.operands.as_slice()) {
                (Some(Op::ConvertFToS | Op::ConvertFToU), [k]) => {
                    from_float.insert(result, *k);
                }
                (Some(Op::IAdd | Op::ISub), [a, b]) => {
                    if let Some(&k) = from_float.get(a).or_else(|| from_float.get(b)) {
                        from_float.insert(result, k);
                    }
                }
                (Some(Op::ShiftLeftLogical), [x, by]) => {
                    let width = shifts.iter().find(|(c, _)| c == by).map(|&(_, w)| w);
                    if let (Some(width), Some(&k)) = (width, from_float.get(x)) {
                        shifted.insert(result, (width, k));
                    }
                }
                (Some(Op::Bitcast), [from]) => {
                    let Some(&(width, k)) = shifted.get(from) else {
                        continue;
                    };
                    let float = inst
                        .result_type
                        .and_then(|t| shape(&base.b.types, t))
                        .is_some_and(|s| s.is_float() && s.rows == 0 && s.width == width);
                    if float {
                        found.powers.insert(result, k);
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// The `k` of a power that `inst`, a product, has as a factor.
    fn k_of_product(&self, inst: &Instruction) -> Option<u32> {
        if self.powers.is_empty() || !inst.is(Op::FMul) {
            return None;
        }
        inst.operands
            .iter()
            .find_map(|o| self.powers.get(o).copied())
    }
}

/// Checked operations whose result reaches nothing but selects that may throw it away: `d != 0 ? x / d :
/// 0` as HLSL compilers write it (and GLSL's `mix(x / d, 0, equal(d, 0))`, WGSL's `select`), or IREE's
/// `expm1` (`x * (u - 1) / log(u)`, 0 / 0 where `u` is 1, which a select then replaces by `x`). The
/// division runs for every lane, and its NaN, made on purpose, is thrown away; checked at the division it
/// was a line about a NaN the program never used. Such an operation is checked after the last select of
/// its chain instead, on its result where the selects keep it (0 where they do not), with its own
/// operands and place: a NaN a select keeps is still reported as made by the operation.
///
/// A chain stays in one block: from the operation, through `OpFMul`, `OpFAdd`, `OpFSub` and `OpFNegate` (the
/// value one operand), `OpSelect`s (the value one choice, not the condition) and one variable of the function
/// (a store, then loads in the block: unoptimized compilers keep every local in one), each of the operation's
/// type, every value but the last used by the next step alone, anywhere in the function (a phi included; the
/// variable by its store and those loads alone), but for tests that make a boolean of it (comparisons,
/// `isnan`: `isnan(q) ? 0 : q`) whose boolean, alone or through logical operations, `any` and `all`, decides
/// the chain's selects and nothing else. It ends where its value has another use, or at the block's end; only
/// a chain with a select counts. A chain that goes into a variable after a select also counts as ending
/// there, for where that variable is used elsewhere. Operations checked as part of a shape (see `Fusions`)
/// and selects of a NaN constant (see `ConstantChoices`) are left as they are.
#[derive(Default)]
struct SelectedResults {
    /// The operations whose check waits.
    waiting: FastSet<u32>,
    /// By the last select's result: the chain.
    chains: FastMap<u32, SelectChain>,
}

/// A chain of selects from a checked operation (see [`SelectedResults`]).
#[derive(Clone)]
struct SelectChain {
    /// The operation's result.
    op: u32,
    /// Each select in order: its condition, and whether the value is its first choice.
    selects: smallvec::SmallVec<[(u32, bool); 2]>,
}

/// A chain being followed.
#[derive(Clone)]
struct OpenChain {
    chain: SelectChain,
    /// Its type.
    ty: u32,
    /// Its value so far: one id, or the loads of the variable it was stored in (none right after the store).
    heads: smallvec::SmallVec<[u32; 2]>,
    /// The function variable it was stored in, and how many loads of it the chain has seen.
    var: Option<(u32, usize)>,
    /// The values before it, each used once (by the next step).
    members: smallvec::SmallVec<[u32; 4]>,
    /// The booleans of tests of its values and those made of them, used only to make more of them or as
    /// the condition of one of its selects.
    tests: smallvec::SmallVec<[u32; 2]>,
    /// The last select's result.
    last_select: Option<u32>,
}

/// An operation's check waiting for the last select of its chain.
struct WaitingCheck {
    instruction: Instruction,
    location: Option<crate::info::SourceLocation>,
    name: &'static str,
    operands: smallvec::SmallVec<[u32; 3]>,
}

impl SelectedResults {
    fn find(module: &Module, base: &Base<'_>, pass: &NanGuardPass) -> SelectedResults {
        let mut found = SelectedResults::default();
        for function in &module.functions {
            // Chains of the current block, and those ended whose values must not be used again.
            let mut open: smallvec::SmallVec<[OpenChain; 4]> = smallvec::SmallVec::new();
            let mut ended: Vec<OpenChain> = Vec::new();
            // The function's variables (declared first in its first block), which a chain may go through:
            // listed once a block is walked.
            let mut vars: Option<smallvec::SmallVec<[u32; 8]>> = None;
            for block in &function.blocks {
                // A chain needs a select in its block: most blocks have none, and no chain to watch.
                if ended.is_empty() && !block.instructions.iter().any(|i| i.is(Op::Select)) {
                    continue;
                }
                let vars = vars.get_or_insert_with(|| {
                    function
                        .blocks
                        .first()
                        .into_iter()
                        .flat_map(|b| &b.instructions)
                        .take_while(|i| i.is(Op::Variable) || i.is_line())
                        .filter_map(|i| i.result_id)
                        .collect()
                });
                for inst in &block.instructions {
                    if !open.is_empty() || !ended.is_empty() {
                        Self::follow(inst, vars, &mut open, &mut ended);
                    }
                    if let Some(chain) = Self::start(base, pass, inst) {
                        open.push(chain);
                    }
                }
                ended.extend(open.drain(..).filter(|c| c.last_select.is_some()));
            }
            // A variable a chain went through is used by its store and its loads alone, anywhere in the
            // function (a loop's header, before the body in layout, may load it too).
            if ended.iter().any(|c| c.var.is_some()) {
                let uses = |var: u32| {
                    function
                        .blocks
                        .iter()
                        .flat_map(|b| &b.instructions)
                        .map(|i| i.operands.iter().filter(|&&w| w == var).count())
                        .sum::<usize>()
                };
                ended.retain(|c| c.var.is_none_or(|(var, loads)| uses(var) == 1 + loads));
            }
            // A value used by a phi is not thrown away (a loop's header comes before its body, so the walk
            // above may not have seen it).
            if !ended.is_empty() {
                let phis = function
                    .blocks
                    .iter()
                    .flat_map(|b| b.instructions.iter().filter(|i| i.is(Op::Phi)));
                for phi in phis {
                    let taken = |c: &OpenChain| {
                        c.members
                            .iter()
                            .chain(&c.tests)
                            .any(|m| phi.operands.contains(m))
                    };
                    ended.retain(|c| !taken(c));
                }
            }
            // The longest chain of each operation that holds.
            let mut longest: FastMap<u32, (u32, SelectChain)> = FastMap::default();
            for c in ended {
                let Some(last) = c.last_select else { continue };
                if pass.choices.inputs.contains_key(&last) {
                    continue;
                }
                match longest.get(&c.chain.op) {
                    Some((_, kept)) if kept.selects.len() >= c.chain.selects.len() => {}
                    _ => {
                        longest.insert(c.chain.op, (last, c.chain));
                    }
                }
            }
            for (op, (last, chain)) in longest {
                found.waiting.insert(op);
                found.chains.insert(last, chain);
            }
        }
        found
    }

    /// A chain from `inst` when it is a checked operation with a float result, not part of a shape.
    fn start(base: &Base<'_>, pass: &NanGuardPass, inst: &Instruction) -> Option<OpenChain> {
        let (ty, result) = (inst.result_type?, inst.result_id?);
        NanGuardPass::checked_op(base, inst)?;
        let f = &pass.fusions;
        if f.logs.contains(&result)
            || f.paired_exps.contains(&result)
            || f.pows.contains_key(&result)
            || f.exp_pairs.contains_key(&result)
            || !shape(&base.b.types, ty).is_some_and(|s| s.is_float())
        {
            return None;
        }
        Some(OpenChain {
            chain: SelectChain {
                op: result,
                selects: smallvec::SmallVec::new(),
            },
            ty,
            heads: smallvec::smallvec![result],
            var: None,
            members: smallvec::SmallVec::new(),
            tests: smallvec::SmallVec::new(),
            last_select: None,
        })
    }

    /// Moves each open chain whose value `inst` uses a step on, or ends it; drops every chain a value of
    /// which (but its last) `inst` uses again. `vars`: the function's variables.
    fn follow(
        inst: &Instruction,
        vars: &[u32],
        open: &mut smallvec::SmallVec<[OpenChain; 4]>,
        ended: &mut Vec<OpenChain>,
    ) {
        let o = &inst.operands;
        let uses = |id: u32| o.iter().filter(|&&w| w == id).count();
        let tested = |c: &OpenChain| c.tests.iter().any(|&t| uses(t) > 0);
        let head_uses = |c: &OpenChain| c.heads.iter().map(|&h| uses(h)).sum::<usize>();
        let member_used = |c: &OpenChain| c.members.iter().any(|&m| uses(m) > 0);
        // A test of a chain's value (`isnan(q)`, `q < 1`) makes a boolean, which takes no NaN further if
        // selects of the chain are all it decides: noted, and watched like the values, and so are the
        // booleans made of it (`isnan(q) || d == 0`, `any(isnan(v))`).
        if inst
            .op()
            .is_some_and(|op| is_condition(op) || matches!(op, Op::Any | Op::All))
        {
            if let Some(result) = inst.result_id {
                for c in open.iter_mut() {
                    if head_uses(c) > 0 || member_used(c) || tested(c) {
                        c.tests.push(result);
                    }
                }
                for c in ended.iter_mut() {
                    if member_used(c) || tested(c) {
                        c.tests.push(result);
                    }
                }
            }
            return;
        }
        // A load of the variable a chain was stored in (in its block) is its value again.
        if let (Some(Op::Load), Some(result), Some(&pointer)) =
            (inst.op(), inst.result_id, o.first())
        {
            let mut loaded = false;
            for c in open.iter_mut() {
                if let Some((var, loads)) = &mut c.var {
                    if *var == pointer && inst.result_type == Some(c.ty) {
                        c.heads.push(result);
                        *loads += 1;
                        loaded = true;
                    }
                }
            }
            if loaded {
                return;
            }
        }
        let var_used = |c: &OpenChain| c.var.is_some_and(|(var, _)| uses(var) > 0);
        ended.retain(|c| !member_used(c) && !tested(c) && !var_used(c));
        // An instruction that takes the values of two chains ends both: a step joins no chains.
        let heads = open.iter().filter(|c| head_uses(c) > 0).count();
        let mut i = 0;
        while i < open.len() {
            let c = &mut open[i];
            if member_used(c) || var_used(c) {
                open.remove(i);
                continue;
            }
            let used = head_uses(c);
            let same_type = heads == 1 && inst.result_type == Some(c.ty);
            let is_head = |id: u32| c.heads.contains(&id);
            let step = match (inst.op(), inst.result_id, o.as_slice()) {
                _ if used != 1 => None,
                (Some(Op::FMul | Op::FAdd | Op::FSub | Op::FNegate), Some(r), _) if same_type => {
                    Some(Step::Value(r, None))
                }
                (Some(Op::Select), Some(r), &[condition, a, b])
                    if same_type && !is_head(condition) && is_head(a) != is_head(b) =>
                {
                    Some(Step::Value(r, Some((condition, is_head(a)))))
                }
                // Into a variable of the function (unoptimized compilers keep every local in one).
                (Some(Op::Store), None, &[pointer, value, ..])
                    if heads == 1
                        && c.var.is_none()
                        && is_head(value)
                        && vars.contains(&pointer) =>
                {
                    Some(Step::Store(pointer))
                }
                _ => None,
            };
            // A test's boolean may decide a select of the chain (or make another boolean), nothing else.
            let condition = match step {
                Some(Step::Value(_, Some((condition, _)))) => Some(condition),
                _ => None,
            };
            let tests_ok = c
                .tests
                .iter()
                .all(|&t| uses(t) == 0 || (uses(t) == 1 && condition == Some(t)));
            if !tests_ok {
                open.remove(i);
                continue;
            }
            if used == 0 {
                i += 1;
                continue;
            }
            // A chain with a select already that goes into a variable: the chain as it is, ended here, is
            // kept too, for where the variable is used more than the longer chain allows.
            if matches!(step, Some(Step::Store(_))) && c.last_select.is_some() {
                ended.push(c.clone());
            }
            // Once a step takes the chain on, what it was is used no more (its other loads: only as tests,
            // before).
            if step.is_some() {
                let before = std::mem::take(&mut c.heads);
                c.members.extend(before);
            }
            match step {
                Some(Step::Value(r, select)) => {
                    c.heads.push(r);
                    if let Some(s) = select {
                        c.chain.selects.push(s);
                        c.last_select = Some(r);
                    }
                    i += 1;
                }
                Some(Step::Store(var)) => {
                    c.var = Some((var, 0));
                    i += 1;
                }
                // Another use: the chain ends here, its value free to be used anywhere.
                None => {
                    let c = open.remove(i);
                    if c.last_select.is_some() {
                        ended.push(c);
                    }
                }
            }
        }
    }
}

/// A step of a chain (see [`SelectedResults`]).
#[derive(Clone, Copy)]
enum Step {
    /// An arithmetic step or a select (its condition, and whether the value is its first choice).
    Value(u32, Option<(u32, bool)>),
    /// A store into a variable of the function.
    Store(u32),
}

/// Whether a float literal of `width` bits (low-order word first) is a NaN: exponent all ones, mantissa
/// not zero.
fn is_nan_literal(width: u32, words: &[u32]) -> bool {
    match (width, words) {
        (16, [w, ..]) => (w >> 10) & 0x1F == 0x1F && w & 0x3FF != 0,
        (32, [w, ..]) => (w >> 23) & 0xFF == 0xFF && w & 0x7F_FFFF != 0,
        (64, [low, high, ..]) => {
            (high >> 20) & 0x7FF == 0x7FF && (high & 0xF_FFFF != 0 || *low != 0)
        }
        _ => false,
    }
}

/// The opcodes that make a boolean from floats or from other booleans, which a select's condition is
/// followed through to the floats it compares.
fn is_condition(op: Op) -> bool {
    matches!(
        op,
        Op::FOrdEqual
            | Op::FUnordEqual
            | Op::FOrdNotEqual
            | Op::FUnordNotEqual
            | Op::FOrdLessThan
            | Op::FUnordLessThan
            | Op::FOrdGreaterThan
            | Op::FUnordGreaterThan
            | Op::FOrdLessThanEqual
            | Op::FUnordLessThanEqual
            | Op::FOrdGreaterThanEqual
            | Op::FUnordGreaterThanEqual
            | Op::IsNan
            | Op::IsInf
            | Op::IsFinite
            | Op::Ordered
            | Op::Unordered
            | Op::LogicalEqual
            | Op::LogicalNotEqual
            | Op::LogicalOr
            | Op::LogicalAnd
            | Op::LogicalNot
    )
}

/// The NaN guard pass.
pub(crate) struct NanGuardPass {
    level: NanLevel,
    fusions: Fusions,
    choices: ConstantChoices,
    powers: BuiltPowers,
    selected: SelectedResults,
    /// The checks waiting for the last select of their chain, by the operation's result.
    waiting_checks: FastMap<u32, WaitingCheck>,
    /// Integer values that hold the bits of floats, by id (ids are unique in the module, so the map is
    /// never cleared). Definitions come before their uses in a function's layout (blocks are in dominance
    /// order), so a store finds its value here when it is such a value.
    float_bits: FastMap<u32, FloatBits>,
    /// Pointers to fragment outputs of which the pipeline keeps only some components
    /// ([`crate::Options::fragment_output_components`]): the output variables, and access chains picking
    /// one component of them, with the kept components of what they point to.
    outputs_kept: FastMap<u32, Kept>,
    /// The module's fragment outputs ([`fragment_outputs`]), found at the NaN levels.
    outputs: Vec<(u32, FragmentOutput)>,
}

/// The components of a pointed-to float scalar or vector that reach an attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kept {
    /// Bit i: component i.
    mask: u8,
    /// Its components.
    count: u32,
}

impl Kept {
    fn all(self) -> bool {
        u16::from(self.mask) == (1u16 << self.count) - 1
    }
}

/// The float fragment output variables: scalars and vectors with a `Location` (and maybe a `Component`)
/// and no `Index` of 1 (a dual-source blend's second colour, which no attachment format describes). Empty
/// unless every entry point is a fragment shader.
fn fragment_outputs(module: &Module, base: &Base<'_>) -> Vec<(u32, FragmentOutput)> {
    let mut found = Vec::new();
    let fragment_only = !module.entry_points.is_empty()
        && module
            .entry_points
            .iter()
            .all(|e| e.operand(0) == Some(spirv::ExecutionModel::Fragment as u32));
    if !fragment_only {
        return found;
    }
    // Location, Component, Index, by target.
    let mut places: FastMap<u32, [Option<u32>; 3]> = FastMap::default();
    for inst in module.annotations.iter().filter(|i| i.is(Op::Decorate)) {
        let (Some(target), Some(decoration), Some(value)) =
            (inst.operand(0), inst.operand(1), inst.operand(2))
        else {
            continue;
        };
        let slot = match spirv::Decoration::from_u32(decoration) {
            Some(spirv::Decoration::Location) => 0,
            Some(spirv::Decoration::Component) => 1,
            Some(spirv::Decoration::Index) => 2,
            _ => continue,
        };
        places.entry(target).or_default()[slot] = Some(value);
    }
    for var in module.globals.iter().filter(|i| i.is(Op::Variable)) {
        let (Some(id), Some(ty)) = (var.result_id, var.result_type) else {
            continue;
        };
        let Some(Type::Pointer {
            storage: Some(StorageClass::Output),
            pointee,
        }) = base.b.types.get(ty)
        else {
            continue;
        };
        let Some([Some(location), component, index]) = places.get(&id).copied() else {
            continue;
        };
        let Some(s) = shape(&base.b.types, *pointee).filter(|s| s.is_float() && s.rows == 0) else {
            continue;
        };
        let component = component.unwrap_or(0);
        let count = s.components();
        if index.unwrap_or(0) == 0 && component + count <= 4 {
            found.push((
                id,
                FragmentOutput {
                    location,
                    component,
                    count,
                },
            ));
        }
    }
    found
}

/// How an integer value holds the bits of floats.
#[derive(Clone)]
enum FloatBits {
    /// It is `OpBitcast` of this float value.
    Of(u32),
    /// It is an `OpCompositeConstruct` with these parts bit-cast from floats: (part index, float value).
    Parts(Vec<(u32, u32)>),
}

/// Where a store or copy goes, by its pointer's storage class: the memory that outlives the invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Destination {
    Output,
    Buffer,
    RayPayload,
    IncomingRayPayload,
    CallableData,
    IncomingCallableData,
    HitAttribute,
    TaskPayload,
}

impl Destination {
    fn of(storage: StorageClass) -> Option<Destination> {
        use StorageClass as S;
        Some(match storage {
            S::Output => Destination::Output,
            S::StorageBuffer | S::PhysicalStorageBuffer | S::Uniform => Destination::Buffer,
            S::RayPayloadKHR => Destination::RayPayload,
            S::IncomingRayPayloadKHR => Destination::IncomingRayPayload,
            S::CallableDataKHR => Destination::CallableData,
            S::IncomingCallableDataKHR => Destination::IncomingCallableData,
            S::HitAttributeKHR => Destination::HitAttribute,
            S::TaskPayloadWorkgroupEXT => Destination::TaskPayload,
            _ => return None,
        })
    }

    /// The site's `what` for a store of floats, a store of floats' bits and a copy.
    fn names(self) -> [&'static str; 3] {
        match self {
            Destination::Output => ["output", "output of a bitcast float", "copy to output"],
            Destination::Buffer => [
                "storage buffer store",
                "storage buffer store of a bitcast float",
                "copy to storage buffer",
            ],
            Destination::RayPayload => [
                "ray payload store",
                "ray payload store of a bitcast float",
                "copy to ray payload",
            ],
            Destination::IncomingRayPayload => [
                "incoming ray payload store",
                "incoming ray payload store of a bitcast float",
                "copy to incoming ray payload",
            ],
            Destination::CallableData => [
                "callable data store",
                "callable data store of a bitcast float",
                "copy to callable data",
            ],
            Destination::IncomingCallableData => [
                "incoming callable data store",
                "incoming callable data store of a bitcast float",
                "copy to incoming callable data",
            ],
            Destination::HitAttribute => [
                "hit attribute store",
                "hit attribute store of a bitcast float",
                "copy to hit attribute",
            ],
            Destination::TaskPayload => [
                "task payload store",
                "task payload store of a bitcast float",
                "copy to task payload",
            ],
        }
    }
}

/// The storage class and pointee type of a pointer value; the pointee is `None` for an untyped pointer
/// (`SPV_KHR_untyped_pointers`), whose loads and stores name their type themselves.
fn pointer_of(base: &Base<'_>, pointer: u32) -> Option<(StorageClass, Option<u32>)> {
    match base.an.type_of(pointer).and_then(|t| base.b.types.get(t)) {
        Some(Type::Pointer {
            storage: Some(storage),
            pointee,
        }) => Some((*storage, Some(*pointee))),
        Some(Type::UntypedPointer {
            storage: Some(storage),
        }) => Some((*storage, None)),
        _ => None,
    }
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
        G::Ldexp => "ldexp",
        _ => return None,
    })
}

impl NanGuardPass {
    /// The module's float fragment outputs (see [`crate::ShaderInfo::fragment_outputs`]).
    pub(crate) fn fragment_outputs(&self) -> Vec<FragmentOutput> {
        self.outputs.iter().map(|&(_, output)| output).collect()
    }

    /// The pass for `options`.
    pub(crate) fn new(options: &crate::Options, module: &Module, base: &Base<'_>) -> NanGuardPass {
        let level = options.nan;
        let outputs = if level == NanLevel::Off {
            Vec::new()
        } else {
            fragment_outputs(module, base)
        };
        let kept = &options.fragment_output_components;
        let outputs_kept = match kept.is_empty() {
            true => FastMap::default(),
            false => outputs
                .iter()
                .map(|&(var, output)| {
                    let kept = Kept {
                        mask: output.kept(kept),
                        count: output.count,
                    };
                    (var, kept)
                })
                .filter(|(_, kept)| !kept.all())
                .collect(),
        };
        let mut pass = NanGuardPass {
            outputs_kept,
            outputs,
            level,
            fusions: if level == NanLevel::Ops {
                Fusions::find(module)
            } else {
                Fusions::default()
            },
            choices: if level == NanLevel::Ops {
                ConstantChoices::find(module)
            } else {
                ConstantChoices::default()
            },
            powers: if level == NanLevel::Ops {
                BuiltPowers::find(module, base)
            } else {
                BuiltPowers::default()
            },
            selected: SelectedResults::default(),
            waiting_checks: FastMap::default(),
            float_bits: FastMap::default(),
        };
        if level == NanLevel::Ops {
            pass.selected = SelectedResults::find(module, base, &pass);
        }
        pass
    }

    /// Notes the integer values made of floats' bits (see [`FloatBits`]).
    fn observe(&mut self, base: &Base<'_>, inst: &Instruction) {
        let (Some(op), Some(ty), Some(result)) = (inst.op(), inst.result_type, inst.result_id)
        else {
            return;
        };
        let is_float = |id: u32| {
            base.an
                .type_of(id)
                .and_then(|t| shape(&base.b.types, t))
                .is_some_and(|s| s.is_float())
        };
        let integer_result = || shape(&base.b.types, ty).is_some_and(|s| !s.is_float());
        let bits = match op {
            Op::Bitcast => match inst.operand(0) {
                Some(float) if is_float(float) && integer_result() => FloatBits::Of(float),
                _ => return,
            },
            Op::CompositeConstruct => {
                let mut parts: Vec<(u32, u32)> = inst
                    .operands
                    .iter()
                    .enumerate()
                    .filter_map(|(i, part)| match self.float_bits.get(part) {
                        Some(FloatBits::Of(float)) => Some((i as u32, *float)),
                        _ => None,
                    })
                    .take(MAX_LEAVES)
                    .collect();
                // A float splatted into several parts (`uvec4(floatBitsToUint(x))`) is checked once.
                let mut seen: smallvec::SmallVec<[u32; 4]> = smallvec::SmallVec::new();
                parts.retain(|&(_, float)| {
                    let first = !seen.contains(&float);
                    seen.push(float);
                    first
                });
                if parts.is_empty() || !integer_result() {
                    return;
                }
                FloatBits::Parts(parts)
            }
            Op::CopyObject => match inst.operand(0).and_then(|v| self.float_bits.get(&v)) {
                Some(bits) => bits.clone(),
                None => return,
            },
            _ => return,
        };
        self.float_bits.insert(result, bits);
    }

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
        // A logarithm that starts a `pow` is checked with it, at its exponential; an exponential of a
        // division or product of two, at that.
        if self.fusions.logs.contains(&result) || self.fusions.paired_exps.contains(&result) {
            return Ok(Edit::Keep);
        }
        let pow_operands;
        let (name, operands) = match self.fusions.pows.get(&result) {
            Some(&xy) => {
                pow_operands = xy;
                ("pow", &pow_operands[..])
            }
            None => (
                self.fusions.exp_pairs.get(&result).copied().unwrap_or(name),
                operands,
            ),
        };
        // A result that only selects may keep is checked at the last of them (see `SelectedResults`).
        if self.selected.waiting.contains(&result) {
            self.waiting_checks.insert(
                result,
                WaitingCheck {
                    instruction: inst.clone(),
                    location: at.location(),
                    name,
                    operands: smallvec::SmallVec::from_slice(operands),
                },
            );
            return Ok(Edit::Keep);
        }
        self.check_op(base, at, name, operands, result, Vec::new())
    }

    /// The check of an operation named `name` (`at` names its instruction): `operands` finite, `result`
    /// not. `before`: instructions that make `result`, put before the site's.
    fn check_op(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        name: &'static str,
        operands: &[u32],
        result: u32,
        mut before: Vec<Instruction>,
    ) -> Result<Edit, NotInstrumented> {
        let mut values = Vec::with_capacity(operands.len() + 1);
        for (i, &operand) in operands.iter().enumerate() {
            let float = base
                .an
                .type_of(operand)
                .and_then(|t| shape(&base.b.types, t))
                .is_some_and(|s| s.is_float());
            if float {
                // The checked operations take up to three operands: their names are copied, not formatted.
                let name = match OPERAND_NAMES.get(i) {
                    Some(name) => name.to_string(),
                    None => format!("operand {i}"),
                };
                values.push((name, operand));
            }
        }
        let inputs = values.len();
        values.push(("result".to_string(), result));
        let kind = SiteKind::NanOp { op: name };
        let site = base.site(
            at,
            kind,
            None,
            values,
            HelperKind::NanCheck { inputs },
            None,
        )?;
        let Some(site) = site else {
            return Ok(Edit::Keep);
        };
        let site = if before.is_empty() {
            site
        } else {
            before.extend(site);
            before
        };
        Ok(base.check_later(site, inputs))
    }

    /// At the last select of a chain (see [`SelectedResults`]): the waiting operation's check, of its
    /// result where the chain's selects keep it (0 where they do not: one new select for each of theirs,
    /// with the same condition).
    fn check_selected(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
        chain: SelectChain,
    ) -> Result<Edit, NotInstrumented> {
        let (Some(waiting), Some(ty)) = (self.waiting_checks.remove(&chain.op), inst.result_type)
        else {
            return Ok(Edit::Keep);
        };
        let null = base.b.const_null(ty);
        let mut before = Vec::with_capacity(chain.selects.len());
        let mut kept = chain.op;
        for &(condition, first) in &chain.selects {
            let id = base.b.id();
            let choices = if first { [kept, null] } else { [null, kept] };
            before.push(Instruction::new(
                Op::Select,
                Some(ty),
                Some(id),
                smallvec::smallvec![condition, choices[0], choices[1]],
            ));
            base.an.set_type(id, ty);
            kept = id;
        }
        let at = at.earlier(&waiting.instruction, &waiting.location);
        self.check_op(base, &at, waiting.name, &waiting.operands, kept, before)
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
            leaves,
            HelperKind::NanCheck { inputs: 0 },
            None,
        )?
        else {
            return Ok(Edit::Keep);
        };
        extracts.extend(call);
        Ok(Edit::After(extracts))
    }

    /// A value written out: checked as the floats whose bits it holds (`bits_what`) when it is such an
    /// integer, else as floats (`float_what`) when it has float leaves; kept as it is when it is neither.
    fn written_value(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        value: u32,
        float_what: &'static str,
        bits_what: &'static str,
    ) -> Result<Edit, NotInstrumented> {
        match self.float_bits.get(&value) {
            Some(bits) => {
                let leaves: Vec<(String, u32)> = match bits {
                    FloatBits::Of(float) => vec![("value".to_string(), *float)],
                    FloatBits::Parts(parts) => parts
                        .iter()
                        .map(|&(i, float)| (format!("value[{i}]"), float))
                        .collect(),
                };
                self.check(base, at, leaves, bits_what)
            }
            None => self.visit_store(base, at, value, float_what),
        }
    }

    /// Notes an access chain that picks one component of a fragment output the pipeline keeps only
    /// some components of ([`NanGuardPass::outputs_kept`]): a store through it is checked only if the
    /// component is kept. A chain with an index that is not a constant is not noted: a store through it is
    /// checked as any other.
    fn observe_chain(&mut self, base: &Base<'_>, inst: &Instruction) {
        let (Some(result), [pointer, index]) = (inst.result_id, inst.operands.as_slice()) else {
            return;
        };
        let (Some(kept), Some(component)) = (
            self.outputs_kept.get(pointer).copied(),
            base.b.types.int_value(*index),
        ) else {
            return;
        };
        if component < kept.count && kept.mask & (1 << component) == 0 {
            self.outputs_kept.insert(result, Kept { mask: 0, count: 1 });
        }
    }

    /// A store to a fragment output of which the pipeline keeps the components `kept`: those are checked
    /// (none: no check), as `value.xz` and the like.
    fn kept_output(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        value: u32,
        kept: Kept,
    ) -> Result<Edit, NotInstrumented> {
        if kept.mask == 0 {
            return Ok(Edit::Keep);
        }
        let value_shape = base.an.type_of(value).and_then(|t| shape(&base.b.types, t));
        let Some(s) = value_shape.filter(|s| s.is_float() && s.components() == kept.count) else {
            return self.written_value(base, at, value, "output", "output of a bitcast float");
        };
        let components: smallvec::SmallVec<[u32; 4]> = (0..kept.count)
            .filter(|c| kept.mask & (1 << c) != 0)
            .collect();
        let name: String = components
            .iter()
            .map(|&c| ['x', 'y', 'z', 'w'][c as usize])
            .collect();
        let picked = base.b.id();
        let pick = if let [component] = components[..] {
            base.an.set_type(picked, s.scalar_type);
            Instruction::new(
                Op::CompositeExtract,
                Some(s.scalar_type),
                Some(picked),
                smallvec::smallvec![value, component],
            )
        } else {
            let ty = base.b.type_vector(s.scalar_type, components.len() as u32);
            base.an.set_type(picked, ty);
            let mut operands: smallvec::SmallVec<[u32; 5]> = smallvec::smallvec![value, value];
            operands.extend(components.iter().copied());
            Instruction::new(Op::VectorShuffle, Some(ty), Some(picked), operands)
        };
        let leaves = vec![(format!("value.{name}"), picked)];
        match self.check(base, at, leaves, "output")? {
            Edit::After(check) => {
                let mut out = Vec::with_capacity(check.len() + 1);
                out.push(pick);
                out.extend(check);
                Ok(Edit::After(out))
            }
            edit => Ok(edit),
        }
    }

    /// A NaN-output site for values that are all floats; its call goes right after the instruction.
    fn check(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        leaves: Vec<(String, u32)>,
        what: &'static str,
    ) -> Result<Edit, NotInstrumented> {
        let kind = SiteKind::NanOutput { what };
        let site = base.site(
            at,
            kind,
            None,
            leaves,
            HelperKind::NanCheck { inputs: 0 },
            None,
        )?;
        Ok(site.map_or(Edit::Keep, Edit::After))
    }

    /// `OpCopyMemory` (and the `OpCopyMemorySized` that [`sized_copy_type`] accepts) into memory that
    /// leaves the invocation: the source is loaded right before the copy, and the loaded value's floats
    /// checked right after it.
    fn visit_copy(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        let (Some(target), Some(source)) = (inst.operand(0), inst.operand(1)) else {
            return Ok(Edit::Keep);
        };
        let (Some((target_storage, target_type)), Some((source_storage, source_type))) =
            (pointer_of(base, target), pointer_of(base, source))
        else {
            return Ok(Edit::Keep);
        };
        let Some(destination) = Destination::of(target_storage) else {
            return Ok(Edit::Keep);
        };
        let (copied, memory_operands) = if inst.is(Op::CopyMemorySized) {
            (sized_copy_type(base, inst), inst.operands.get(3..))
        } else {
            // The two types are the same; one of the pointers may be untyped.
            (source_type.or(target_type), inst.operands.get(2..))
        };
        let Some(copied) = copied else {
            return Ok(Edit::Keep);
        };
        if !contains_float(base, copied, 0) || !loadable(base, copied, 0) {
            return Ok(Edit::Keep);
        }
        let mut load_operands: smallvec::SmallVec<[u32; 5]> = smallvec::smallvec![source];
        if source_storage == StorageClass::PhysicalStorageBuffer {
            // Loads through device addresses must say their alignment: the copy's, for its source.
            match copy_source_alignment(memory_operands.unwrap_or(&[])) {
                Some(alignment) => {
                    load_operands.extend([MemoryAccess::ALIGNED.bits(), alignment]);
                }
                None => return Ok(Edit::Keep),
            }
        }
        let loaded = base.b.id();
        base.an.set_type(loaded, copied);
        let load = Instruction::new(Op::Load, Some(copied), Some(loaded), load_operands);
        let what = destination.names()[2];
        match self.visit_store(base, at, loaded, what)? {
            Edit::After(check) => {
                let mut out = Vec::with_capacity(check.len() + 2);
                out.push(load);
                out.push(inst.clone());
                out.extend(check);
                Ok(Edit::Replace(out))
            }
            _ => Ok(Edit::Keep),
        }
    }

    /// A float atomic, or an integer atomic write of a float's bits, on memory that leaves the invocation.
    fn visit_atomic(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        op: Op,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        let (value_index, float_what, bits_what) = match op {
            Op::AtomicFAddEXT => (3, "atomic float add", ""),
            Op::AtomicFMinEXT => (3, "atomic float min", ""),
            Op::AtomicFMaxEXT => (3, "atomic float max", ""),
            Op::AtomicStore => (3, "atomic float store", "atomic store of a bitcast float"),
            Op::AtomicExchange => (
                3,
                "atomic float exchange",
                "atomic exchange of a bitcast float",
            ),
            // Integer only: the value written may still be a float's bits.
            Op::AtomicCompareExchange => (4, "", "atomic compare-exchange of a bitcast float"),
            _ => return Ok(Edit::Keep),
        };
        let (Some(pointer), Some(value)) = (inst.operand(0), inst.operand(value_index)) else {
            return Ok(Edit::Keep);
        };
        let leaves_invocation = pointer_of(base, pointer).is_some_and(|(storage, _)| {
            storage == StorageClass::Image || Destination::of(storage).is_some()
        });
        if !leaves_invocation {
            return Ok(Edit::Keep);
        }
        if self.float_bits.contains_key(&value) {
            return self.written_value(base, at, value, float_what, bits_what);
        }
        if float_what.is_empty() {
            return Ok(Edit::Keep);
        }
        self.visit_store(base, at, value, float_what)
    }
}

/// The type an `OpCopyMemorySized` copies, when the engine can tell: a float scalar or vector that a typed
/// pointer at either end points to (the same at both when both are typed), and a constant size of exactly
/// its bytes (`vec4` and 16, say: scalars and vectors have no layout to ask about).
///
/// Other sized copies are left unchecked. In Vulkan, `OpCopyMemorySized` comes with untyped pointers
/// (`SPV_KHR_untyped_pointers`; its other capability, `Addresses`, is not a Vulkan one): a copy between two
/// of them, or of some bytes of a struct or array, copies bytes whose floats only the memory layouts at both
/// ends could tell, and the copy states neither.
fn sized_copy_type(base: &Base<'_>, inst: &Instruction) -> Option<u32> {
    let (_, target) = pointer_of(base, inst.operand(0)?)?;
    let (_, source) = pointer_of(base, inst.operand(1)?)?;
    let ty = match (target, source) {
        (Some(t), Some(s)) if t != s => return None,
        (t, s) => s.or(t)?,
    };
    let size = base.b.types.int_value(inst.operand(2)?)?;
    let s = shape(&base.b.types, ty)?;
    let bytes = s.components().checked_mul(s.width / 8)?;
    (s.is_float() && s.rows == 0 && size == bytes).then_some(ty)
}

/// The alignment an `OpCopyMemory`'s memory operands (`operands`, the words after its pointers) give its
/// source: the second mask's when there are two (SPIR-V 1.4 and later), else the one mask's (which applies
/// to both pointers).
fn copy_source_alignment(operands: &[u32]) -> Option<u32> {
    let aligned = MemoryAccess::ALIGNED.bits();
    // Each of these bits takes one word after the mask; the others take none.
    let with_parameter = aligned
        | (MemoryAccess::MAKE_POINTER_AVAILABLE | MemoryAccess::MAKE_POINTER_VISIBLE).bits();
    let first = *operands.first()?;
    let first_len = 1 + (first & with_parameter).count_ones() as usize;
    let source = match operands.get(first_len..) {
        Some(second) if !second.is_empty() => second,
        _ => operands,
    };
    let mask = *source.first()?;
    // `Aligned` is the lowest bit that takes a word, so its word comes first.
    (mask & aligned != 0)
        .then(|| source.get(1).copied())
        .flatten()
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
        Some(Type::Struct { members }) => base
            .b
            .types
            .members(*members)
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let member = base.an.member_name(ty, i as u32).filter(|n| !n.is_empty());
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
    if depth > 4 {
        return false;
    }
    if let Some(s) = shape(&base.b.types, ty) {
        return s.is_float();
    }
    match base.b.types.get(ty) {
        Some(Type::Struct { members }) => base
            .b
            .types
            .members(*members)
            .iter()
            .any(|&m| contains_float(base, m, depth + 1)),
        Some(Type::Array { element, .. }) => contains_float(base, *element, depth + 1),
        _ => false,
    }
}

/// Whether a value of type `ty` can be loaded as a whole: numbers, bools, and vectors, matrices, structs and
/// sized arrays of them (no runtime arrays, images, pointers...).
fn loadable(base: &Base<'_>, ty: u32, depth: usize) -> bool {
    if depth > 8 {
        return false;
    }
    match base.b.types.get(ty) {
        Some(Type::Bool | Type::Int { .. } | Type::Float { .. }) => true,
        Some(Type::Vector { component, .. }) => loadable(base, *component, depth + 1),
        Some(Type::Matrix { column, .. }) => loadable(base, *column, depth + 1),
        Some(Type::Struct { members }) => base
            .b
            .types
            .members(*members)
            .iter()
            .all(|&m| loadable(base, m, depth + 1)),
        Some(Type::Array { element, .. }) => loadable(base, *element, depth + 1),
        _ => false,
    }
}

/// Whether the pass at `level` may do anything at an instruction of `op`: checks it (an operation at
/// `ops`, a write), or notes it ([`NanGuardPass::observe`]). The list is the opcodes of
/// [`NanGuardPass::checked_op`], [`ConstantChoices`] (selects), [`Fusions`] and [`BuiltPowers`]
/// (products), [`NanGuardPass::observe`] and
/// `visit_some`'s match: an opcode added to one of those goes here too, or the pass never sees it.
#[inline]
fn may_visit(op: Op, level: NanLevel) -> bool {
    matches!(
        op,
        Op::Store
            | Op::ImageWrite
            | Op::CopyMemory
            | Op::CopyMemorySized
            | Op::AtomicFAddEXT
            | Op::AtomicFMinEXT
            | Op::AtomicFMaxEXT
            | Op::AtomicStore
            | Op::AtomicExchange
            | Op::AtomicCompareExchange
            | Op::ReportIntersectionKHR
            | Op::Bitcast
            | Op::CompositeConstruct
            | Op::CopyObject
    ) || (level == NanLevel::Ops
        && matches!(
            op,
            Op::FDiv | Op::FRem | Op::FMod | Op::ExtInst | Op::FMul | Op::Select
        ))
}

impl NanGuardPass {
    /// [`Pass::visit`] for an instruction that [`may_visit`] lets through.
    #[inline(never)]
    fn visit_some(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        if self.level == NanLevel::Off {
            return Ok(Edit::Keep);
        }
        if self.level == NanLevel::Ops {
            // A select is a site only in the rare module with one of a NaN constant (see
            // `ConstantChoices`).
            if inst.is(Op::Select) {
                // Each chain's last select comes once: its chain is taken, not copied.
                let chain = inst.result_id.and_then(|r| self.selected.chains.remove(&r));
                if let Some(chain) = chain {
                    return self.check_selected(base, at, inst, chain);
                }
                let inputs = inst.result_id.and_then(|r| self.choices.inputs.get(&r));
                return match inputs.cloned() {
                    Some(inputs) => self.visit_op(base, at, inst, SELECT_OF_CONSTANT, &inputs),
                    None => Ok(Edit::Keep),
                };
            }
            if let Some((name, operands)) = Self::checked_op(base, inst) {
                return self.visit_op(base, at, inst, name, operands);
            }
            // A product is checked only where it is one of two exponentials (see `Fusions`) or scales by a
            // power of two built from its bits (see `BuiltPowers`).
            if inst.is(Op::FMul) {
                return match inst.result_id.and_then(|r| self.fusions.exp_pairs.get(&r)) {
                    Some(&name) => self.visit_op(base, at, inst, name, &inst.operands),
                    None => match self.powers.k_of_product(inst) {
                        Some(k) => self.visit_op(base, at, inst, PRODUCT_BY_BUILT_POWER, &[k]),
                        None => Ok(Edit::Keep),
                    },
                };
            }
        }
        self.observe(base, inst);
        let Some(op) = inst.op() else {
            return Ok(Edit::Keep);
        };
        // A check right after the write it checks joins the block's group of checks (a check of what is
        // written has no inputs).
        let grouped = |base: &Base<'_>, edit: Edit| match edit {
            Edit::After(site) => base.check_later(site, 0),
            edit => edit,
        };
        match op {
            Op::Store => {
                let (Some(pointer), Some(value)) = (inst.operand(0), inst.operand(1)) else {
                    return Ok(Edit::Keep);
                };
                if let Some(&kept) = self.outputs_kept.get(&pointer) {
                    let edit = self.kept_output(base, at, value, kept)?;
                    return Ok(grouped(base, edit));
                }
                match pointer_of(base, pointer).and_then(|(s, _)| Destination::of(s)) {
                    Some(destination) => {
                        let [store, bits, _] = destination.names();
                        let edit = self.written_value(base, at, value, store, bits)?;
                        Ok(grouped(base, edit))
                    }
                    None => Ok(Edit::Keep),
                }
            }
            Op::ImageWrite => match inst.operand(2) {
                Some(texel) => {
                    let edit = self.written_value(
                        base,
                        at,
                        texel,
                        "image store",
                        "image store of a bitcast float",
                    )?;
                    Ok(grouped(base, edit))
                }
                None => Ok(Edit::Keep),
            },
            Op::CopyMemory | Op::CopyMemorySized => self.visit_copy(base, at, inst),
            Op::AtomicFAddEXT
            | Op::AtomicFMinEXT
            | Op::AtomicFMaxEXT
            | Op::AtomicStore
            | Op::AtomicExchange
            | Op::AtomicCompareExchange => {
                let edit = self.visit_atomic(base, at, op, inst)?;
                Ok(grouped(base, edit))
            }
            Op::ReportIntersectionKHR => {
                let Some(hit) = inst.operand(0) else {
                    return Ok(Edit::Keep);
                };
                // Before the report, which does not return when an any-hit shader ends the ray.
                match self.visit_store(base, at, hit, "reported hit distance")? {
                    Edit::After(mut check) => {
                        check.push(inst.clone());
                        Ok(Edit::Replace(check))
                    }
                    _ => Ok(Edit::Keep),
                }
            }
            _ => Ok(Edit::Keep),
        }
    }
}

impl Pass for NanGuardPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        // Most instructions are none the pass looks at: answered here, without the stack frame and saved
        // registers of the checks (a call per instruction of every function).
        match inst.op() {
            Some(op) if may_visit(op, self.level) => self.visit_some(base, at, inst),
            // Only where a pipeline's attachments narrow the outputs: access chains are common.
            Some(Op::AccessChain | Op::InBoundsAccessChain) if !self.outputs_kept.is_empty() => {
                self.observe_chain(base, inst);
                Ok(Edit::Keep)
            }
            _ => Ok(Edit::Keep),
        }
    }

    /// Off: no checks.
    fn active(&self, _base: &Base<'_>) -> bool {
        self.level != NanLevel::Off
    }
}

#[cfg(test)]
mod tests {
    use super::is_nan_literal;

    #[test]
    fn nan_literals_are_told_from_infs_and_numbers_at_every_width() {
        // f16: NaN 0x7E00, -Inf 0xFC00, 1.0 0x3C00.
        assert!(is_nan_literal(16, &[0x7E00]));
        assert!(!is_nan_literal(16, &[0xFC00]));
        assert!(!is_nan_literal(16, &[0x3C00]));
        // f32: NaN 0x7FC00000 and a signalling 0xFF800001, +Inf 0x7F800000, the largest finite 0x7F7FFFFF.
        assert!(is_nan_literal(32, &[0x7FC0_0000]));
        assert!(is_nan_literal(32, &[0xFF80_0001]));
        assert!(!is_nan_literal(32, &[0x7F80_0000]));
        assert!(!is_nan_literal(32, &[0x7F7F_FFFF]));
        // f64, low word first: a NaN whose mantissa is only in the low word, +Inf, and 1.0.
        assert!(is_nan_literal(64, &[1, 0x7FF0_0000]));
        assert!(is_nan_literal(64, &[0, 0x7FF8_0000]));
        assert!(!is_nan_literal(64, &[0, 0x7FF0_0000]));
        assert!(!is_nan_literal(64, &[0, 0x3FF0_0000]));
        // A literal too short for its width is no NaN.
        assert!(!is_nan_literal(64, &[0x7FF8_0000]));
    }
}
