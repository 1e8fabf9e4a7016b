//! Carrying the `documents` table (schema 5) through a copy or combine:
//! every revision of every input, once per uuid, with `supersedes`
//! renumbered to the output's ids, in an order where each revision follows
//! the one it supersedes. Two revisions superseding the same one (a fork:
//! two files each changed a document after they parted) are both kept and
//! reported; the newer by wall clock is written last and is current.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::catalog::DocumentRevision;
use crate::error::{Error, Result};

/// One revision as an input holds it (its `id` and `supersedes` are ids
/// of that input).
#[derive(Debug, Clone)]
pub(crate) struct HeldRevision {
    /// Which input (index into the files).
    pub input: usize,
    /// The row.
    pub revision: DocumentRevision,
}

/// Two or more revisions that each supersede the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentFork {
    /// The document's kind.
    pub kind: String,
    /// The document's name.
    pub name: String,
    /// The uuid of the revision they all supersede.
    pub superseded: String,
    /// Their uuids, in the order written (the last is the newest).
    pub revisions: Vec<String>,
}

/// The revisions to write, in order, each with `supersedes` as the uuid of
/// a revision written before it.
#[derive(Debug, Default)]
pub(crate) struct MergedDocuments {
    pub order: Vec<(DocumentRevision, Option<String>)>,
    /// Revisions met again in a later input (same uuid) and written once.
    pub held_twice: usize,
    pub forks: Vec<DocumentFork>,
}

/// Merges the revisions of all inputs (`files` names them for errors).
/// Refused in words: a `supersedes` naming an id its file does not hold,
/// one uuid carrying two different revisions, and a cycle of supersedes.
pub(crate) fn merge(held: Vec<HeldRevision>, files: &[&str]) -> Result<MergedDocuments> {
    let by_id: HashMap<(usize, i64), &HeldRevision> =
        held.iter().map(|h| ((h.input, h.revision.id), h)).collect();
    // Each revision with what it supersedes as a uuid.
    let mut unique: Vec<(&HeldRevision, Option<String>)> = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut held_twice = 0;
    for h in &held {
        let supersedes = match h.revision.supersedes {
            None => None,
            Some(target) => match by_id.get(&(h.input, target)) {
                Some(t) => Some(t.revision.uuid.clone()),
                None => {
                    return Err(Error::Invalid {
                        file: files[h.input].to_string(),
                        message: format!(
                            "document revision {} ({}) supersedes revision {target}, which the \
                             file does not hold; a copy cannot carry it (verify reports it)",
                            h.revision.id, h.revision.uuid
                        ),
                    })
                }
            },
        };
        match seen.get(h.revision.uuid.as_str()) {
            Some(&at) => {
                let (first, first_supersedes) = &unique[at];
                let (a, b) = (&first.revision, &h.revision);
                let same = (&a.kind, &a.name, &a.schema, &a.body, a.created_wall_ns)
                    == (&b.kind, &b.name, &b.schema, &b.body, b.created_wall_ns);
                if !same || *first_supersedes != supersedes {
                    return Err(Error::Invalid {
                        file: files[h.input].to_string(),
                        message: format!(
                            "document revision {} has the uuid {} that revision {} of {} has, \
                             with other contents; refusing to choose between them",
                            h.revision.id, h.revision.uuid, first.revision.id, files[first.input]
                        ),
                    });
                }
                held_twice += 1;
            }
            None => {
                seen.insert(&h.revision.uuid, unique.len());
                unique.push((h, supersedes));
            }
        }
    }
    // Oldest first by wall clock, then by input and id; a revision whose
    // target is not written yet waits for it.
    unique.sort_by_key(|(h, _)| (h.revision.created_wall_ns, h.input, h.revision.id));
    let mut written: HashSet<String> = HashSet::new();
    let mut order = Vec::with_capacity(unique.len());
    let mut waiting = unique;
    while !waiting.is_empty() {
        let before = waiting.len();
        let mut still = Vec::new();
        for (h, supersedes) in waiting {
            if supersedes.as_ref().is_none_or(|t| written.contains(t)) {
                written.insert(h.revision.uuid.clone());
                order.push((h.revision.clone(), supersedes));
            } else {
                still.push((h, supersedes));
            }
        }
        if still.len() == before {
            let (h, _) = &still[0];
            return Err(Error::Invalid {
                file: files[h.input].to_string(),
                message: format!(
                    "document revision {} ({}) is in a cycle of supersedes; a copy cannot order it",
                    h.revision.id, h.revision.uuid
                ),
            });
        }
        waiting = still;
    }
    let mut successors: BTreeMap<&str, Vec<&DocumentRevision>> = BTreeMap::new();
    for (revision, supersedes) in &order {
        if let Some(target) = supersedes {
            successors.entry(target).or_default().push(revision);
        }
    }
    let forks = successors
        .into_iter()
        .filter(|(_, next)| next.len() > 1)
        .map(|(target, next)| DocumentFork {
            kind: next[0].kind.clone(),
            name: next[0].name.clone(),
            superseded: target.to_string(),
            revisions: next.iter().map(|r| r.uuid.clone()).collect(),
        })
        .collect();
    Ok(MergedDocuments {
        order,
        held_twice,
        forks,
    })
}

