//! Submissions in flight, per queue.
//!
//! Every submission gets a sequence number; where the device has timeline semaphores, the layer appends a
//! signal of its own per-queue timeline semaphore with that number to the submission's last batch (the
//! app's batching is unchanged), so completion can be read at any time, from any thread, without touching
//! the app's fences. Without timeline semaphores, completion is learnt from the app's own waits.

use ash::vk;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::command_buffer::{CommandBuffer, RecordedLog};

/// A command buffer as submitted: its state and the recording it held.
#[derive(Clone)]
pub struct Submitted {
    /// The command buffer.
    pub command_buffer: Arc<CommandBuffer>,
    /// What it held when submitted (`None` if it was never recorded through the layer).
    pub log: Option<Arc<RecordedLog>>,
}

/// One `vkQueueSubmit*` / `vkQueueBindSparse` call.
pub struct Submission {
    /// Its number on its queue, from 1.
    pub seq: u64,
    /// The command that made it.
    pub command: &'static str,
    /// When it was made.
    pub at: Instant,
    /// Wall-clock time, for the report.
    pub at_wall: SystemTime,
    /// Command buffers per batch.
    pub batches: Vec<Vec<Submitted>>,
    /// The app's fence, if any.
    pub fence: vk::Fence,
}

/// What the tracker knows of a queue's work.
#[derive(Default)]
pub struct Tracker {
    next_seq: u64,
    /// Submissions not known to be finished, oldest first.
    pub pending: VecDeque<Submission>,
    /// The last submission known finished.
    pub completed: u64,
    /// The last finished submission, kept for the report's "last finished" context.
    pub last_finished: Option<Submission>,
}

/// A queue the app retrieved.
pub struct Queue {
    /// The app's handle.
    pub handle: vk::Queue,
    /// Its family.
    pub family: u32,
    /// Its index in the family.
    pub index: u32,
    /// The layer's timeline semaphore for this queue, when the device has them.
    pub timeline: Option<vk::Semaphore>,
    /// Submissions.
    pub tracker: Mutex<Tracker>,
}

impl Queue {
    /// A queue with no submissions yet.
    pub fn new(
        handle: vk::Queue,
        family: u32,
        index: u32,
        timeline: Option<vk::Semaphore>,
    ) -> Self {
        Self {
            handle,
            family,
            index,
            timeline,
            tracker: Mutex::new(Tracker {
                next_seq: 1,
                ..Tracker::default()
            }),
        }
    }

    /// Reserves the next sequence number.
    pub fn next_seq(&self) -> u64 {
        let mut t = self.tracker.lock();
        let seq = t.next_seq;
        t.next_seq += 1;
        seq
    }

    /// Records a submission the driver accepted.
    pub fn push(&self, submission: Submission) {
        self.tracker.lock().pending.push_back(submission);
    }

    /// Marks everything up to `seq` finished.
    pub fn complete_up_to(&self, seq: u64) {
        let mut t = self.tracker.lock();
        if seq <= t.completed {
            return;
        }
        t.completed = seq;
        while t.pending.front().is_some_and(|s| s.seq <= seq) {
            t.last_finished = t.pending.pop_front();
        }
    }

    /// Marks everything submitted so far finished (after a queue or device wait-idle).
    pub fn complete_all(&self) {
        let last = self.tracker.lock().next_seq - 1;
        self.complete_up_to(last);
    }

    /// Marks finished what a signalled app fence covers: its submission and all before it on this queue.
    pub fn complete_fence(&self, fence: vk::Fence) {
        let seq = self
            .tracker
            .lock()
            .pending
            .iter()
            .rev()
            .find(|s| s.fence == fence)
            .map(|s| s.seq);
        if let Some(seq) = seq {
            self.complete_up_to(seq);
        }
    }

    /// Whether any submission is not known to be finished.
    pub fn has_pending(&self) -> bool {
        !self.tracker.lock().pending.is_empty()
    }
}
