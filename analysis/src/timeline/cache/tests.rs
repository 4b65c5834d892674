use super::*;
use crate::synthetic::PipelineSpec;
use crate::timeline::fixtures::{assert_same, trace_file};

/// A failing pipeline: a failure, cancellations, a quarantine, Busy refusals.
fn failing() -> PipelineSpec {
    PipelineSpec {
        busy_every: Some(7),
        fail_at: Some(150),
        ..PipelineSpec::ops(800)
    }
}

/// The trace read whole, its submission numbers checked (as `view` reads one).
fn load(path: &Path) -> Result<Model, hrx_capture::ReadError> {
    let reader = hrx_capture::TraceReader::open(path)?;
    Model::from_reader(reader.check_submission_numbers())
}

fn options(dir: &Path) -> CacheOptions {
    CacheOptions {
        dir: Some(dir.join("cache")),
        min_bytes: 0,
    }
}

#[test]
fn a_reopened_model_is_mapped_and_holds_what_the_one_read_from_the_trace_holds() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), failing());
    let read = load(&trace).unwrap();
    // The entry is streamed from the trace, never built in memory whole.
    let opened = open(
        &trace,
        &options(dir.path()),
        None,
        || -> Result<Model, ()> { panic!("the trace was read into memory whole") },
    )
    .unwrap();
    // Written, then reopened by mapping: no per-span memory is held.
    assert!(
        opened
            .lanes
            .iter()
            .all(|l| l.columns().0.is_mapped() || l.is_empty())
    );
    assert!(opened.submissions.is_mapped() && opened.cross.is_mapped());
    assert_eq!(opened.heap_bytes(), size_of_val(opened.regions()));
    assert_eq!(opened.span_count(), read.span_count());
    assert!(read.first_failure().is_some());
    assert_same(&opened, &read);
    // The second open reads the cache, not the trace.
    let again = open(
        &trace,
        &options(dir.path()),
        None,
        || -> Result<Model, ()> { panic!("the trace was read again") },
    )
    .unwrap();
    assert_same(&again, &read);
}

#[test]
fn a_changed_trace_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(400));
    let cache = options(dir.path());
    let first = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_eq!(first.span_count(), 400);
    // The same path, another trace: a longer recording.
    trace_file(dir.path(), PipelineSpec::ops(800));
    assert!(reopen(cache.dir.as_deref().unwrap(), &trace).is_err());
    let second = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_eq!(second.span_count(), 800);
    assert!(second.submissions.is_mapped());
}

#[test]
fn a_damaged_entry_is_rebuilt_from_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), failing());
    let cache = options(dir.path());
    let read = load(&trace).unwrap();
    open(&trace, &cache, None, || load(&trace)).unwrap();
    let entry = entry(cache.dir.as_deref().unwrap(), &trace).unwrap();
    // A column cut short (a crash while writing it), then a manifest of garbage.
    let spans = entry.join("lane-1.spans");
    let len = fs::metadata(&spans).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&spans)
        .unwrap()
        .set_len(len - 7)
        .unwrap();
    let error = reopen(cache.dir.as_deref().unwrap(), &trace).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    let rebuilt = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_same(&rebuilt, &read);
    fs::write(entry.join("model.bin"), b"\xff\xff\xff\xff not a manifest").unwrap();
    assert!(reopen(cache.dir.as_deref().unwrap(), &trace).is_err());
    let rebuilt = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_same(&rebuilt, &read);
}

#[test]
fn small_traces_and_a_disabled_cache_are_read_directly() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(40));
    let small = CacheOptions {
        min_bytes: fs::metadata(&trace).unwrap().len() + 1,
        ..options(dir.path())
    };
    let model = open(&trace, &small, None, || load(&trace)).unwrap();
    assert!(!model.submissions.is_mapped());
    assert!(!dir.path().join("cache").exists());
    let off = CacheOptions {
        dir: None,
        min_bytes: 0,
    };
    assert!(
        !open(&trace, &off, None, || load(&trace))
            .unwrap()
            .submissions
            .is_mapped()
    );
    assert!(!dir.path().join("cache").exists());
}

