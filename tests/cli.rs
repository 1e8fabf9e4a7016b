//! The `dendro` command: exit codes, the stable describe JSON, and cat.
#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

mod common;

use std::process::{Command, Output};

fn dendro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> (tempfile::TempDir, String) {
    let (dir, path) = common::copy_fixture(&common::fixtures_dir().join(name));
    (dir, path.to_str().unwrap().to_string())
}

#[test]
fn describe_json_matches_the_fixture_catalog() {
    let (_d, path) = fixture("b_multi_source.dendro");
    let out = dendro(&["describe", &path, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["file_bytes"], 65536);
    assert_eq!(json["schema_version"], 4);
    let s1 = &json["sources"][0];
    assert_eq!(s1["uuid"], "4d8dd7da-ed6f-4b1c-9040-fcebac272209");
    assert_eq!(s1["complete"], true);
    let net = &s1["streams"][2];
    assert_eq!(net["name"], "net");
    assert_eq!(net["live_rows"], 17);
    assert_eq!(net["segments"], serde_json::json!([]));
    assert_eq!(
        net["live_span"],
        serde_json::json!([1700000000000000200i64, 1700000032000000200i64])
    );
    assert_eq!(json["sources"][1]["complete"], false);
}

#[test]
fn exit_codes_say_refused_unsound_or_fine() {
    let (_d, good) = fixture("a_single_sealed.dendro");
    assert_eq!(dendro(&["verify", &good]).status.code(), Some(0));
    assert_eq!(dendro(&["sniff", &good]).status.code(), Some(0));
    for refused in [
        "i_foreign_app.sqlite",
        "i_not_sqlite.txt",
        "i_wrong_version.dendro",
        "i_empty_file.dendro",
    ] {
        let (_d, path) = fixture(refused);
        let out = dendro(&["describe", &path]);
        assert_eq!(out.status.code(), Some(2), "{refused}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&path), "names the file: {err}");
        assert_eq!(dendro(&["sniff", &path]).status.code(), Some(2));
    }
    // An archive with a self-contradicting segment: verify exits 1.
    let (_d, bad) = fixture("a_single_sealed.dendro");
    let conn = rusqlite::Connection::open(&bad).unwrap();
    conn.execute("UPDATE segments SET rows = 0 WHERE seq = 0", [])
        .unwrap();
    drop(conn);
    let out = dendro(&["verify", &bad]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn cat_prints_sealed_rows_exactly_and_counts_the_unread_tail() {
    let (_d, path) = fixture("h_negative_ts.dendro");
    let describe: serde_json::Value =
        serde_json::from_slice(&dendro(&["describe", &path, "--json"]).stdout).unwrap();
    let source = describe["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["streams"]
                .as_array()
                .unwrap()
                .iter()
                .any(|st| st["name"] == "extremes")
        })
        .unwrap();
    let id = source["id"].to_string();
    let out = dendro(&["cat", &path, "--source", &id, "--stream", "extremes"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("-9223372036854775808"), "{text}");
    assert!(text.contains("9223372036854775807"), "{text}");
    assert_eq!(text.lines().count(), 3);

    let uuid = source["uuid"].as_str().unwrap();
    let out = dendro(&[
        "cat",
        &path,
        "--source",
        uuid,
        "--stream",
        "around_zero",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("ts,value,label\n"), "{csv}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("6 live row(s)"), "{err}");

    let out = dendro(&["cat", &path, "--source", "999", "--stream", "x"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_refuses_zero_minutes_of_history_instead_of_writing_1970() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.dendro");
    let run = dendro(&["demo", out.to_str().unwrap(), "--minutes", "0"]);
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8(run.stderr).unwrap();
    assert!(err.contains("--minutes"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused request");
}

#[test]
fn demo_writes_a_sound_archive_with_sealed_segments_and_a_live_tail() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.dendro");
    let out = out.to_str().unwrap();
    let run = dendro(&["demo", out, "--minutes", "12", "--hosts", "2"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(dendro(&["verify", out]).status.code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_slice(&dendro(&["describe", out, "--json"]).stdout).unwrap();
    let sources = json["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    for source in sources {
        assert_eq!(source["metadata"]["encoder"], dendro::typed::ENCODER);
        let streams = source["streams"].as_array().unwrap();
        assert!(streams.len() >= 4);
        assert!(streams
            .iter()
            .any(|s| !s["segments"].as_array().unwrap().is_empty()));
        assert!(streams.iter().any(|s| s["live_rows"].as_i64().unwrap() > 0));
    }
    // Written with the self-describing encoder: `cat` reads the live tail
    // too, with no encoder of its own, continuing the sealed rows.
    let memory = &sources[0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "memory")
        .unwrap();
    let sealed: i64 = memory["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|seg| seg["rows"].as_i64().unwrap())
        .sum();
    let live = memory["live_rows"].as_i64().unwrap();
    let uuid = sources[0]["uuid"].as_str().unwrap();
    let cat = dendro(&[
        "cat", out, "--source", uuid, "--stream", "memory", "--format", "csv",
    ]);
    assert_eq!(cat.status.code(), Some(0));
    assert!(
        cat.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    let csv = String::from_utf8(cat.stdout).unwrap();
    let ts: Vec<i64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ts.len() as i64, sealed + live, "every sealed and live row");
    assert!(
        ts.windows(2).all(|w| w[0] < w[1]),
        "the tail continues the segments"
    );
    // It refuses to overwrite.
    assert_eq!(dendro(&["demo", out]).status.code(), Some(2));
}

#[test]
fn describe_on_a_huge_catalog_lists_the_first_few_and_says_what_it_left_out() {
    // 150 sources, the first with a 1 MB label, 3,000 streams and a stream
    // of 20,000 segments: the listing stays short and says so.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.dendro");
    let payload = dendro::Segment {
        bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
        rows: 1,
        first_ts: 0,
        last_ts: 0,
        caller_index: None,
    };
    let mut archive = dendro::ArchiveMut::create(&path).unwrap();
    let tx = archive.transaction().unwrap();
    for s in 0..150 {
        let mut labels = dendro::Labels::from([("host".to_string(), format!("h{s}"))]);
        if s == 0 {
            labels.insert("note".to_string(), "x".repeat(1 << 20));
        }
        let id = tx
            .insert_source(&labels, &dendro::Labels::new(), 0)
            .unwrap();
        let streams = if s == 0 { 3_000 } else { 1 };
        for k in 0..streams {
            tx.insert_segment(id, &format!("s{k:05}"), 0, &payload)
                .unwrap();
        }
        if s == 0 {
            for q in 1..20_000 {
                let mut seg = payload.clone();
                seg.first_ts = q;
                seg.last_ts = q;
                tx.insert_segment(id, "s00000", q, &seg).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    drop(archive);
    let out = dendro(&["describe", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("150 source(s), 3149 stream(s)"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("stream \"s00000\": 20000 segment(s)"));
    assert!(text.contains("… 2900 more stream(s) not shown"));
    assert!(text.contains("… 50 more source(s) not shown"));
    assert!(text.contains("x… (1048576 bytes)"), "a 1 MB label is cut");
    assert!(text.len() < 100_000, "{} bytes of listing", text.len());
    let all = dendro(&["describe", path.to_str().unwrap(), "--all"]);
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(all.contains("stream \"s02999\"") && !all.contains("not shown"));
}

/// What a hostile file puts in a name: a window-title sequence, a clear
/// screen and a carriage return that would overprint the line.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\rfake";

/// Output that a terminal shows as text: no escape, bell, carriage return or
/// bidi override from the file reaches it raw.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{9b}']),
        "{what} printed a control character raw: {text:?}"
    );
}

#[test]
fn describe_and_verify_print_a_hostile_uuid_and_index_names_escaped() {
    let (_d, path) = fixture("a_single_sealed.dendro");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE sources SET uuid = ?1",
        [format!("{HOSTILE}\u{202e}\u{9b}31m")],
    )
    .unwrap();
    // An index SQLite's integrity check names: its definition no longer
    // matches its entries.
    conn.execute_batch(&format!(
        "CREATE TABLE extra(a); INSERT INTO extra VALUES (1), (2), (3);
         CREATE INDEX \"{HOSTILE}\" ON extra(a);"
    ))
    .unwrap();
    conn.pragma_update(None, "writable_schema", "ON").unwrap();
    conn.execute(
        "UPDATE sqlite_schema SET sql = ?1 WHERE type = 'index' AND tbl_name = 'extra'",
        [format!("CREATE INDEX \"{HOSTILE}\" ON extra(a + 1)")],
    )
    .unwrap();
    drop(conn);

    let out = dendro(&["describe", &path]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_inert("describe", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\u{1b}]0;pwned\\u{7}"), "{text}");

    let out = dendro(&["verify", &path]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_inert("verify", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("integrity") && text.contains("\\u{1b}[2J\\u{d}fake"),
        "names the index, escaped: {text}"
    );
}

#[test]
fn a_refused_file_with_a_hostile_name_is_named_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{HOSTILE}.dendro"));
    std::fs::write(
        &path,
        b"not an archive at all, but long enough to be sniffed past a header check ....",
    )
    .unwrap();
    let out = dendro(&["describe", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_inert("describe's error", &out.stderr);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a dendro archive"));
    let out = dendro(&["sniff", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_inert("sniff", &out.stdout);
}

#[test]
fn cat_on_a_terminal_escapes_values_and_piped_prints_them_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.dendro");
    let id = common::sample_archive(&path);
    let path = path.to_str().unwrap();
    // The fixture encoding's label column carries the hostile text.
    let mut archive = dendro::ArchiveMut::open(path).unwrap();
    let tx = archive.transaction().unwrap();
    let enc = common::FixtureEncoder::default();
    let rows = vec![dendro::WalRow {
        ts: 1_000,
        wall_offset: 0,
        row: common::fixture_row(1, HOSTILE),
    }];
    let seg = dendro::segment::materialize("t", &enc, "evil", &rows)
        .unwrap()
        .unwrap();
    tx.insert_segment(id, "evil", 0, &seg).unwrap();
    tx.commit().unwrap();
    drop(archive);
    let args = [
        "cat", path, "--source", "1", "--stream", "evil", "--format", "csv",
    ];

    // Piped: the exact bytes, for a program to read.
    let piped = dendro(&args);
    assert_eq!(piped.status.code(), Some(0), "{piped:?}");
    assert!(String::from_utf8_lossy(&piped.stdout).contains(HOSTILE));

    // On a terminal (a pseudo-terminal made by util-linux's script).
    if Command::new("script").arg("--version").output().is_err() {
        common::skip(
            "cat_on_a_terminal_escapes_values",
            "no `script` (util-linux) to run dendro on a pseudo-terminal",
        );
        return;
    }
    let line = std::iter::once(env!("CARGO_BIN_EXE_dendro"))
        .chain(args)
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let shown = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    // The terminal turns each line feed into CR LF itself: those are its own.
    let text = String::from_utf8_lossy(&shown.stdout).replace("\r\n", "\n");
    assert_inert("cat on a terminal", text.as_bytes());
    assert!(
        text.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{d}fake"),
        "{text}"
    );
}

#[test]
fn a_file_named_broken_pipe_is_refused_with_its_name_not_passed_off_as_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("Broken pipe.dendro");
    let out = dendro(&["describe", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Broken pipe.dendro"));
    std::fs::write(
        &missing,
        b"Broken pipe, and not an archive: the words are in the file too",
    )
    .unwrap();
    for command in ["describe", "verify", "sniff"] {
        let out = dendro(&[command, missing.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{command}: {out:?}");
        let said = [out.stdout, out.stderr].concat();
        assert!(
            String::from_utf8_lossy(&said).contains("Broken pipe.dendro"),
            "{command}: {}",
            String::from_utf8_lossy(&said)
        );
    }
}

#[test]
fn a_reader_that_stops_early_is_not_a_failure() {
    // A listing far longer than a pipe's buffer, read for a few bytes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.dendro");
    let mut archive = dendro::ArchiveMut::create(&path).unwrap();
    let tx = archive.transaction().unwrap();
    let id = tx
        .insert_source(&dendro::Labels::new(), &dendro::Labels::new(), 0)
        .unwrap();
    let payload = dendro::Segment {
        bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
        rows: 1,
        first_ts: 0,
        last_ts: 0,
        caller_index: None,
    };
    for k in 0..4_000 {
        tx.insert_segment(id, &format!("stream-{k:05}"), 0, &payload)
            .unwrap();
    }
    tx.commit().unwrap();
    drop(archive);
    for args in [vec!["describe", "--all"], vec!["describe", "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dendro"))
            .args(&args)
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
    }
}

#[test]
fn help_says_the_command_does_more_than_inspect_and_read() {
    let out = dendro(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let about = String::from_utf8(out.stdout).unwrap();
    let about = about.lines().next().unwrap();
    for word in ["verify", "write", "rewrite", "replicate", "serve"] {
        assert!(about.contains(word), "{about:?} leaves out {word}");
    }
}

/// The subcommands `dendro --help` lists.
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(dendro(&["--help"]).stdout).unwrap();
    let listed: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect();
    assert!(listed.len() >= 10, "{help}");
    listed
}

/// The long options `dendro SUB --help` lists, without --help.
fn options_of(command: &str) -> Vec<String> {
    let help = String::from_utf8(dendro(&[command, "--help"]).stdout).unwrap();
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            l.split_whitespace()
                .take_while(|word| word.starts_with('-'))
                .find_map(|word| word.strip_prefix("--"))
        })
        .map(|long| {
            let end = long.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
            format!("--{}", &long[..end.unwrap_or(long.len())])
        })
        .filter(|o| o != "--help")
        .collect()
}

#[test]
fn the_readme_lists_every_command_and_each_of_its_options() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let list = readme
        .split("## The command line")
        .nth(1)
        .and_then(|rest| rest.split("```text\n").nth(1))
        .and_then(|block| block.split("```").next())
        .expect("README.md has a command list under \"## The command line\"");
    // Each command's entry: its `dendro NAME` line and the indented lines
    // that continue it.
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in list.lines() {
        if let Some(rest) = line.strip_prefix("dendro ") {
            let name = rest.split_whitespace().next().unwrap_or("").to_string();
            entries.push((name, line.to_string()));
        } else if let Some((_, text)) = entries.last_mut() {
            text.push('\n');
            text.push_str(line);
        }
    }
    let mut lacking = Vec::new();
    for command in subcommands() {
        let Some((_, entry)) = entries.iter().find(|(name, _)| *name == command) else {
            lacking.push(format!("dendro {command}"));
            continue;
        };
        for option in options_of(&command) {
            let named = entry
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .any(|word| word == option);
            if !named {
                lacking.push(format!("dendro {command} {option}"));
            }
        }
    }
    assert!(
        lacking.is_empty(),
        "README.md's command list lacks: {}",
        lacking.join(", ")
    );
}

/// Runs a set-up script with `--dry-run` on a bare PATH (a shell and the
/// text tools it uses, no toolchain, no Debian package of the build): as a
/// user whose `id -u` is `uid`, with or without a `sudo` to go through.
fn setup_dry_run(script: &str, uid: u32, with_sudo: bool) -> Output {
    let bin = tempfile::tempdir().unwrap();
    for tool in ["bash", "dirname", "sed", "head", "grep", "env"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} is on every Debian"));
        std::os::unix::fs::symlink(found, bin.path().join(tool)).unwrap();
    }
    let fake = |name: &str, body: &str| {
        let path = bin.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    fake("id", &format!("echo {uid}"));
    if with_sudo {
        // A dry run never runs anything through it.
        fake("sudo", "echo \"sudo ran: $*\" >&2; exit 99");
    }
    let home = tempfile::tempdir().unwrap();
    Command::new(bin.path().join("bash"))
        .arg(format!("{}/scripts/{script}", env!("CARGO_MANIFEST_DIR")))
        .arg("--dry-run")
        .env_clear()
        .env("PATH", bin.path())
        .env("HOME", home.path())
        // Whatever venv this checkout has is not the one a fresh machine has.
        .env("CARGO_TARGET_DIR", home.path().join("target"))
        .output()
        .unwrap()
}

#[test]
fn setup_as_a_user_with_sudo_installs_only_the_builds_tools_through_sudo() {
    let run = |script: &str, uid: u32, sudo: bool| {
        let out = setup_dry_run(script, uid, sudo);
        let said =
            String::from_utf8_lossy(&[&out.stdout[..], &out.stderr[..]].concat()).to_string();
        (out.status.code(), said)
    };
    let (code, said) = run("setup.sh", 1000, true);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("sudo ran"), "{said}");
    let apt = said
        .lines()
        .find(|l| l.contains("apt-get install"))
        .unwrap_or_else(|| panic!("clang is missing here: {said}"));
    assert!(
        apt.contains("would run: sudo ") && apt.ends_with(" clang"),
        "{apt}"
    );
    assert!(
        said.contains("would run: sudo env DEBIAN_FRONTEND=noninteractive apt-get update"),
        "{said}"
    );
    for test_only in ["chromium", "cargo-machete", "duckdb", "pip", "clippy"] {
        assert!(
            !said.contains(test_only),
            "the demo's set-up installs {test_only}: {said}"
        );
    }
    for tool in ["rustup", "cargo", "npm"] {
        assert!(
            said.contains(&format!("not installed by this script: {tool}")),
            "{said}"
        );
    }

    let (code, said) = run("setup-test.sh", 1000, true);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("sudo ran"), "{said}");
    let apt: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("apt-get install"))
        .collect();
    assert_eq!(apt.len(), 2, "the build's and the tests' packages: {said}");
    assert!(
        apt[1].contains("would run: sudo ") && apt[1].ends_with(" chromium chromium-driver"),
        "{}",
        apt[1]
    );
    let venv = said
        .lines()
        .find_map(|l| l.strip_prefix("setup-test: would run: python3 -m venv "))
        .unwrap_or_else(|| panic!("makes a venv: {said}"));
    assert!(venv.ends_with("/target/venv"), "{venv}");
    assert!(
        said.contains(&format!("would run: {venv}/bin/python -m pip install"))
            && said.contains("duckdb==2.0.0"),
        "DuckDB goes into the venv: {said}"
    );

    // As root, apt-get runs directly; without root or sudo, it says what to ask for.
    let (code, said) = run("setup.sh", 0, false);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang"), "{said}");
    let (code, said) = run("setup.sh", 1000, false);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("needs root") && said.contains("apt-get install clang"),
        "{said}"
    );
}

#[test]
fn demo_script_uses_cargo_target_dir_and_rewrites_an_archive_older_than_the_binary() {
    // scripts/demo.sh beside stand-ins for the build (build-wasm.sh, npm,
    // cargo) and for the release binary, which logs what it is asked.
    let dir = tempfile::tempdir().unwrap();
    let (repo, bin, target) = (
        dir.path().join("repo"),
        dir.path().join("bin"),
        dir.path().join("elsewhere"),
    );
    for d in [repo.join("scripts"), bin.clone(), target.join("release")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"),
        repo.join("scripts/demo.sh"),
    )
    .unwrap();
    let script = |path: std::path::PathBuf, body: &str| {
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    script(repo.join("scripts/build-wasm.sh"), "true");
    script(bin.join("npm"), "true");
    script(bin.join("cargo"), "true");
    let log = dir.path().join("calls");
    script(
        target.join("release/dendro"),
        &format!(
            "echo \"$*\" >> '{}'\n[ \"$1\" = demo ] && echo archive > \"$2\"\nexit 0",
            log.display()
        ),
    );
    let run = || {
        let _ = std::fs::remove_file(&log);
        let out = Command::new("bash")
            .arg(repo.join("scripts/demo.sh"))
            .env("HOME", dir.path())
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("CARGO_TARGET_DIR", &target)
            .env("PORT", "0")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        (calls, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let demo = target.join("demo.dendro");
    let (calls, _) = run();
    assert_eq!(
        calls,
        format!(
            "demo {0}\nserve {0} --root www/dist --port 0\n",
            demo.display()
        ),
        "the binary and the archive are in CARGO_TARGET_DIR"
    );
    let (calls, said) = run();
    assert_eq!(
        calls,
        format!("serve {} --root www/dist --port 0\n", demo.display())
    );
    assert!(
        said.contains("reusing"),
        "says it reuses the archive: {said}"
    );
    // A binary built after the archive writes it again.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&demo)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let (calls, said) = run();
    assert!(calls.starts_with("demo "), "{calls} / {said}");
    assert!(said.contains("newer"), "{said}");
}
