//! What every table's reads share: a statement run into rows, and the
//! error for a row that is not there.

use rusqlite::Row;

use super::Snapshot;
use crate::error::{Error, Result, SqlContext};

impl Snapshot<'_> {
    /// Runs `sql` and maps every row it answers; `what` names the
    /// question in the error.
    pub(crate) fn collect<T>(
        &self,
        what: &str,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut stmt = self.conn.prepare_cached(sql).ctx(self.file, what)?;
        let rows = stmt.query_map(params, map).ctx(self.file, what)?;
        rows.collect::<rusqlite::Result<Vec<T>>>()
            .ctx(self.file, what)
    }

    /// The error for `what`, absent from this snapshot's file.
    pub(crate) fn not_found(&self, what: String) -> Error {
        Error::NotFound {
            file: self.file.to_string(),
            what,
        }
    }
}