/// A cache directory that others may write (a shared `/tmp/hrx-trace-view` another user
/// made first) is not used: nothing is written into it and nothing in it is mapped.
#[test]
fn a_cache_directory_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(40));
    let cache = dir.path().join("cache");
    fs::create_dir(&cache).unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
    let model = open(&trace, &options(dir.path()), None, || load(&trace)).unwrap();
    assert!(!model.submissions.is_mapped());
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
    let error = reopen(&cache, &trace).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
    // Made private again, the same directory caches the trace.
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(
        open(&trace, &options(dir.path()), None, || load(&trace))
            .unwrap()
            .submissions
            .is_mapped()
    );
}

/// A private cache directory inside one that others may write (without the sticky bit
/// that /tmp has) is not used either: they could rename it away and put their own there.
#[test]
fn a_cache_directory_inside_one_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(40));
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    let cache = shared.join("cache");
    let options = CacheOptions {
        dir: Some(cache.clone()),
        min_bytes: 0,
    };
    for (mode, used) in [(0o777, false), (0o1777, true), (0o755, true)] {
        let _ = fs::remove_dir_all(&cache);
        fs::set_permissions(&shared, fs::Permissions::from_mode(mode)).unwrap();
        let model = open(&trace, &options, None, || load(&trace)).unwrap();
        assert_eq!(model.submissions.is_mapped(), used, "parent mode {mode:o}");
        let error = usable(&options);
        assert_eq!(error.is_ok(), used, "parent mode {mode:o}: {error:?}");
        if !used {
            assert!(error.unwrap_err().contains("which another user may change"));
        }
    }
}

/// Eviction keeps the entry just written and the most recently used others within the
/// count and size bounds, removes dead writers' temporary directories and leaves running
/// writers' and anything not an entry alone.
#[test]
fn eviction_keeps_the_most_recently_used_entries_within_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path();
    let now = std::time::SystemTime::now();
    // Entry i used i hours ago, 100 bytes each.
    let entry = |i: u64| {
        let path = cache.join(format!("{i:016x}"));
        fs::create_dir(&path).unwrap();
        let model = File::create(path.join("model.bin")).unwrap();
        model.set_len(100).unwrap();
        model
            .set_modified(now - std::time::Duration::from_secs(3600 * i))
            .unwrap();
        path
    };
    let entries: Vec<PathBuf> = (0..6).map(entry).collect();
    let dead = cache.join(format!("{:016x}.tmp-4294967295", 9));
    let live = cache.join(format!("{:016x}.tmp-{}", 10, std::process::id()));
    let other = cache.join("notes");
    for d in [&dead, &live, &other] {
        fs::create_dir(d).unwrap();
    }
    let exists = |p: &PathBuf| p.exists();
    // The oldest is the one just written: it stays, with the two most recent others.
    evict(cache, &entries[5], 3, u64::MAX);
    let kept: Vec<bool> = entries.iter().map(exists).collect();
    assert_eq!(kept, [true, true, false, false, false, true]);
    assert!(!dead.exists() && live.exists() && other.exists());
    // By size: 250 bytes hold the kept one and one more.
    evict(cache, &entries[5], 8, 250);
    let kept: Vec<bool> = entries.iter().map(exists).collect();
    assert_eq!(kept, [true, false, false, false, false, true]);
}

/// A reopened entry counts as used: eviction keeps it over entries written after it.
#[test]
fn a_reopen_marks_its_entry_used() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(50));
    let options = options(dir.path());
    let cache = options.dir.clone().unwrap();
    open(&trace, &options, None, || load(&trace)).unwrap();
    let model = entry(&cache, &trace).unwrap().join("model.bin");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(&model)
        .unwrap()
        .set_modified(old)
        .unwrap();
    reopen(&cache, &trace).unwrap();
    let used = fs::metadata(&model).unwrap().modified().unwrap();
    assert!(used > old + std::time::Duration::from_secs(1800));
}

