//! The instrumentation base that every pass builds on.
//!
//! A pass ([`Pass`]) is a callback that looks at each instruction of the input's functions and answers with
//! an [`Edit`]. The base owns everything else:
//!
//! - walking the functions in module order with the source location and the stage of each instruction;
//! - numbering sites and describing them ([`Base::site`]);
//! - the error-buffer access: the `PhysicalStorageBufferAddresses` capability, `SPV_KHR_physical_storage_buffer`
//!   below SPIR-V 1.5 (the extension works from SPIR-V 1.0, so the version is never raised), the
//!   `PhysicalStorageBuffer64` addressing model, and the buffer's device address baked in as a `uvec2`
//!   constant bit-cast to a pointer;
//! - helper functions, built once and called from each site: `bb_begin`, one per module, that counts the
//!   site and allocates a record and writes its header (see [`crate::record`]); a *value helper* per
//!   argument-type list that (for NaN checks) tests the values, then calls `bb_begin` and stores the values
//!   as payload words; a *crash* helper; and a *prologue* per stage that stores the invocation ids and the
//!   stage into two `Private` variables;
//! - a call to the prologue at the start of every entry point function, and the entry points' interfaces.
//!
//! Every conditional lives inside the helpers, so instrumenting a site never splits the application's blocks
//! or touches its control flow: a site is one `OpFunctionCall` placed after (or instead of) the instruction
//! (with, at most, the `OpCompositeExtract`s or the `OpFConvert` that pick its values), or, for NaN checks of
//! operations, a few inline instructions and one call per group of checks ([`deferred`]). Block splitting is
//! the helpers' business, and they are built block by block from scratch ([`builder::FnBuilder`]).
//! The output depends only on the input and the options: maps are only looked up, never iterated, and
//! everything new is emitted in creation order.

pub(crate) mod builder;
mod deferred;
mod helpers;
mod pending;
pub(crate) mod values;

use std::sync::Arc;

use spirv::{AddressingModel, Capability, MemoryModel, Op};

use crate::analysis::source::{DebugSources, LineTracker};
use crate::analysis::Analysis;
use crate::error::NotInstrumented;
use crate::info::{Site, SiteKind, SourceLocation, Stage};
use crate::module::{Instruction, Module, Operands};
use crate::record::{self, ScalarType, ValueLayout, MAX_PAYLOAD_WORDS};
use crate::util::FastMap;
use crate::Options;

pub(crate) use builder::Builder;

/// What a pass does with one instruction.
pub(crate) enum Edit {
    /// Leave it.
    Keep,
    /// Delete it.
    Remove,
    /// Put these instructions in its place.
    Replace(Vec<Instruction>),
    /// Keep it and put these instructions right after it.
    After(Vec<Instruction>),
    /// Keep it; `site` (from [`Base::site`], a NaN check) joins the current group of checks ([`deferred`]):
    /// its last instruction, the call, runs only if a quick test of the values some check of the group
    /// tests fails. Made by [`Base::check_later`], with those values and their shapes (`tested`).
    CheckLater {
        site: Vec<Instruction>,
        tested: deferred::TestedValues,
    },
}

/// Where an instruction is.
pub(crate) struct At<'a> {
    /// The function's id.
    pub function: u32,
    /// The stage of the first entry point that reaches the function.
    pub stage: Stage,
    lines: &'a LineTracker,
    /// The instruction being visited, as the input has it (sites name it).
    instruction: &'a Instruction,
    /// For a check made after its instruction (see [`At::earlier`]): that instruction's location.
    earlier_location: Option<&'a Option<SourceLocation>>,
}

impl At<'_> {
    /// The instruction's source location.
    pub(crate) fn location(&self) -> Option<SourceLocation> {
        match self.earlier_location {
            Some(location) => location.clone(),
            None => self.lines.current(),
        }
    }

    /// Where an earlier `instruction` of the same function was, at `location`: for a check of it made
    /// here, which names it and its place.
    pub(crate) fn earlier<'b>(
        &'b self,
        instruction: &'b Instruction,
        location: &'b Option<SourceLocation>,
    ) -> At<'b> {
        At {
            function: self.function,
            stage: self.stage,
            lines: self.lines,
            instruction,
            earlier_location: Some(location),
        }
    }
}

/// One instrumentation pass: a callback over the instructions of the input's functions.
pub(crate) trait Pass {
    /// Decides what to do with `inst`, building sites through `base`.
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented>;

