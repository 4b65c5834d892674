//! The statistics overlay (`s`) on the failing pipeline with its compute regions'
//! operation timings (`blur`, `sobel`; the failed region's too) and without them: kernels
//! by operation name above the region labels where the trace has operation times, and
//! `stats`'s note of what the trace lacks where it has none.

use super::ops_tests::failing;
use super::*;
use crate::state::{Action, Model, ViewState, stats_overlay, units};

fn terminal(model: &Model, state: &ViewState) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(state.width, state.height)).unwrap();
    terminal.draw(|frame| render(model, state, frame)).unwrap();
    terminal
}

/// The overlay's rows on a screen, inside its border, trailing blanks cut.
fn overlay(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("┌ Statistics"))
        .skip(1)
        .take_while(|l| !l.starts_with('└'))
        .map(|l| {
            l.trim_start_matches('│')
                .trim_end()
                .trim_end_matches('│')
                .trim_end()
        })
        .map(str::to_owned)
        .collect()
}

/// The text after `label` and its continuation rows (indented under it), joined.
fn labelled(rows: &[String], label: &str) -> Option<String> {
    let first = rows.iter().position(|r| r.starts_with(label))?;
    let mut text = rows[first][label.len()..].trim().to_owned();
    for row in rows[first + 1..]
        .iter()
        .take_while(|r| r.starts_with("    "))
    {
        text.push(' ');
        text.push_str(row.trim());
    }
    Some(text)
}

/// With operation timings, a table of kernels by operation name (`blur`, `sobel`: each
/// counted in the four runs that succeeded, the failed run's apart) comes before the
/// regions' (`blur +1`), with the columns of `stats`, and the clock line says how many
/// times are device spans.
#[test]
fn statistics_list_kernels_by_operation_name_above_the_regions() {
    let model = failing(true);
    let stats = model.stats();
    let ops: Vec<(&str, u64, u64)> = stats
        .operations
        .iter()
        .map(|o| (o.stats.name.as_str(), o.stats.count, o.stats.failed))
        .collect();
    let region = &stats.kernels[0];
    assert_eq!(region.name, "blur +1");
    for (name, count, failed) in &ops {
        assert_eq!((*count, *failed), (region.count, region.failed), "{name}");
    }
    let mut names: Vec<&str> = ops.iter().map(|o| o.0).collect();
    names.sort_unstable();
    assert_eq!(names, ["blur", "sobel"]);

    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleStats);
    let rows = overlay(&render_to_string(&model, &state, 120, 40));
    let heading = |title: &str| {
        rows.iter()
            .position(|r| r.starts_with(title) && r.contains("count"))
            .unwrap_or_else(|| panic!("no {title} table: {rows:#?}"))
    };
    let (kernels, regions) = (heading("kernel"), heading("region"));
    assert!(kernels < regions, "{rows:#?}");
    let columns: Vec<&str> = rows[kernels].split_whitespace().collect();
    // The last column holds an operation's runs in regions that failed (blur's too, where
    // sobel failed), named for that and said under the table; it read `failed`.
    assert_eq!(
        columns,
        [
            "kernel", "count", "total", "mean", "p50", "p99", "max", "in", "failed"
        ]
    );
    let note = rows[kernels + 1..regions]
        .iter()
        .skip_while(|r| !r.starts_with("(in failed: "))
        .map(|r| r.trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        note.trim_end(),
        "(in failed: runs of the operation in regions that failed or were cancelled, left \
         out of its times, whichever operation of the region failed)"
    );
    assert!(
        rows[regions].trim_end().ends_with(" max     failed"),
        "{rows:#?}"
    );
    for o in &stats.operations {
        let k = &o.stats;
        let row = rows[kernels + 1..regions]
            .iter()
            .find(|r| r.starts_with(&format!("{} ", k.name)))
            .unwrap_or_else(|| panic!("no {} row: {rows:#?}", k.name));
        let cells: Vec<String> = [k.total_ns, k.mean_ns, k.p50_ns, k.p99_ns, k.max_ns]
            .into_iter()
            .map(units::duration)
            .collect();
        let expected = format!("{} {} {} {}", k.name, k.count, cells.join(" "), k.failed);
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>().join(" "),
            expected
        );
    }
    assert!(rows[regions + 1].starts_with("blur +1 "), "{rows:#?}");
    let o = &stats.op_times;
    assert_eq!(
        labelled(&rows, "operations").unwrap(),
        format!(
            "{} timed; {} in failed or cancelled runs left out",
            o.recorded - o.failed,
            o.failed
        )
    );
    let device: u64 = stats.operations.iter().map(|o| o.stats.device).sum();
    let timed: u64 = stats.operations.iter().map(|o| o.stats.count).sum();
    assert!(device > 0);
    let clock = labelled(&rows, "clock").unwrap();
    assert!(
        clock.starts_with(&format!(
            "device spans where recorded ({device} of {timed} operation times, "
        )) && clock.ends_with("), host spans otherwise"),
        "{clock}"
    );
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// Without operation timings the overlay says what the trace lacks, in the words of
/// `stats`, and lists the region labels alone: no kernel table.
#[test]
fn statistics_without_operation_times_say_so() {
    let model = failing(false);
    let note = model.stats().operation_times_note().expect("a note");
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleStats);
    let rows = overlay(&render_to_string(&model, &state, 120, 40));
    assert_eq!(labelled(&rows, "operations").as_deref(), Some(note));
    // The synthetic regions have device spans: no operation times are counted.
    let region = &model.stats().kernels[0];
    let clock = labelled(&rows, "clock").unwrap();
    assert!(
        clock.starts_with(&format!(
            "device spans where recorded ({} of {} region times, ",
            region.device, region.count
        )),
        "{clock}"
    );
    assert!(!rows.iter().any(|r| r.starts_with("kernel")), "{rows:#?}");
    assert!(rows.iter().any(|r| r.starts_with("region ")), "{rows:#?}");
    assert!(rows.iter().any(|r| r.starts_with("blur +1 ")), "{rows:#?}");
}

/// In an 80×24 terminal every column of the kernel table fits (the name takes what is
/// left), every row of the overlay is at most the pane's width, and the top shows the
/// operation times' line, the clock and the kernels; ↓ scrolls to the copy table.
#[test]
fn statistics_with_operation_times_in_a_small_terminal() {
    let model = failing(true);
    let mut state = ViewState::new(&model, 80, 24);
    state.update(&model, Action::ToggleStats);
    let pane = state.layout(&model).stats.unwrap();
    let width = usize::from(pane.width - 2);
    assert_eq!(width, 78);
    let all = stats_overlay(&model, width);
    for row in &all {
        assert!(row.text.chars().count() <= width, "{row:?}");
    }
    let top = overlay(&render_to_string(&model, &state, 80, 24));
    let heading = top
        .iter()
        .find(|r| r.starts_with("kernel"))
        .unwrap_or_else(|| panic!("{top:#?}"));
    assert!(
        heading.ends_with("p50      p99      max  in failed"),
        "{heading}"
    );
    assert!(top.iter().any(|r| r.starts_with("blur ")), "{top:#?}");
    insta::assert_snapshot!(terminal(&model, &state).backend());
    for _ in 0..all.len() {
        state.update(&model, Action::NextQueue);
    }
    let bottom = overlay(&render_to_string(&model, &state, 80, 24));
    assert_eq!(
        bottom.last().map(String::as_str),
        Some(all.last().unwrap().text.trim_end())
    );
}
