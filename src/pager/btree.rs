//! A table b-tree read outside SQLite (file format §1.6): one page
//! through the cache, the keys of a page checked to ascend, and the
//! descent from a root to the leaf cell holding a rowid. Nothing is
//! trusted: a page that does not parse ends the search with "not here".

use super::encoding::{be16, be32, varint};
use super::{ByteSource, Geometry, LazyFile, SourceFailure};

/// SQLite b-tree page types (file format §1.6, first byte of the header).
pub(super) const INTERIOR_INDEX: u8 = 0x02;
pub(super) const INTERIOR_TABLE: u8 = 0x05;
pub(super) const LEAF_TABLE: u8 = 0x0d;
/// Deeper than any b-tree a file of 2^31 pages can hold: a cycle ends here.
const MAX_DEPTH: usize = 40;

/// Page `number` whole, through the block cache; `None` past the file.
pub(super) fn page<S: ByteSource>(
    file: &mut LazyFile<S>,
    g: &Geometry,
    number: u32,
) -> Result<Option<Vec<u8>>, SourceFailure> {
    if number == 0 || number > g.pages {
        return Ok(None);
    }
    let mut bytes = vec![0u8; g.page_bytes as usize];
    let n = file.read(&mut bytes, g.offset(number))?;
    Ok((n == bytes.len()).then_some(bytes))
}

/// The key of each cell of a table b-tree page, in cell order, with the
/// cell's offset; `None` when a pointer or key does not parse or the keys
/// do not ascend strictly (then no search could be trusted to find what
/// SQLite's finds).
fn keys(bytes: &[u8], header: usize, interior: bool, usable: usize) -> Option<Vec<(i64, usize)>> {
    let cells = usize::from(be16(bytes, header + 3)?);
    let pointers = header + if interior { 12 } else { 8 };
    let mut out: Vec<(i64, usize)> = Vec::with_capacity(cells);
    for i in 0..cells {
        let cell = usize::from(be16(bytes, pointers + 2 * i)?);
        if cell < pointers + 2 * cells || cell >= usable {
            return None;
        }
        let body = bytes.get(cell..usable)?;
        let key = if interior {
            varint(body.get(4..)?)?.0
        } else {
            let (_, n) = varint(body)?;
            varint(body.get(n..)?)?.0
        } as i64;
        if out.last().is_some_and(|&(last, _)| last >= key) {
            return None;
        }
        out.push((key, cell));
    }
    Some(out)
}

/// The leaf page holding `rowid` in the table b-tree at `root`, and its
/// cell's offset. Keys are checked to ascend in every page on the way, so
/// the descent is the only one any search can make.
pub(super) fn find_row<S: ByteSource>(
    file: &mut LazyFile<S>,
    g: &Geometry,
    root: u32,
    rowid: i64,
) -> Result<Option<(Vec<u8>, usize)>, SourceFailure> {
    let usable = g.usable as usize;
    let mut number = root;
    for _ in 0..MAX_DEPTH {
        let Some(bytes) = page(file, g, number)? else {
            return Ok(None);
        };
        let header = if number == 1 { 100 } else { 0 };
        match bytes[header] {
            INTERIOR_TABLE => {
                let Some(cells) = keys(&bytes, header, true, usable) else {
                    return Ok(None);
                };
                // The first cell whose key is at least `rowid` leads to it;
                // past every key, the right-most pointer does.
                let at = cells.partition_point(|&(key, _)| key < rowid);
                let child = match cells.get(at) {
                    Some(&(_, cell)) => be32(&bytes, cell),
                    None => be32(&bytes, header + 8),
                };
                match child {
                    Some(child) => number = child,
                    None => return Ok(None),
                }
            }
            LEAF_TABLE => {
                let Some(cells) = keys(&bytes, header, false, usable) else {
                    return Ok(None);
                };
                return Ok(cells
                    .binary_search_by_key(&rowid, |&(key, _)| key)
                    .ok()
                    .map(|i| (bytes, cells[i].1)));
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}
