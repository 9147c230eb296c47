//! The log of one recording, compact: what [`crate::command_buffer`] appends for every recorded command and
//! reports read back.
//!
//! A command is a 16-byte [`Entry`] (which command, its class, scope, marker unit and pipeline) and its key
//! parameters as 32-bit words in one shared vector (a parameter above `u32::MAX`, a handle or an offset,
//! takes two), so a command buffer of draws keeps about 32 bytes per command instead of the 72 a struct
//! with `&str` and four `u64` took. Label texts go into one string, bound pipelines into one list the
//! entries index. Nothing here allocates once the vectors have grown to a recording's size: [`Log::clear`]
//! keeps their capacity, and [`crate::command_buffer`] hands a finished log's storage to the next recording
//! of the same command buffer.
//!
//! Readers decode entries in order ([`Log::commands`]), into the plain [`Command`] the report model is built
//! from.

use ash::vk;
use blackbox_report::{untrusted, CommandClass};

use crate::command_buffer::Executed;

/// "No label scope" / "no unit" / "no pipeline".
pub const NONE: u32 = u32::MAX;

/// Commands logged per recording; beyond it commands are counted, not logged, so a runaway command buffer
/// cannot take the app's memory (markers still cover them).
pub const MAX_LOGGED_COMMANDS: usize = 1 << 16;

/// Parameters kept per command.
pub const MAX_PARAMS: usize = 4;

/// Makes [`CommandId`] from the device-level commands of the one list ([`crate::commands`]).
macro_rules! command_ids {
    (instance; $($entries:tt)*) => {};
    (device; $(
        [$scope:ident $class:ident $field:ident: $pfn:ident = $name:literal $(since $since:ident)? $(| $alias:literal)*]
        { $($handler:tt)* }
    )*) => {
        /// A device-level command of [`crate::commands`], by its dispatch field's name: two bytes in the log
        /// where its name would take sixteen.
        #[allow(non_camel_case_types, missing_docs)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u16)]
        pub enum CommandId {
            $($field,)*
        }

        /// The command names, by [`CommandId`].
        const NAMES: &[&str] = &[$($name,)*];
    };
}
vulkan_commands!(command_ids);

impl CommandId {
    /// The Vulkan command's name, e.g. `vkCmdDispatch` (the core name of one with aliases).
    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }
}

/// One recorded command, as the log stores it.
#[derive(Clone, Copy)]
struct Entry {
    command: CommandId,
    /// The class (bits 0-1), skipped (bit 2), the number of parameters (bits 3-5).
    bits: u8,
    /// Bit `i`: parameter `i` takes two words.
    wide: u8,
    scope: u32,
    unit: u32,
    /// Index in [`Log::pipelines`], or [`NONE`].
    pipeline: u32,
}

const SKIPPED: u8 = 1 << 2;

fn class_bits(class: CommandClass) -> u8 {
    match class {
        CommandClass::Action => 0,
        CommandClass::State => 1,
        CommandClass::Sync => 2,
        CommandClass::Other => 3,
    }
}

fn class_of(bits: u8) -> CommandClass {
    match bits & 3 {
        0 => CommandClass::Action,
        1 => CommandClass::State,
        2 => CommandClass::Sync,
        _ => CommandClass::Other,
    }
}

/// A label scope as the log stores it: its text is a range of [`Log::label_text`]'s bytes.
#[derive(Clone, Copy)]
struct ScopeEntry {
    text_start: u32,
    text_len: u32,
    parent: u32,
    first_command: u32,
    end_command: u32,
    inserted: bool,
}

