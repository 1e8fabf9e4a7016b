//! Warnings the library logs, captured so a test can see one was given.
//! Tests run in parallel, so a test looks only at messages naming its
//! own file.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The captured warnings.
pub struct Logs(Mutex<Vec<String>>);

impl log::Log for Logs {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Installs the capturing logger (once per test binary).
pub fn logs() -> &'static Logs {
    static LOGS: OnceLock<&'static Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Logs = Box::leak(Box::new(Logs(Mutex::new(Vec::new()))));
        let _ = log::set_logger(logs);
        log::set_max_level(log::LevelFilter::Warn);
        logs
    })
}

impl Logs {
    /// Messages mentioning `file` that contain `needle`.
    pub fn count(&self, file: &Path, needle: &str) -> usize {
        let file = file.display().to_string();
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.contains(&file) && m.contains(needle))
            .count()
    }
}