/// Writes merged revisions, renumbering `supersedes` to the output's ids.
/// Answers how many were written.
pub(crate) fn write(
    merged: &MergedDocuments,
    tx: &crate::container::Transaction<'_>,
) -> Result<usize> {
    let mut ids: HashMap<&str, i64> = HashMap::new();
    for (revision, supersedes) in &merged.order {
        let mut row = revision.clone();
        row.supersedes = supersedes.as_deref().map(|u| ids[u]);
        let id = tx.insert_revision(&row)?;
        ids.insert(&revision.uuid, id);
    }
    Ok(merged.order.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(input: usize, id: i64, uuid: &str, at: i64, supersedes: Option<i64>) -> HeldRevision {
        HeldRevision {
            input,
            revision: DocumentRevision {
                id,
                uuid: uuid.into(),
                kind: "k".into(),
                name: "n".into(),
                schema: Some("s/1".into()),
                body: Some(format!("{at}")),
                created_wall_ns: at,
                supersedes,
            },
        }
    }

    fn uuids(m: &MergedDocuments) -> Vec<(&str, Option<&str>)> {
        m.order
            .iter()
            .map(|(r, s)| (r.uuid.as_str(), s.as_deref()))
            .collect()
    }

    #[test]
    fn shared_revisions_are_written_once_and_supersedes_follows_uuids_across_inputs() {
        // Both inputs hold a1 and a2; b only has b3 after them, under other ids.
        let held = vec![
            rev(0, 1, "a1", 10, None),
            rev(0, 2, "a2", 20, Some(1)),
            rev(1, 7, "a1", 10, None),
            rev(1, 8, "a2", 20, Some(7)),
            rev(1, 9, "b3", 30, Some(8)),
        ];
        let m = merge(held, &["x", "y"]).unwrap();
        assert_eq!(
            uuids(&m),
            vec![("a1", None), ("a2", Some("a1")), ("b3", Some("a2"))]
        );
        assert_eq!(m.held_twice, 2);
        assert!(m.forks.is_empty());
    }

    #[test]
    fn two_revisions_superseding_one_are_a_fork_kept_whole_newest_last() {
        let held = vec![
            rev(0, 1, "a1", 10, None),
            rev(0, 2, "x2", 40, Some(1)),
            rev(1, 1, "a1", 10, None),
            rev(1, 2, "y2", 30, Some(1)),
        ];
        let m = merge(held, &["x", "y"]).unwrap();
        assert_eq!(
            uuids(&m),
            vec![("a1", None), ("y2", Some("a1")), ("x2", Some("a1"))]
        );
        assert_eq!(
            m.forks,
            vec![DocumentFork {
                kind: "k".into(),
                name: "n".into(),
                superseded: "a1".into(),
                revisions: vec!["y2".into(), "x2".into()],
            }]
        );
    }

    #[test]
    fn a_revision_waits_for_the_one_it_supersedes_even_when_its_clock_is_earlier() {
        let held = vec![rev(0, 1, "a1", 50, None), rev(0, 2, "a2", 5, Some(1))];
        let m = merge(held, &["x"]).unwrap();
        assert_eq!(uuids(&m), vec![("a1", None), ("a2", Some("a1"))]);
    }

    #[test]
    fn dangling_supersedes_a_uuid_with_two_contents_and_cycles_are_refused_naming_the_file() {
        let err = merge(vec![rev(0, 2, "a2", 1, Some(1))], &["in.dendro"]).unwrap_err();
        assert!(err.to_string().contains("in.dendro") && err.to_string().contains("does not hold"));
        let mut other = rev(1, 1, "a1", 10, None);
        other.revision.body = Some("changed".into());
        let err = merge(vec![rev(0, 1, "a1", 10, None), other], &["x", "y.dendro"]).unwrap_err();
        assert!(err.to_string().contains("y.dendro") && err.to_string().contains("other contents"));
        let err = merge(
            vec![rev(0, 1, "a1", 1, Some(2)), rev(0, 2, "a2", 2, Some(1))],
            &["c.dendro"],
        )
        .unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
    }
}