/// One recorded command, decoded.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    /// The Vulkan command, e.g. `vkCmdDispatch`.
    pub name: &'static str,
    /// What kind of work it does, from the method that logged it.
    pub class: CommandClass,
    /// Its key parameters (counts, offsets, handles), as the command defines them.
    pub params: [u64; MAX_PARAMS],
    /// How many of `params` are meaningful.
    pub param_count: u8,
    /// Innermost open label scope, or [`NONE`].
    pub scope: u32,
    /// The marker unit that covers it, or [`NONE`] when no marker tells its progress.
    pub unit: u32,
    /// The pipeline bound for its bind point when it was recorded (graphics for draws, compute for
    /// dispatches, ray tracing for trace rays); null if none or not applicable.
    pub pipeline: vk::Pipeline,
    /// For `vkCmdExecuteCommands`: index of its first entry in [`Log::executed`], else [`NONE`].
    pub executed: u32,
    /// Not passed to the driver: `VK_BLACKBOX_SKIP` selected it.
    pub skipped: bool,
}

/// A debug-label scope (`vkCmdBeginDebugUtilsLabelEXT` .. `End`), or an inserted label (no end), decoded.
#[derive(Debug, Clone)]
pub struct LabelScope<'a> {
    /// The label text (invalid UTF-8 replaced).
    pub name: std::borrow::Cow<'a, str>,
    /// The enclosing scope, or [`NONE`].
    pub parent: u32,
    /// Index of the first command inside.
    pub first_command: u32,
    /// One past the last command inside (set at the end label; [`NONE`] while still open).
    pub end_command: u32,
    /// An inserted label marks a point, not a scope.
    pub inserted: bool,
}

/// The log of one recording.
#[derive(Default)]
pub struct Log {
    entries: Vec<Entry>,
    params: Vec<u32>,
    scopes: Vec<ScopeEntry>,
    /// The label texts, as the app gave them (checked as UTF-8 when read, not on the recording path).
    label_text: Vec<u8>,
    pipelines: Vec<vk::Pipeline>,
    /// Secondaries executed, in order.
    executed: Vec<Executed>,
    /// `(command index, index of its first secondary in executed)` of each `vkCmdExecuteCommands`.
    executions: Vec<(u32, u32)>,
    /// Commands recorded beyond [`MAX_LOGGED_COMMANDS`].
    unlogged: u32,
    /// Commands that can be appended before [`Log::make_room`] must look again: both vectors have room
    /// for them (an entry and [`PARAM_ROOM`] words each) and the limit is that far off. One count checked
    /// per command, where the limit and each vector's capacity were three checks.
    room: u32,
}

/// The parameter words [`Log::push`] writes per command (it writes them all and keeps those it needs).
const PARAM_ROOM: usize = 2 * MAX_PARAMS;

impl Log {
    /// An empty log with room for a recording like `other`.
    pub fn sized_like(other: &Log) -> Log {
        Log {
            entries: Vec::with_capacity(other.entries.len()),
            params: Vec::with_capacity(other.params.len()),
            scopes: Vec::with_capacity(other.scopes.len()),
            label_text: Vec::with_capacity(other.label_text.len()),
            pipelines: Vec::with_capacity(other.pipelines.len()),
            ..Log::default()
        }
    }

