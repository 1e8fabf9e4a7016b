//! The engine's contract with the TypeScript front end is declared once, in
//! Rust: the kinds of error a page can meet, what a refused file is
//! instead, the kinds of problem verify reports, and the size limit.
//! `www/src/engine/contract.ts` is generated from those declarations; this
//! test fails when the file on disk differs from what they generate.
//! `DENDRO_BLESS=1 cargo test --test contract` rewrites it.

use dendro::verify::ProblemKind;
use dendro::{EngineKind, NotArchive};

fn list(items: impl IntoIterator<Item = (String, String)>) -> String {
    items
        .into_iter()
        .map(|(name, meaning)| format!("  {name:?}, // {meaning}\n"))
        .collect()
}

fn contract() -> String {
    let kinds = list(
        EngineKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), k.meaning().to_string())),
    );
    let details = list(
        NotArchive::DETAILS
            .iter()
            .map(|(d, m)| (d.to_string(), m.to_string())),
    );
    let problems: String = ProblemKind::ALL
        .iter()
        .map(|p| format!("  {:?},\n", p.name()))
        .collect();
    format!(
        "// Generated from the dendro crate's declarations by tests/contract.rs;
// do not edit. `DENDRO_BLESS=1 cargo test --test contract` regenerates it.

/** Why the engine refused a file or a request (`EngineKind` in src/error.rs). */
export const ERROR_KINDS = [
{kinds}] as const;
export type EngineErrorKind = (typeof ERROR_KINDS)[number];

/** What a file refused as \"NotAnArchive\" is instead (`NotArchive::DETAILS`). */
export const REFUSAL_DETAILS = [
{details}] as const;
export type RefusalDetail = (typeof REFUSAL_DETAILS)[number];

/** What verify can report (`ProblemKind` in src/verify.rs). */
export const PROBLEM_KINDS = [
{problems}] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** The largest archive the engine opens in memory (`container::MAX_IN_MEMORY_BYTES`). */
export const MAX_ARCHIVE_BYTES = {max};

/** The most segments a sampled preview reads (`catalog::MAX_WINDOW_SAMPLE`): larger asks are cut to it. */
export const MAX_WINDOW_SAMPLE = {max_sample};

/**
 * A window's segments as the engine's `Archive.windowSegments(source, stream,
 * from, to)` counts them (`WindowEntries` in src/catalog/listing.rs): listed
 * once from the time index (`segments_by_time`, a range of it; one table row
 * at most) and kept, so the footer plan (`prefetchWindow`), the sampled
 * preview and the read of the same window list nothing again. Read in place,
 * `prefetchWindow` brings the index's pages in first, in batches.
 */
export interface WindowSegments {{
  /** The segments of the stream overlapping [from, to]. */
  total: number;
}}

/**
 * The sampled preview: `Archive.previewRange(source, stream, from, to,
 * columns, maxPoints, rates, sample)` with `sample` = k (1..MAX_WINDOW_SAMPLE)
 * answers from the footers of k of the window's segments spread evenly
 * through it (by position in time order), after `Archive.prefetchWindow(
 * source, stream, from, to, columns, maxPoints, rates, true, k)` fetched just
 * those k footers and rows. The answer is a RangeEnvelope with `preview:
 * true` and `sample` set; `segments_left_out` counts the window's segments
 * not in the sample, `rows_left_out` estimates their rows from the sample's
 * mean, and `rows_in_window` counts only the sampled ones' rows.
 */
export interface WindowSample {{
  /** Segments whose footers made the band. */
  taken: number;
  /** The window's segments (WindowSegments.total). */
  of: number;
}}
",
        max = dendro::container::MAX_IN_MEMORY_BYTES,
        max_sample = dendro::catalog::MAX_WINDOW_SAMPLE,
    )
}

#[test]
fn the_typescript_contract_is_what_the_crate_declares() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("www/src/engine/contract.ts");
    let expected = contract();
    if std::env::var_os("DENDRO_BLESS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == expected,
        "{} is out of date with the crate; run DENDRO_BLESS=1 cargo test --test contract",
        path.display()
    );
}
