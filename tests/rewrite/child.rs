//! A child process for the compaction crash test: this test binary started
//! again (`common::child_command`). Mode `compact PATH TARGET_ROWS`
//! compacts the archive, printing `event ...` as each step happens and
//! flushing, so the parent can kill it right after any of them; then
//! `done`. Mode `copy IN OUT` copies, and just before the finished copy
//! would be moved into place prints `ready PID` and waits to be killed.

use std::io::Write;
use std::path::Path;

use dendro::rewrite::{compact, CompactSpec, Target};

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The child's body, run only by `common::child_command`: ignored in a
/// normal run.
#[test]
#[ignore = "a child process of the compaction crash test; it starts it"]
fn child_process() {
    let line = crate::common::child_args();
    let args: Vec<&str> = line.split('\n').collect();
    match args.as_slice() {
        ["compact", path, rows] => {
            let spec = CompactSpec {
                target: Target::Rows(rows.parse().expect("a row count")),
                union_fields: false,
            };
            say("event started".into());
            compact(Path::new(path), &spec, |e| say(format!("event {e:?}"))).unwrap();
            say("done".into());
        }
        ["copy", input, output] => {
            dendro::container::observe_steps(Some(stop_before_placing));
            let spec = dendro::rewrite::CopySpec::default();
            dendro::rewrite::copy(Path::new(input), Path::new(output), &spec).unwrap();
            say("done".into());
        }
        other => panic!("unknown child mode {other:?}; see the module's docs"),
    }
}

/// Holds a copy at its last step, the fsync before the move, until the
/// parent kills the process.
fn stop_before_placing(step: &dendro::container::Step<'_>) -> std::io::Result<()> {
    if let dendro::container::Step::SyncFile(path) = step {
        if path.to_string_lossy().contains(".partial-") {
            say(format!("ready {}", std::process::id()));
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
    }
    Ok(())
}