    /// Empties the log, keeping its storage.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.params.clear();
        self.scopes.clear();
        self.label_text.clear();
        self.pipelines.clear();
        self.executed.clear();
        self.executions.clear();
        self.unlogged = 0;
        self.room = 0;
    }

    /// Whether it holds storage worth handing to another recording.
    pub fn has_storage(&self) -> bool {
        self.entries.capacity() > 0
    }

    /// Commands logged.
    pub fn len(&self) -> u32 {
        self.entries.len() as u32
    }

    /// Whether no command is logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Commands recorded beyond [`MAX_LOGGED_COMMANDS`].
    pub fn unlogged(&self) -> u32 {
        self.unlogged
    }

    /// Appends a command (or counts it, past [`MAX_LOGGED_COMMANDS`]). `pipeline` is an index from
    /// [`Log::pipeline_index`] or [`NONE`]; parameters past [`MAX_PARAMS`] are dropped.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        command: CommandId,
        class: CommandClass,
        params: &[u64],
        scope: u32,
        unit: u32,
        pipeline: u32,
        skipped: bool,
    ) {
        if self.room == 0 && !self.make_room() {
            self.unlogged += 1;
            return;
        }
        self.room -= 1;
        let params = &params[..params.len().min(MAX_PARAMS)];
        // Every parameter's low word, and the high word of those that need it, gathered on the stack and
        // written at once.
        let mut words = [0u32; PARAM_ROOM];
        let mut n = 0;
        let mut wide = 0u8;
        for (i, &p) in params.iter().enumerate() {
            words[n] = p as u32;
            n += 1;
            if p > u64::from(u32::MAX) {
                wide |= 1 << i;
                words[n] = (p >> 32) as u32;
                n += 1;
            }
        }
        let bits =
            class_bits(class) | if skipped { SKIPPED } else { 0 } | (params.len() as u8) << 3;
        let entry = Entry {
            command,
            bits,
            wide,
            scope,
            unit,
            pipeline,
        };
        let (len, entries) = (self.params.len(), self.entries.len());
        // SAFETY: `room` was above 0, so both vectors have room past their lengths (`make_room`): for all
        // of `words` (a `[u32; N]` is aligned as a `u32`), of which the first `n` become part of the
        // vector, and for the entry.
        unsafe {
            self.params
                .as_mut_ptr()
                .add(len)
                .cast::<[u32; PARAM_ROOM]>()
                .write(words);
            self.params.set_len(len + n);
            self.entries.as_mut_ptr().add(entries).write(entry);
            self.entries.set_len(entries + 1);
        }
    }

    /// Sets [`Log::room`] from the vectors' spare capacity, growing them where it is none (as a push
    /// would: the vector doubles); `false` at [`MAX_LOGGED_COMMANDS`].
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) -> bool {
        let logged = self.entries.len();
        if logged >= MAX_LOGGED_COMMANDS {
            return false;
        }
        if logged == self.entries.capacity() {
            self.entries.reserve(1);
        }
        if self.params.capacity() - self.params.len() < PARAM_ROOM {
            self.params.reserve(PARAM_ROOM);
        }
        let entries = self.entries.capacity() - logged;
        let params = (self.params.capacity() - self.params.len()) / PARAM_ROOM;
        let limit = MAX_LOGGED_COMMANDS - logged;
        self.room = entries.min(params).min(limit) as u32;
        true
    }

    /// The index entries use for `pipeline`: a recent one's again when it was bound before (apps switch
    /// between a few), else a new one.
    pub fn pipeline_index(&mut self, pipeline: vk::Pipeline) -> u32 {
        if pipeline == vk::Pipeline::null() {
            return NONE;
        }
        let recent = self.pipelines.len().saturating_sub(4);
        if let Some(i) = self.pipelines[recent..].iter().position(|&p| p == pipeline) {
            return (recent + i) as u32;
        }
        self.pipelines.push(pipeline);
        self.pipelines.len() as u32 - 1
    }

    /// Opens a label scope (or records an inserted label) at the current command; its index.
    pub fn open_scope(&mut self, text: &[u8], parent: u32, inserted: bool) -> u32 {
        let start = self.label_text.len();
        // Kept as the layer keeps every app string (a long one cut with the cut said:
        // `untrusted::keep_bytes`; invalid UTF-8 is replaced when read), without allocating for the usual
        // short label.
        if text.len() <= untrusted::KEEP_BYTES {
            self.label_text.extend_from_slice(text);
        } else {
            self.label_text
                .extend_from_slice(untrusted::keep_bytes(text).as_bytes());
        }
        let first = self.len();
        self.scopes.push(ScopeEntry {
            text_start: start as u32,
            text_len: (self.label_text.len() - start) as u32,
            parent,
            first_command: first,
            end_command: if inserted { first } else { NONE },
            inserted,
        });
        self.scopes.len() as u32 - 1
    }

    /// Closes scope `index` at the current command.
    pub fn close_scope(&mut self, index: u32) {
        let end = self.len();
        if let Some(s) = self.scopes.get_mut(index as usize) {
            s.end_command = end;
        }
    }

    /// The text of scope `index` ("" if there is none), invalid UTF-8 replaced.
    pub fn scope_name(&self, index: u32) -> std::borrow::Cow<'_, str> {
        self.scopes.get(index as usize).map_or("".into(), |s| {
            let start = s.text_start as usize;
            String::from_utf8_lossy(&self.label_text[start..start + s.text_len as usize])
        })
    }

    /// Adds the secondaries of a `vkCmdExecuteCommands` about to be logged as the next command.
    pub fn add_executed(&mut self, secondaries: impl IntoIterator<Item = Executed>) {
        let first = self.executed.len() as u32;
        self.executed.extend(secondaries);
        self.executions.push((self.len(), first));
    }

    /// Secondaries executed, in order.
    pub fn executed(&self) -> &[Executed] {
        &self.executed
    }

    /// Every command logged, decoded, in recording order.
    pub fn commands(&self) -> impl Iterator<Item = Command> + '_ {
        let mut words = self.params.iter().copied();
        let mut executions = self.executions.iter().copied().peekable();
        self.entries.iter().enumerate().map(move |(index, e)| {
            let count = (e.bits >> 3) as usize;
            let mut params = [0u64; MAX_PARAMS];
            for (i, p) in params.iter_mut().enumerate().take(count) {
                let low = u64::from(words.next().unwrap_or(0));
                *p = if e.wide & (1 << i) != 0 {
                    low | u64::from(words.next().unwrap_or(0)) << 32
                } else {
                    low
                };
            }
            let executed = match executions.peek() {
                Some(&(at, first)) if at == index as u32 => {
                    executions.next();
                    first
                }
                _ => NONE,
            };
            Command {
                name: e.command.name(),
                class: class_of(e.bits),
                params,
                param_count: count as u8,
                scope: e.scope,
                unit: e.unit,
                pipeline: self
                    .pipelines
                    .get(e.pipeline as usize)
                    .copied()
                    .unwrap_or_default(),
                executed,
                skipped: e.bits & SKIPPED != 0,
            }
        })
    }

    /// Every label scope, by index.
    pub fn scopes(&self) -> impl Iterator<Item = LabelScope<'_>> + '_ {
        (0..self.scopes.len() as u32).filter_map(move |i| self.scope(i))
    }

    /// Label scope `index`, if there is one.
    pub fn scope(&self, index: u32) -> Option<LabelScope<'_>> {
        let s = *self.scopes.get(index as usize)?;
        Some(LabelScope {
            name: self.scope_name(index),
            parent: s.parent,
            first_command: s.first_command,
            end_command: s.end_command,
            inserted: s.inserted,
        })
    }

    /// Bytes of storage held (capacity), for tests and benchmarks.
    pub fn storage_bytes(&self) -> usize {
        use std::mem::size_of;
        self.entries.capacity() * size_of::<Entry>()
            + self.params.capacity() * 4
            + self.scopes.capacity() * size_of::<ScopeEntry>()
            + self.label_text.capacity()
            + self.pipelines.capacity() * 8
            + self.executed.capacity() * size_of::<Executed>()
            + self.executions.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_16_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }

    #[test]
    fn commands_come_back_as_pushed() {
        let mut log = Log::default();
        let sky = vk::Handle::from_raw(0xdead_beef_0000_0001);
        let sky = log.pipeline_index(sky);
        log.push(
            CommandId::cmd_draw,
            CommandClass::Action,
            &[3, 1, 0, 0],
            NONE,
            1,
            sky,
            false,
        );
        let big = 0x1234_5678_9abc_def0u64;
        log.push(
            CommandId::cmd_copy_buffer,
            CommandClass::Action,
            &[big, 7, u64::from(u32::MAX)],
            0,
            NONE,
            NONE,
            true,
        );
        log.push(
            CommandId::cmd_pipeline_barrier,
            CommandClass::Sync,
            &[],
            0,
            NONE,
            NONE,
            false,
        );
        let all: Vec<Command> = log.commands().collect();
        assert_eq!(all.len(), 3);
        assert_eq!(
            (all[0].name, all[0].class, all[0].param_count),
            ("vkCmdDraw", CommandClass::Action, 4)
        );
        assert_eq!(all[0].params, [3, 1, 0, 0]);
        assert_eq!(vk::Handle::as_raw(all[0].pipeline), 0xdead_beef_0000_0001);
        assert_eq!(
            (all[0].unit, all[0].scope, all[0].skipped),
            (1, NONE, false)
        );
        assert_eq!(all[1].name, "vkCmdCopyBuffer");
        assert_eq!(&all[1].params[..3], &[big, 7, u64::from(u32::MAX)]);
        assert!(all[1].skipped && all[1].pipeline == vk::Pipeline::null());
        assert_eq!(
            (all[2].class, all[2].param_count, all[2].executed),
            (CommandClass::Sync, 0, NONE)
        );
    }

    /// Pushes `n` commands whose parameters take from none to all of `PARAM_ROOM` words, and checks each
    /// comes back: the room counted ahead must hold through every growth of the two vectors.
    fn push_and_check(log: &mut Log, n: u64) {
        let wide = 1u64 << 40;
        for i in 0..n {
            let k = (i % 5) as usize;
            let params = [wide + i, wide + 2 * i, i, wide - 1 + i];
            log.push(
                CommandId::cmd_draw,
                CommandClass::Action,
                &params[..k],
                NONE,
                i as u32,
                NONE,
                false,
            );
        }
        assert_eq!(log.len() as u64, n);
        for (i, c) in log.commands().enumerate() {
            let i = i as u64;
            let k = (i % 5) as usize;
            let params = [wide + i, wide + 2 * i, i, wide - 1 + i];
            assert_eq!(usize::from(c.param_count), k, "command {i}");
            assert_eq!(&c.params[..k], &params[..k], "command {i}");
            assert_eq!(c.unit, i as u32);
        }
    }

    #[test]
    fn commands_come_back_across_growth_clearing_and_reuse() {
        let mut log = Log::default();
        push_and_check(&mut log, 5_000);
        log.clear();
        push_and_check(&mut log, 3_000);
        let mut next = Log::sized_like(&log);
        push_and_check(&mut next, 7_000);
    }

    #[test]
    fn scopes_keep_their_text_and_a_cleared_log_its_storage() {
        let mut log = Log::default();
        let outer = log.open_scope(b"shadow pass", NONE, false);
        log.push(
            CommandId::cmd_dispatch,
            CommandClass::Action,
            &[1, 1, 1],
            outer,
            NONE,
            NONE,
            false,
        );
        let point = log.open_scope(b"bad \xff utf-8", outer, true);
        log.close_scope(outer);
        let scopes: Vec<LabelScope> = log.scopes().collect();
        assert_eq!(scopes[0].name, "shadow pass");
        assert_eq!((scopes[0].first_command, scopes[0].end_command), (0, 1));
        assert_eq!(log.scope_name(point), "bad \u{fffd} utf-8");
        assert!(scopes[1].inserted && scopes[1].parent == outer);
        let long = log.open_scope(&[b'x'; 5000], NONE, true);
        assert!(log
            .scope_name(long)
            .ends_with("more bytes cut by Blackbox]"));
        let bytes = log.storage_bytes();
        log.clear();
        assert!(log.is_empty() && log.scopes().next().is_none());
        assert_eq!(log.storage_bytes(), bytes, "clearing keeps the storage");
    }

    #[test]
    fn recent_pipelines_share_an_index() {
        let mut log = Log::default();
        let (a, b): (vk::Pipeline, vk::Pipeline) =
            (vk::Handle::from_raw(0xa), vk::Handle::from_raw(0xb));
        let (ia, ib) = (log.pipeline_index(a), log.pipeline_index(b));
        assert_ne!(ia, ib);
        assert_eq!((log.pipeline_index(a), log.pipeline_index(b)), (ia, ib));
        assert_eq!(log.pipeline_index(vk::Pipeline::null()), NONE);
    }
}
