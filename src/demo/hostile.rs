//! The demo's hostile text (`--hostile`): labels, metadata and a stream
//! name carrying markup, script, control and bidi characters and a
//! megabyte-long string, which a viewer must show inertly.

use crate::catalog::Labels;
use crate::format::keys;

/// Markup, script and text a viewer must show as text and never run.
pub(super) const HOSTILE: &[&str] = &[
    "<script>alert('dendro')</script>",
    "\"><img src=x onerror=alert(document.domain)>",
    "javascript:alert(1)",
    "<svg/onload=alert(1)>",
    "{{constructor.constructor('alert(1)')()}}",
    "\u{202e}cod.exe\u{202c} right-to-left override",
    "tab\there, newline\nthere, bell\u{7}, escape\u{1b}[31mred\u{1b}[0m, nul \u{0} end",
    "zero\u{200b}width\u{200d}joiners and \u{fe0f}\u{1f4a3} emoji",
    "' OR 1=1; DROP TABLE segments; --",
];

/// The stream whose name is itself hostile text.
pub(super) const HOSTILE_STREAM: &str = "<img src=x onerror=alert('stream')>\u{202e}kcatta";

pub(super) fn hostile_labels(host: &str) -> Labels {
    let mut labels = Labels::new();
    labels.insert(
        "host".into(),
        format!("{host}<script>alert('{host}')</script>"),
    );
    labels.insert("<b onmouseover=alert(1)>role</b>".into(), HOSTILE[1].into());
    labels.insert("bidi".into(), HOSTILE[5].into());
    labels.insert("controls".into(), HOSTILE[6].into());
    labels
}

pub(super) fn hostile_metadata() -> Labels {
    let mut metadata = Labels::new();
    let long: String = "A".repeat(1 << 20);
    metadata.insert("huge".into(), long);
    for (i, text) in HOSTILE.iter().enumerate() {
        metadata.insert(format!("hostile_{i}"), text.to_string());
    }
    metadata.insert(
        keys::PRODUCER_VERSION.into(),
        format!("agent <i>2.4.1</i>{}", HOSTILE[0]),
    );
    metadata
}