/// A cache directory whose parent does not exist (a `TMPDIR` that is not there) is not
/// created: the trace is read without a cache.
#[test]
fn a_cache_dir_whose_parent_is_missing_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(50));
    let options = CacheOptions {
        dir: Some(dir.path().join("missing").join("hrx-trace-view")),
        min_bytes: 0,
    };
    let mut loaded = false;
    open(&trace, &options, None, || {
        loaded = true;
        load(&trace)
    })
    .unwrap();
    assert!(loaded, "read from the trace");
    assert!(!dir.path().join("missing").exists());
}

/// The entry just built from a trace that grew meanwhile (one being recorded) is opened by
/// the key the trace had when the build began, as `open` does: the trace as long as it was
/// when opened. By the trace's key now it is stale (a break-it pass: `open` refused it at
/// once and read the grown trace again into memory).
#[test]
fn an_entry_opens_by_the_key_it_was_built_for_after_the_trace_grew() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(400));
    let cache = options(dir.path());
    let key = TraceKey::of(&trace).unwrap();
    let built = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_eq!(built.span_count(), 400);
    // The recorder appends.
    let mut file = fs::OpenOptions::new().append(true).open(&trace).unwrap();
    file.write_all(&[0u8; 4096]).unwrap();
    let dir = cache.dir.as_deref().unwrap();
    assert!(reopen(dir, &trace).is_err(), "stale by the trace's key now");
    let reopened = reopen_as(dir, &trace, &key).unwrap();
    assert_eq!(reopened.span_count(), 400);
    assert!(reopened.submissions.is_mapped());
}

/// An entry that cannot be written (a full disk, a file size limit; here a file where its
/// temporary folder goes) leaves the trace read whole into memory, and says why, once, for
/// `view` to print: it was dropped in silence, every later view building the index again.
#[test]
fn an_entry_that_cannot_be_written_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(400));
    let cache = options(dir.path());
    let cache_dir = cache.dir.clone().unwrap();
    create_private_dir(&cache_dir).unwrap();
    let blocked = entry(&cache_dir, &trace)
        .unwrap()
        .with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&blocked, b"in the way").unwrap();
    let model = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_eq!(model.span_count(), 400);
    assert!(!model.submissions.is_mapped(), "read into memory");
    let said = take_unwritten(&trace).expect("the failure is said");
    assert!(
        said.starts_with("the view cache could not keep the index of")
            && said.contains(&cache_dir.display().to_string())
            && said.contains(CACHE_ENV),
        "{said}"
    );
    assert_eq!(take_unwritten(&trace), None, "said once");
    // Written once the way is clear: nothing to say.
    fs::remove_file(&blocked).unwrap();
    let model = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert!(model.submissions.is_mapped());
    assert_eq!(take_unwritten(&trace), None);
}

/// A cache folder whose parent is missing is said as such, with no hint to free space
/// there (a break-it pass); space running out keeps that hint.
#[test]
fn an_entry_in_a_missing_folder_is_not_blamed_on_space() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(dir.path(), PipelineSpec::ops(400));
    let missing = dir.path().join("missing");
    let cache = CacheOptions {
        dir: Some(missing.join("cache")),
        ..options(dir.path())
    };
    let model = open(&trace, &cache, None, || load(&trace)).unwrap();
    assert_eq!(model.span_count(), 400);
    let said = take_unwritten(&trace).expect("the failure is said");
    assert!(
        !said.contains("free space")
            && said.contains(&format!("{} does not exist: create it", missing.display())),
        "{said}"
    );
    assert!(
        !missing.exists(),
        "the folders above the cache are not created"
    );
    let full = io::Error::from(io::ErrorKind::StorageFull);
    assert!(unwritten_hint(&full, dir.path()).starts_with("free space there"));
}
