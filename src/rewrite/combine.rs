//! Combining several archives into one: every source of every input, with
//! a source that appears in more than one input (equal uuid) written once,
//! its segments merged into one timeline and none duplicated. Sources
//! whose labels agree but whose uuids differ stay apart (format §3.1).

use std::path::Path;

use super::copy::{copy_many, CopyReport};
use super::spec::CopySpec;
use crate::container::CreateSchema;
use crate::error::{Error, Result};

/// Combines `inputs` into a new archive at `output` (replacing one only
/// when `replace`). Two copies of one source that hold different
/// segments over the same time are refused rather than merged, since the
/// result would repeat rows.
pub fn combine<P: AsRef<Path>>(
    output: impl AsRef<Path>,
    inputs: &[P],
    replace: bool,
) -> Result<CopyReport> {
    combine_as(output, inputs, replace, None)
}

/// [`combine`] writing the output in `schema` (`None`: 5 when an input is
/// 5, else 4; see [`CopySpec::schema`]).
pub fn combine_as<P: AsRef<Path>>(
    output: impl AsRef<Path>,
    inputs: &[P],
    replace: bool,
    schema: Option<CreateSchema>,
) -> Result<CopyReport> {
    let output = output.as_ref();
    if inputs.is_empty() {
        return Err(Error::Invalid {
            file: output.display().to_string(),
            message: "nothing to combine: no input archive given".into(),
        });
    }
    let paths: Vec<&Path> = inputs.iter().map(AsRef::as_ref).collect();
    let spec = CopySpec {
        replace,
        schema,
        ..CopySpec::default()
    };
    copy_many(&paths, output, &spec)
}
