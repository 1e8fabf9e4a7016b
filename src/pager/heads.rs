//! Read-ahead for a lazy file: a few "read heads", each following one
//! sequential walk through the file (a segment's overflow pages, a table's
//! leaves). A miss where a head expected the next read continues its walk
//! and doubles what it fetches, up to a ceiling; any other miss starts a
//! new head (replacing the one used longest ago) at the smallest read.
//! Reading a segment of a megabytes then costs a handful of requests, and
//! a lookup in a B-tree costs a page.

/// One walk through the file, in blocks.
#[derive(Debug, Clone, Copy)]
struct Head {
    /// The block a continued walk would miss on next.
    next: u64,
    /// How many blocks its last fetch took.
    span: u64,
    used: u64,
}

/// The heads of one file.
pub(crate) struct ReadHeads {
    heads: Vec<Head>,
    capacity: usize,
    min_span: u64,
    max_span: u64,
    tick: u64,
}

impl ReadHeads {
    /// At most `capacity` heads, fetching `min_span` to `max_span` blocks.
    pub(crate) fn new(capacity: usize, min_span: u64, max_span: u64) -> ReadHeads {
        let min_span = min_span.max(1);
        ReadHeads {
            heads: Vec::new(),
            capacity: capacity.max(1),
            min_span,
            max_span: max_span.max(min_span),
            tick: 0,
        }
    }

    /// How many blocks to fetch from `block` on, which was missed. The
    /// caller may fetch fewer (the file's end, a block already held); the
    /// head still counts the walk as continued.
    #[cfg(test)]
    pub(crate) fn plan(&mut self, block: u64) -> u64 {
        self.plan_at_least(block, 0)
    }

    /// As `plan` (the walk's length unknown: `blocks` 0), but a walk that starts here fetches at least
    /// `blocks` (up to the ceiling): the caller knows how far it goes.
    pub(crate) fn plan_at_least(&mut self, block: u64, blocks: u64) -> u64 {
        self.tick += 1;
        let tick = self.tick;
        // A continued walk: the miss falls where a head's last fetch ended,
        // or a little past it (a walk may skip a page it had no use for).
        if let Some(head) = self
            .heads
            .iter_mut()
            .find(|h| block >= h.next && block - h.next < h.span.max(self.min_span))
        {
            head.span = (head.span * 2).min(self.max_span);
            head.next = block + head.span;
            head.used = tick;
            return head.span;
        }
        let span = blocks.clamp(self.min_span, self.max_span);
        let head = Head {
            next: block + span,
            span,
            used: tick,
        };
        if self.heads.len() < self.capacity {
            self.heads.push(head);
        } else if let Some(oldest) = self.heads.iter_mut().min_by_key(|h| h.used) {
            *oldest = head;
        }
        span
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequential_walk_doubles_its_reads_up_to_the_ceiling() {
        let mut heads = ReadHeads::new(3, 1, 8);
        let mut at = 100;
        let mut spans = Vec::new();
        for _ in 0..6 {
            let span = heads.plan(at);
            spans.push(span);
            at += span;
        }
        assert_eq!(spans, [1, 2, 4, 8, 8, 8]);
    }

    #[test]
    fn a_walk_of_known_length_starts_at_that_length_and_goes_on_doubling() {
        let mut heads = ReadHeads::new(3, 1, 64);
        assert_eq!(heads.plan_at_least(100, 20), 20);
        assert_eq!(heads.plan(120), 40, "the walk continues from its span");
        assert_eq!(heads.plan_at_least(5000, 1000), 64, "capped at the ceiling");
        assert_eq!(heads.plan_at_least(9000, 0), 1);
    }

    #[test]
    fn a_random_miss_reads_the_smallest_span() {
        let mut heads = ReadHeads::new(3, 1, 8);
        assert_eq!(heads.plan(10), 1);
        assert_eq!(heads.plan(500), 1);
        assert_eq!(heads.plan(77), 1);
    }

    #[test]
    fn walks_interleaved_keep_their_own_heads() {
        let mut heads = ReadHeads::new(2, 1, 64);
        let (mut a, mut b) = (0u64, 1_000_000u64);
        let mut last = (0, 0);
        for _ in 0..5 {
            let sa = heads.plan(a);
            a += sa;
            let sb = heads.plan(b);
            b += sb;
            last = (sa, sb);
        }
        assert_eq!(last, (16, 16), "both walks doubled although they alternate");
    }

    #[test]
    fn a_third_walk_replaces_the_head_used_longest_ago() {
        let mut heads = ReadHeads::new(2, 1, 64);
        heads.plan(0); // head A, next 1
        heads.plan(1000); // head B, next 1001
        heads.plan(1); // A continues (span 2), so B is the older
        heads.plan(5000); // replaces B
        assert_eq!(heads.plan(3), 4, "A's walk goes on");
        assert_eq!(heads.plan(1001), 1, "B's walk was forgotten");
    }
}
