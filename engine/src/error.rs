//! Why a module was not instrumented.

use std::fmt;

/// The class of reason a module was not instrumented (or not even read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotInstrumentedKind {
    /// The words are not a well-formed SPIR-V module: bad magic, truncated instruction, result id out of
    /// bounds, sections out of order, and so on.
    Malformed,
    /// The module is well formed but uses something the engine does not handle (a kernel module, a shape of
    /// builtin it cannot read, a newer SPIR-V version).
    Unsupported,
}

/// A module that the engine did not instrument, and why. The caller passes the original module on unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotInstrumented {
    /// What went wrong, for a log line: names the instruction or feature and, where known, its word offset.
    pub reason: String,
    /// The class of problem.
    pub kind: NotInstrumentedKind,
}

impl NotInstrumented {
    /// A malformed module.
    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        NotInstrumented {
            reason: reason.into(),
            kind: NotInstrumentedKind::Malformed,
        }
    }

    /// A module using something the engine does not handle.
    pub(crate) fn unsupported(reason: impl Into<String>) -> Self {
        NotInstrumented {
            reason: reason.into(),
            kind: NotInstrumentedKind::Unsupported,
        }
    }
}

impl fmt::Display for NotInstrumented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            NotInstrumentedKind::Malformed => "malformed module",
            NotInstrumentedKind::Unsupported => "unsupported module",
        };
        write!(f, "{kind}: {}", self.reason)
    }
}

impl std::error::Error for NotInstrumented {}
