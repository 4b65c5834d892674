//! The GPU's clocks around a replay's timed repeats ([`ClockWatch`]): read through the replay
//! runtime's [`hrx::gpu::ClockReader`] (NVML on CUDA) right before the first timed repeat
//! (after the warm-ups) and right after the last, never inside a measured time; the reader
//! stays open between the two, so neither reading pays for opening NVML.

use crate::report::{ClockReading, GpuClocksAround};
use hrx::Runtime;
use hrx::gpu::{ClockReader, GpuClocks, GpuClocksError};

/// The readings so far.
#[derive(Default)]
enum State {
    /// Nothing read yet.
    #[default]
    Waiting,
    /// The backend has no clocks (the software device): the report says nothing.
    NotApplicable,
    /// The reader (or why there is none), the reading before, and the latest after.
    Reading {
        reader: Result<ClockReader, String>,
        before: ClockReading,
        after: Option<ClockReading>,
    },
}

/// Reads the GPU's clocks before a replay's first timed repeat and after its last.
#[derive(Default)]
pub(crate) struct ClockWatch {
    state: State,
}

/// A reading's result as the report has it.
fn reading(result: Result<GpuClocks, GpuClocksError>) -> ClockReading {
    match result {
        Ok(clocks) => ClockReading::Read(clocks),
        Err(error) => ClockReading::Unreadable(error.to_string()),
    }
}

impl ClockWatch {
    /// Reads the clocks of `runtime`'s GPU, the first time only: call it before each timed
    /// repeat.
    pub fn before(&mut self, runtime: &Runtime) {
        if !matches!(self.state, State::Waiting) {
            return;
        }
        self.state = match runtime.gpu_clock_reader() {
            Err(GpuClocksError::NotApplicable { .. }) => State::NotApplicable,
            Ok(reader) => State::Reading {
                before: reading(reader.read()),
                reader: Ok(reader),
                after: None,
            },
            Err(error) => State::Reading {
                before: ClockReading::Unreadable(error.to_string()),
                reader: Err(error.to_string()),
                after: None,
            },
        };
    }

    /// Reads the clocks again (the reading before opened the reader): call it after each
    /// timed repeat; the last call's reading is kept.
    pub fn after(&mut self) {
        if let State::Reading { reader, after, .. } = &mut self.state {
            *after = Some(match reader {
                Ok(reader) => reading(reader.read()),
                Err(why) => ClockReading::Unreadable(why.clone()),
            });
        }
    }

    /// The two readings, for the report; `None` where the backend has no clocks (or nothing
    /// was timed).
    pub fn finish(self) -> Option<GpuClocksAround> {
        match self.state {
            State::Reading { before, after, .. } => Some(GpuClocksAround::new(
                before,
                after.unwrap_or_else(|| {
                    ClockReading::Unreadable("not read: no timed repeat ended".into())
                }),
            )),
            State::Waiting | State::NotApplicable => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_software_device_reads_no_clocks_and_the_report_says_nothing() {
        let runtime = Runtime::new(hrx::RuntimeOptions::sim()).unwrap();
        let mut watch = ClockWatch::default();
        watch.after();
        watch.before(&runtime);
        watch.after();
        assert_eq!(watch.finish(), None);
        assert_eq!(ClockWatch::default().finish(), None, "nothing timed");
    }
}