    /// Whether the pass can change anything in this module at all; one that cannot is never asked (a
    /// call per pass and instruction is most of the walk's cost where nothing is instrumented).
    fn active(&self, base: &Base<'_>) -> bool;
}

/// What a site's helper does with its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum HelperKind {
    /// Always record the values.
    Record,
    /// [`HelperKind::Record`] for an assert: the helper stores the record header itself, in its branch
    /// for an allocated record (`bb_begin` without the header), after the payload and its first word last.
    /// On NVIDIA's compiler that kept an assert's cost in a hot loop lower (1.052x / 1.062x to 1.012x /
    /// 1.027x, README). Printf, loop and integer records leave the header to `bb_begin`: no benchmark
    /// showed a gain for them.
    AssertRecord,
    /// Record only when the first `inputs` values are all finite and some later value is NaN or Inf.
    NanCheck { inputs: usize },
    /// A [`HelperKind::NanCheck`] whose record waits in `bb_pending` until the invocation ends
    /// ([`pending`]); its call has the site's slot there in place of the cap.
    PendingNanCheck { inputs: usize },
    /// A [`HelperKind::Record`] of an integer check whose record waits in `bb_pending` until the
    /// invocation ends ([`pending`]); its call has the site's slot there in place of the cap.
    PendingRecord,
}

/// The instrumentation context of one module.
pub(crate) struct Base<'o> {
    pub options: &'o Options,
    pub an: Analysis,
    pub b: Builder,
    pub sites: Vec<Site>,
    sources: DebugSources,
    version: (u8, u8),
    vulkan_memory_model: bool,
    /// The module may compute with 16-bit floats (`Float16`).
    float16: bool,
    buffer: Option<helpers::BufferAccess>,
    private: Option<helpers::PrivateVars>,
    /// `bb_begin`, once built, and its variant that leaves the header to the caller.
    begin: Option<u32>,
    begin_no_header: Option<u32>,
    /// Value helpers by kind and argument types (a few: kept inline, so that a lookup allocates nothing).
    helpers: FastMap<(HelperKind, smallvec::SmallVec<[u32; 8]>), u32>,
    /// NaN records waiting until the invocation ends, once a site has a slot.
    pending: Option<pending::Pending>,
    crash: Option<u32>,
    /// The last site's function: sites come function by function, and a site in the same function copies
    /// the last site's function name and entry point names (decoding these for each cost more).
    last_site_function: Option<u32>,
}

