//! The scan's time budget ([`crate::Limits::time_budget`]), checked before each file and, in a
//! file of [`CHECKED_INSIDE`] bytes or more, between the passes over it (each pattern rule's
//! among them), so one huge file cannot run far past it. A check is one clock read.

use std::time::{Duration, Instant};

/// The size from which a file's passes are checked too: a smaller file's take well under a
/// millisecond, so the common case reads the clock once a file, as before.
pub(crate) const CHECKED_INSIDE: usize = 64 * 1024;

/// When a bundle's scan runs out of time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    started: Instant,
    budget: Duration,
    /// Whether [`Deadline::check`] reads the clock (a large file's passes).
    inside: bool,
}

/// The time budget ran out in the middle of a file.
pub(crate) struct OutOfTime;

impl Deadline {
    /// A budget of `budget` from now.
    pub(crate) fn new(budget: Duration) -> Deadline {
        Deadline {
            started: Instant::now(),
            budget,
            inside: true,
        }
    }

    /// The same deadline for the passes over a file of `len` bytes: checked only when large.
    pub(crate) fn for_file(self, len: usize) -> Deadline {
        Deadline {
            inside: len >= CHECKED_INSIDE,
            ..self
        }
    }

    /// Whether the budget is spent (once it is, it stays spent).
    pub(crate) fn passed(&self) -> bool {
        self.started.elapsed() > self.budget
    }

    /// Inside a file: `Err` when the budget is spent (a small file's passes: never).
    pub(crate) fn check(&self) -> Result<(), OutOfTime> {
        match self.inside && self.passed() {
            true => Err(OutOfTime),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_stops_a_large_files_passes_not_a_small_ones() {
        let spent = Deadline::new(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(1));
        assert!(spent.passed());
        assert!(spent.for_file(CHECKED_INSIDE).check().is_err());
        assert!(spent.for_file(CHECKED_INSIDE - 1).check().is_ok());
        let ample = Deadline::new(Duration::from_secs(600)).for_file(CHECKED_INSIDE);
        assert!(ample.check().is_ok());
    }
}
