//! `Options::buffer_layout`: with the error buffer's sizes given, the record writers take the counters' and
//! the record area's offsets and sizes as constants and read no such word of the buffer's header; without
//! them (a module instrumented offline), they read all four. Either way the module validates and has the
//! same sites. (That the constants are the layer's own is tested end to end: every record the integration
//! tests read back on lavapipe went through them.)

mod common;

use std::collections::{HashMap, HashSet};

use blackbox_engine::module::Module;
use blackbox_engine::record::{header, BufferLayout};
use blackbox_engine::{instrument, Instrumented, NanLevel, Options};
use spirv::{Op, StorageClass};

/// The header words a buffer layout fixes.
const LAYOUT_WORDS: [usize; 4] = [
    header::COUNTERS_OFFSET,
    header::COUNTER_COUNT,
    header::RECORDS_OFFSET,
    header::RECORDS_CAPACITY,
];

const LAYOUT: BufferLayout = BufferLayout {
    counter_count: 4096,
    records_capacity: 300_000,
};

/// `exp_pair.spvasm` at NaN `ops`, records written where checks fire (as GPUs get them), with `layout`;
/// checked with spirv-val.
fn instrumented(layout: Option<BufferLayout>) -> Instrumented {
    let words = common::assemble("exp_pair.spvasm", "vulkan1.1");
    let options = Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        nan: NanLevel::Ops,
        records_at_end: false,
        buffer_layout: layout,
        ..Options::default()
    };
    let out = instrument(&words, &options).expect("instruments");
    let name = format!(
        "buffer_layout.{}.{}.spv",
        layout.is_some(),
        std::process::id()
    );
    common::assert_valid(&out.words, &name, "vulkan1.1");
    out
}

/// What `words` reads from the error buffer's header: the header words (by their constant index) loaded
/// through a physical-storage-buffer pointer; and the values of its 32-bit integer constants.
fn header_reads_and_constants(words: &[u32]) -> (Vec<usize>, HashSet<u32>) {
    let module = Module::parse(words).expect("the output parses");
    let mut psb_pointers = HashSet::new();
    let mut constants: HashMap<u32, u32> = HashMap::new();
    let mut header_pointers: HashMap<u32, usize> = HashMap::new();
    let mut reads = Vec::new();
    for inst in module.all_instructions() {
        let (Some(op), id, ops) = (inst.op(), inst.result_id, &inst.operands) else {
            continue;
        };
        match op {
            Op::TypePointer if ops[0] == StorageClass::PhysicalStorageBuffer as u32 => {
                psb_pointers.extend(id);
            }
            Op::Constant if ops.len() == 1 => {
                constants.extend(id.map(|id| (id, ops[0])));
            }
            // `buffer.words[i]`: the struct's member 0, then the word index.
            Op::AccessChain
                if ops.len() == 3
                    && inst.result_type.is_some_and(|t| psb_pointers.contains(&t)) =>
            {
                if let (Some(id), Some(&index)) = (id, constants.get(&ops[2])) {
                    header_pointers.insert(id, index as usize);
                }
            }
            Op::Load => reads.extend(header_pointers.get(&ops[0]).copied()),
            _ => {}
        }
    }
    (reads, constants.into_values().collect())
}

#[test]
fn with_the_layout_writers_read_no_header_word_it_fixes() {
    let read_header = instrumented(None);
    let constant = instrumented(Some(LAYOUT));
    assert_eq!(
        read_header.info.sites, constant.info.sites,
        "the layout changes no site"
    );
    assert!(!constant.info.sites.is_empty());

    let (reads, _) = header_reads_and_constants(&read_header.words);
    for word in LAYOUT_WORDS {
        assert!(
            reads.contains(&word),
            "without a layout, header word {word} is read: {reads:?}"
        );
    }

    let (reads, constants) = header_reads_and_constants(&constant.words);
    for word in LAYOUT_WORDS {
        assert!(
            !reads.contains(&word),
            "with a layout, header word {word} is still read: {reads:?}"
        );
        let value = LAYOUT.fixed_word(word).expect("a word the layout fixes");
        assert!(
            constants.contains(&value),
            "header word {word} ({value}) is no constant of the module"
        );
    }
    assert!(
        constant.words.len() < read_header.words.len(),
        "the constant form is shorter: {} against {} words",
        constant.words.len(),
        read_header.words.len()
    );
}

#[test]
fn the_layout_fixes_the_words_init_header_writes() {
    let header = LAYOUT.header();
    for word in LAYOUT_WORDS {
        assert_eq!(LAYOUT.fixed_word(word), Some(header[word]));
    }
    assert_eq!(header[header::COUNTER_COUNT], 4096);
    assert_eq!(header[header::RECORDS_CAPACITY], 300_000);
    assert_eq!(
        header[header::RECORDS_OFFSET],
        header[header::COUNTERS_OFFSET] + 4096
    );
    for word in [header::CURSOR, header::DROPPED, header::ZERO, header::MAGIC] {
        assert_eq!(LAYOUT.fixed_word(word), None, "header word {word}");
    }
    assert_eq!(LAYOUT.words(), 16 + 4096 + 300_000);
}