impl<'o> Base<'o> {
    /// The context for `module`. Fails for modules the engine cannot instrument at all.
    /// `value_types`: as for [`Analysis::with_value_types`].
    pub(crate) fn new(
        module: &Module,
        value_types: Vec<u32>,
        options: &'o Options,
    ) -> Result<Base<'o>, NotInstrumented> {
        let an = Analysis::with_value_types(module, value_types)?;
        if module.has_capability(Capability::Kernel) {
            return Err(NotInstrumented::unsupported(
                "kernel modules (the Kernel capability) are not instrumented",
            ));
        }
        let [model] = module.memory_model.as_slice() else {
            return Err(NotInstrumented::malformed(
                "the module needs exactly one OpMemoryModel",
            ));
        };
        let addressing = model.operand(0);
        if !matches!(
            addressing.and_then(AddressingModel::from_u32),
            Some(AddressingModel::Logical | AddressingModel::PhysicalStorageBuffer64)
        ) {
            return Err(NotInstrumented::unsupported(format!(
                "addressing model {addressing:?} is not Logical"
            )));
        }
        let vulkan_memory_model = model.operand(1) == Some(MemoryModel::Vulkan as u32);
        let sources = DebugSources::new(module, &an);
        Ok(Base {
            options,
            an,
            // The type table is read by `instrument` once a pass may build something (see
            // `passes::may_instrument`).
            b: Builder::deferred(module),
            sites: Vec::new(),
            sources,
            version: module.version(),
            vulkan_memory_model,
            float16: module.has_capability(Capability::Float16),
            buffer: None,
            private: None,
            begin: None,
            begin_no_header: None,
            helpers: FastMap::default(),
            pending: None,
            crash: None,
            last_site_function: None,
        })
    }

    /// Runs the passes over every function of the module, in module order. At each instruction the passes
    /// are asked in order; the first that does not answer [`Edit::Keep`] decides.
    pub(crate) fn run(
        &mut self,
        module: &mut Module,
        passes: &mut [&mut dyn Pass],
    ) -> Result<(), NotInstrumented> {
        let default_stage = self
            .an
            .entry_points
            .first()
            .map_or(Stage::Compute, |e| e.stage);
        let mut passes: Vec<&mut dyn Pass> = passes
            .iter_mut()
            .filter(|p| p.active(self))
            .map(|p| &mut **p)
            .collect();
        if passes.is_empty() {
            return Ok(());
        }
        // `passes::may_instrument` should have said so already.
        debug_assert!(
            self.b.types_read(),
            "a pass is active: the type table is needed"
        );
        self.b.read_types(module);
        let mut functions = std::mem::take(&mut module.functions);
        let mut lines = LineTracker::default();
        // Each block's new list is built here and swapped into the block; the block's old list, emptied,
        // is kept for the next block: one list allocated per block rather than two (large ones, which the
        // allocator serves slowly).
        let mut spare: Vec<Instruction> = Vec::new();
        let mut group = deferred::Group::default();
        let result = (|| {
            for f in &mut functions {
                let function = f.id();
                let stage = self
                    .an
                    .function_stage
                    .get(&function)
                    .copied()
                    .unwrap_or(default_stage);
                lines.reset();
                for block in &mut f.blocks {
                    // Room for what sites add: sized as the block, the list grew (every instruction
                    // moved again) in any block that got a site. Two and a half times the block: at the
                    // NaN levels a site adds several instructions after one, and one and a half still
                    // grew the lists of small blocks often (-0.5 M at NaN ops; twice: +6 k at asserts).
                    let room = block.instructions.len() * 5 / 2;
                    let mut new = std::mem::take(&mut spare);
                    if new.capacity() < room {
                        // A fresh list rather than `reserve`, which would copy the old one's (dead) words.
                        new = Vec::with_capacity(room);
                    }
                    for inst in block.instructions.drain(..) {
                        if deferred::ends_group(&inst) {
                            self.end_group(&mut group, &mut new);
                        }
                        lines.observe(&self.an, &self.b.types, &self.sources, &inst);
                        let at = At {
                            function,
                            stage,
                            lines: &lines,
                            instruction: &inst,
                            earlier_location: None,
                        };
                        let mut edit = Edit::Keep;
                        for pass in passes.iter_mut() {
                            edit = pass.visit(self, &at, &inst)?;
                            if !matches!(edit, Edit::Keep) {
                                break;
                            }
                        }
                        match edit {
                            Edit::Keep => new.push(inst),
                            Edit::Remove => {}
                            Edit::Replace(insts) => new.extend(insts),
                            Edit::After(insts) => {
                                new.push(inst);
                                new.extend(insts);
                            }
                            Edit::CheckLater { site, tested } => {
                                new.push(inst);
                                self.defer(&mut group, &mut new, site, tested);
                            }
                        }
                    }
                    self.end_group(&mut group, &mut new);
                    spare = std::mem::replace(&mut block.instructions, new);
                }
            }
            Ok(())
        })();
        module.functions = functions;
        result
    }

    /// Creates a site and returns the instructions that record it (conversions, then the call). `values` are
    /// (name, id) pairs; their types come from the module. Values beyond [`MAX_PAYLOAD_WORDS`] are left out
    /// (for [`HelperKind::NanCheck`] the site is then not made: `Ok(None)`). `result_id` is the id for the
    /// call (a fresh one when `None`).
    ///
    /// In a module without the `Float16` capability, 16-bit floats exist only in memory and conversions, so
    /// such values are widened to 32 bits before the call (the payload holds them widened anyway).
    pub(crate) fn site(
        &mut self,
        at: &At<'_>,
        kind: SiteKind,
        format: Option<String>,
        // Owned: the names move into the site's description.
        values: Vec<(String, u32)>,
        helper: HelperKind,
        result_id: Option<u32>,
    ) -> Result<Option<Vec<Instruction>>, NotInstrumented> {
        // Sized up front: a site has a few values, and each list grown push by push allocated again.
        let mut out = Vec::with_capacity(values.len() + 1);
        let mut layouts = Vec::with_capacity(values.len());
        let mut args: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::new();
        let mut types: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::new();
        let mut words = 0;
        for (name, id) in values {
            let ty = self
                .an
                .type_of(id)
                .ok_or_else(|| NotInstrumented::malformed(format!("value %{id} has no type")))?;
            let Some(shape) = values::shape(&self.b.types, ty) else {
                return Err(NotInstrumented::unsupported(format!(
                    "cannot record {name} (%{id}): its type is not a scalar, vector or matrix of numbers or bools"
                )));
            };
            let (mut id, mut ty) = (id, ty);
            if shape.scalar == ScalarType::F16 && !self.float16 {
                if shape.rows != 0 {
                    // A 16-bit matrix cannot be converted in one instruction: leave the site out.
                    return Ok(None);
                }
                let f32t = self.b.type_float(32);
                ty = if shape.outer == 0 {
                    f32t
                } else {
                    self.b.type_vector(f32t, shape.outer)
                };
                let wide = self.b.id();
                out.push(Instruction::new(
                    Op::FConvert,
                    Some(ty),
                    Some(wide),
                    smallvec::smallvec![id],
                ));
                self.an.set_type(wide, ty);
                id = wide;
            }
            if words + shape.words() > MAX_PAYLOAD_WORDS {
                if matches!(helper, HelperKind::NanCheck { .. }) {
                    return Ok(None);
                }
                break;
            }
            words += shape.words();
            layouts.push(ValueLayout {
                name,
                scalar: shape.scalar,
                components: shape.components(),
            });
            args.push(id);
            types.push(ty);
        }
        let local_index = self.sites.len() as u32;
        let global = self
            .options
            .site_base
            .checked_add(local_index)
            .ok_or_else(|| NotInstrumented::unsupported("site index overflows 32 bits"))?;
        let cap = match kind {
            SiteKind::Printf => self.options.printf_records_per_site,
            _ => self.options.full_records_per_site,
        };
        let kind_word = u32::from(kind.record_kind().code()) << record::KIND_SHIFT;
        // NaN and integer checks wait in `bb_pending` where the options say so and there is room. Integer
        // checks too: VkFFT's kernels have up to 192 index checks, and with a writer each, llvmpipe took
        // 44.6 s instead of 0.55 s to compile the largest (README).
        let waiting = match helper {
            HelperKind::NanCheck { inputs } => Some(HelperKind::PendingNanCheck { inputs }),
            HelperKind::Record
                if matches!(
                    kind,
                    SiteKind::IntOp { .. } | SiteKind::IndexOutOfRange { .. }
                ) =>
            {
                Some(HelperKind::PendingRecord)
            }
            _ => None,
        }
        .filter(|_| self.options.records_at_end);
        let pending =
            waiting.and_then(|w| Some((w, self.pending_slot(words, kind_word, global, cap)?)));
        let helper = pending.map_or(helper, |(w, _)| w);
        let pending = pending.map(|(_, slot)| slot);
        let kind_word = self.b.const_u32(kind_word);
        let global = self.b.const_u32(global);
        let cap = pending.unwrap_or_else(|| self.b.const_u32(cap));
        let helper_fn = self.value_helper(helper, &types, words)?;
        let (function, entry_points) = match self.sites.last() {
            Some(last) if self.last_site_function == Some(at.function) => {
                (last.function.clone(), last.entry_points.clone())
            }
            _ => (
                self.an.name(at.function).map(Arc::from),
                Arc::from(self.an.entry_point_names(at.function)),
            ),
        };
        self.last_site_function = Some(at.function);
        self.sites.push(Site {
            local_index,
            kind,
            location: at.location(),
            format,
            values: layouts,
            stage: at.stage,
            function,
            entry_points,
            instruction: crate::analysis::disasm::disassemble(&self.an, at.instruction),
            // Set once every site is known (`info::assign_places`).
            place: String::new(),
        });
        if self.options.nan_values_through_select
            && matches!(
                helper,
                HelperKind::NanCheck { .. } | HelperKind::PendingNanCheck { .. }
            )
        {
            self.values_through_select(&mut out, &mut args, &types);
        }
        let void = self.b.type_void();
        let call_id = result_id.unwrap_or_else(|| self.b.id());
        let mut operands = Operands::from_slice(&[helper_fn, kind_word, global, cap]);
        operands.extend_from_slice(&args);
        out.push(Instruction::new(
            Op::FunctionCall,
            Some(void),
            Some(call_id),
            operands,
        ));
        Ok(Some(out))
    }

    /// A call to the crash helper (a store through [`crate::record::CRASH_ADDRESS`]).
    pub(crate) fn crash_call(&mut self) -> Instruction {
        let f = self.crash_helper();
        let void = self.b.type_void();
        let id = self.b.id();
        Instruction::new(
            Op::FunctionCall,
            Some(void),
            Some(id),
            smallvec::smallvec![f],
        )
    }

    /// Finishes the module: when any site was made, adds the error-buffer capability, extension and
    /// addressing model, the prologues and the interfaces; then writes every new type, constant, decoration
    /// and function into the module.
    pub(crate) fn finish(mut self, module: &mut Module) -> Result<Vec<Site>, NotInstrumented> {
        if !self.sites.is_empty() {
            self.add_prologues(module)?;
            helpers::enable_buffer_addresses(module);
            self.finish_pending(module);
        }
        let sites = std::mem::take(&mut self.sites);
        self.b.finish(module)?;
        Ok(sites)
    }
}
