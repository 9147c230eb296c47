//! The scenarios, one module each (or a small group), and the table the run loop reads.
//!
//! A scenario creates what it needs through the `Context` helpers, submits, waits for its own work,
//! reads the results back into host-visible memory and returns their checksum. The run loop destroys
//! what the helpers created.

pub mod compute;
pub mod debug_labels;
pub mod draw;
pub mod instances;
pub mod record_bench;
pub mod secondary;
pub mod threads;
pub mod timeline;
pub mod two_queues;

use anyhow::Result;

use crate::context::Context;
use crate::Options;

pub enum Outcome {
    Checksum(u64),
    /// A feature or extension the scenario needs is missing (the app then exits with code 4).
    Skipped(String),
}

pub struct Scenario {
    pub name: &'static str,
    /// Part of `all` (record-bench is not: it is slow and measures time, not results).
    pub in_all: bool,
    pub run: fn(&Context, &Options) -> Result<Outcome>,
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "compute",
        in_all: true,
        run: compute::run,
    },
    Scenario {
        name: "draw-renderpass",
        in_all: true,
        run: draw::run_render_pass,
    },
    Scenario {
        name: "draw-dynamic",
        in_all: true,
        run: draw::run_dynamic,
    },
    Scenario {
        name: "secondary",
        in_all: true,
        run: secondary::run,
    },
    Scenario {
        name: "threads",
        in_all: true,
        run: threads::run,
    },
    Scenario {
        name: "timeline",
        in_all: true,
        run: timeline::run,
    },
    Scenario {
        name: "two-queues",
        in_all: true,
        run: two_queues::run,
    },
    Scenario {
        name: "instances",
        in_all: true,
        run: instances::run,
    },
    Scenario {
        name: "debug-labels",
        in_all: true,
        run: debug_labels::run,
    },
    Scenario {
        name: "record-bench",
        in_all: false,
        run: record_bench::run,
    },
];
