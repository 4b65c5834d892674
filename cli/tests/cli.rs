//! End-to-end tests of the `hrx-trace` binary: each test runs the real binary in a temporary
//! directory, as a user would.
//!
//! The pipeline tests decode a real photograph, `/usr/share/backgrounds/mate/nature/
//! FreshFlower.jpg` (Debian package mate-backgrounds); where it is absent they say so and
//! skip. The `view` test drives the terminal timeline in tmux; without tmux it skips.

#[path = "cli/util.rs"]
mod util;

#[path = "cli/bad_input.rs"]
mod bad_input;
#[path = "cli/contention.rs"]
mod contention;
#[path = "cli/conventions.rs"]
mod conventions;
#[path = "cli/crashes.rs"]
mod crashes;
#[path = "cli/daemon.rs"]
mod daemon;
#[path = "cli/diff.rs"]
mod diff;
#[path = "cli/export.rs"]
mod export;
#[path = "cli/inspect.rs"]
mod inspect;
#[path = "cli/kernel_stats.rs"]
mod kernel_stats;
#[path = "cli/killed.rs"]
mod killed;
#[path = "cli/live.rs"]
mod live;
#[path = "cli/lost.rs"]
mod lost;
#[path = "cli/not_one_recording.rs"]
mod not_one_recording;
#[path = "cli/processes.rs"]
mod processes;
#[path = "cli/program.rs"]
mod program;
#[path = "cli/range.rs"]
mod range;
#[path = "cli/range_fault.rs"]
mod range_fault;
#[path = "cli/replaced.rs"]
mod replaced;
#[path = "cli/replay.rs"]
mod replay;
#[path = "cli/replay_released.rs"]
mod replay_released;
#[path = "cli/usage.rs"]
mod usage;
#[path = "cli/view.rs"]
mod view;
#[path = "cli/workloads.rs"]
mod workloads;
