//! One write transaction on the archive's file: begin and commit. What it
//! writes is the catalog's to say: each table's inserts are methods of
//! [`Transaction`] in that table's file (`src/catalog/<table>.rs`), beside
//! the table's row type and its reads.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Error, Result, SqlContext};

/// One write transaction. Dropped without [`Transaction::commit`], it rolls
/// back. Its inserts are in `src/catalog/`, one `impl` block per table.
pub struct Transaction<'a> {
    tx: rusqlite::Transaction<'a>,
    file: &'a str,
}

impl<'a> Transaction<'a> {
    pub(crate) fn begin(conn: &'a Connection, file: &'a str) -> Result<Transaction<'a>> {
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(|e| Error::sqlite(file, "cannot begin a write transaction", e))?;
        Ok(Transaction { tx, file })
    }

    /// Makes every write in the transaction durable and visible at once.
    pub fn commit(self) -> Result<()> {
        self.tx.commit().ctx(self.file, "cannot commit")
    }

    /// The underlying SQLite transaction: what the catalog's inserts, and
    /// the writer's own statements, run on.
    pub(crate) fn sql(&self) -> &rusqlite::Transaction<'a> {
        &self.tx
    }

    /// The name errors use for the file written.
    pub(crate) fn file(&self) -> &'a str {
        self.file
    }
}
