//! A child process for the compaction crash test: this test binary started
//! again (`common::child_command`). Mode `compact PATH TARGET_ROWS`
//! compacts the archive, printing `event ...` as each step happens and
//! flushing, so the parent can kill it right after any of them; then
//! `done`.

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
        other => panic!("unknown child mode {other:?}; see the module's docs"),
    }
}
