//! Pub/Sub's registry and delivery: which clients listen to which channels and patterns
//! ([`PubSub`]), and each client's [`Mailbox`] of messages not yet written to its socket.
//! The commands (SUBSCRIBE, PUBLISH, PUBSUB, …) are `commands/pubsub.rs`; a client's own
//! list of what it subscribed to is its `commands::pubsub::Subscriptions`, which keeps this
//! registry in step and empties it of the client when the connection ends.
//!
//! `PUBLISH` runs on the publisher's task: it encodes the message into each receiver's
//! mailbox in the receiver's protocol (RESP2 `*3 message ch msg`, RESP3 `>3 …`; `pmessage`
//! for a matching pattern) and wakes the receiver's session (`ClientInfo::wake`),
//! which writes its mailbox out whether it is idle or between batches (`session.rs`). So a
//! slow subscriber never holds up the publisher: its mailbox grows instead, bounded by the
//! `pubsub` class of `client-output-buffer-limit` (Redis's 32 MiB hard, 8 MiB for 60 s
//! soft): the bytes queued plus those its session is writing, at or above the hard limit
//! (or above the soft one for longer than its seconds), and the client is disconnected, as
//! Redis disconnects it.
//!
//! Delivery order as Redis 7.0's: the channel's subscribers first, then each pattern that
//! matches (a client subscribed both ways gets the message twice and counts twice in
//! `PUBLISH`'s reply). Messages from one publisher reach each subscriber in the order they
//! were published; a subscriber's messages come after the reply of the `SUBSCRIBE` that
//! registered it, since a session writes its replies before its mailbox.
//!
//! Locks: the channel map and the pattern list each have their own lock; a publisher holds
//! one for reading while it locks each receiver's mailbox in turn (channel map or pattern
//! list, then a mailbox; nothing is taken under a mailbox's lock).

use crate::glob;
use crate::settings::OutputLimit;
use crate::state::ClientInfo;
use bytes::BytesMut;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The subscribers of one channel or pattern, in the order they subscribed.
type Subscribers = Vec<Arc<ClientInfo>>;

/// The server's channels and patterns and who listens to each. A channel or pattern is
/// here only while some client subscribes to it.
#[derive(Default)]
pub struct PubSub {
    /// Channels with at least one subscriber.
    channels: RwLock<HashMap<Vec<u8>, Subscribers>>,
    /// Patterns with at least one subscriber, in the order they were first subscribed to.
    patterns: RwLock<Vec<(Vec<u8>, Subscribers)>>,
}

impl PubSub {
    /// Adds `client` to `channel`'s subscribers. REQUIRES: it is not one already (the
    /// client's `Subscriptions` knows).
    pub fn subscribe(&self, channel: &[u8], client: &Arc<ClientInfo>) {
        self.channels
            .write()
            .entry(channel.to_vec())
            .or_default()
            .push(client.clone());
    }

    /// Removes client `id` from `channel`'s subscribers (the channel goes with its last).
    pub fn unsubscribe(&self, channel: &[u8], id: u64) {
        let mut channels = self.channels.write();
        if let Some(subs) = channels.get_mut(channel) {
            subs.retain(|c| c.id != id);
            if subs.is_empty() {
                channels.remove(channel);
            }
        }
    }

    /// Adds `client` to `pattern`'s subscribers. REQUIRES: it is not one already.
    pub fn psubscribe(&self, pattern: &[u8], client: &Arc<ClientInfo>) {
        let mut patterns = self.patterns.write();
        match patterns.iter_mut().find(|(p, _)| p == pattern) {
            Some((_, subs)) => subs.push(client.clone()),
            None => patterns.push((pattern.to_vec(), vec![client.clone()])),
        }
    }

    /// Removes client `id` from `pattern`'s subscribers (the pattern goes with its last).
    pub fn punsubscribe(&self, pattern: &[u8], id: u64) {
        let mut patterns = self.patterns.write();
        if let Some(i) = patterns.iter().position(|(p, _)| p == pattern) {
            if let Some((_, subs)) = patterns.get_mut(i) {
                subs.retain(|c| c.id != id);
                if subs.is_empty() {
                    patterns.remove(i);
                }
            }
        }
    }

    /// Removes client `id` from every channel and pattern (`CLIENT KILL`: a killed client
    /// receives nor counts for anything more, as in Redis, even before its session ends).
    /// Walks the whole registry.
    pub fn remove_client(&self, id: u64) {
        self.channels.write().retain(|_, subs| {
            subs.retain(|c| c.id != id);
            !subs.is_empty()
        });
        self.patterns.write().retain_mut(|(_, subs)| {
            subs.retain(|c| c.id != id);
            !subs.is_empty()
        });
    }

    /// Delivers `message` on `channel` to its subscribers and to those of every matching
    /// pattern; returns how many deliveries were made (Redis's receivers count). A
    /// receiver whose pending output reaches `limit` is disconnected instead.
    pub fn publish(&self, channel: &[u8], message: &[u8], limit: OutputLimit) -> usize {
        let mut receivers = 0;
        {
            let channels = self.channels.read();
            if let Some(subs) = channels.get(channel) {
                let words: [&[u8]; 3] = [b"message", channel, message];
                for client in subs {
                    client.mailbox.deliver(client, &words, limit);
                }
                receivers += subs.len();
            }
        }
        let patterns = self.patterns.read();
        for (pattern, subs) in patterns.iter() {
            if !glob::matches(pattern, channel) {
                continue;
            }
            let words: [&[u8]; 4] = [b"pmessage", pattern, channel, message];
            for client in subs {
                client.mailbox.deliver(client, &words, limit);
            }
            receivers += subs.len();
        }
        receivers
    }

    /// The channels with subscribers, those matching `pattern` when given (`PUBSUB
    /// CHANNELS`), in no particular order.
    pub fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.channels
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c)))
            .cloned()
            .collect()
    }

    /// How many clients subscribe to `channel` (patterns not counted: `PUBSUB NUMSUB`).
    pub fn numsub(&self, channel: &[u8]) -> usize {
        self.channels.read().get(channel).map_or(0, Vec::len)
    }

    /// Channels with at least one subscriber (`INFO`'s `pubsub_channels`).
    pub fn channel_count(&self) -> usize {
        self.channels.read().len()
    }

    /// Patterns with at least one subscriber (`PUBSUB NUMPAT`, `INFO`'s `pubsub_patterns`).
    pub fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }
}

/// Decimal digits of `n`.
fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The length of the frame of `words` (`*n` or `>n`, then a bulk string per word).
fn frame_len(words: &[&[u8]]) -> usize {
    let header = 3 + digits(words.len());
    let bulks: usize = words.iter().map(|w| 5 + digits(w.len()) + w.len()).sum();
    header + bulks
}

/// A client's messages not yet written to its socket. Empty (and holding no buffer) for a
/// client that subscribes to nothing.
#[derive(Default)]
pub struct Mailbox {
    queued: Mutex<Queued>,
    /// Bytes in `queued` (read without its lock: [`Mailbox::is_empty`]).
    queued_bytes: AtomicUsize,
    /// Bytes the session is writing to the socket now, which count against the limit too.
    writing_bytes: AtomicUsize,
}

#[derive(Default)]
struct Queued {
    buf: BytesMut,
    /// Since when the pending output has been at or above the soft limit.
    over_soft_since: Option<Instant>,
}

impl Mailbox {
    /// Appends the frame of `words` (in the client's protocol: a RESP3 push, a RESP2 array)
    /// and wakes the session, unless messages already waited (the wake-up that came with the
    /// first of them is still to be taken, or the session looks at its mailbox before it
    /// next waits: `session.rs`). Disconnects the client instead when its pending output
    /// would reach `limit` (see the module doc). A killed client gets nothing more. The
    /// frame is encoded straight into the mailbox: nothing is allocated per message beyond
    /// the mailbox's growth.
    fn deliver(&self, client: &ClientInfo, words: &[&[u8]], limit: OutputLimit) {
        if client.is_killed() {
            return;
        }
        let frame_len = frame_len(words);
        let mut q = self.queued.lock();
        let was_empty = q.buf.is_empty();
        let pending = (q.buf.len() + frame_len + self.writing_bytes.load(Ordering::Relaxed)) as u64;
        let hard = limit.hard_bytes > 0 && pending >= limit.hard_bytes;
        let soft = if limit.soft_bytes > 0 && pending >= limit.soft_bytes {
            let since = *q.over_soft_since.get_or_insert_with(Instant::now);
            since.elapsed().as_secs() > limit.soft_secs
        } else {
            q.over_soft_since = None;
            false
        };
        if hard || soft {
            q.buf = BytesMut::new();
            self.queued_bytes.store(0, Ordering::Release);
            drop(q);
            log::warn!(
                "client id={} addr={} closed for overcoming of output buffer limits \
                 ({pending} bytes pending; client-output-buffer-limit pubsub {} {} {})",
                client.id,
                client.addr,
                limit.hard_bytes,
                limit.soft_bytes,
                limit.soft_secs
            );
            client.kill();
            return;
        }
        q.buf.reserve(frame_len);
        if client.resp.load(Ordering::Relaxed) == 3 {
            crate::resp::put_push_header(&mut q.buf, words.len());
        } else {
            crate::resp::put_array_header(&mut q.buf, words.len());
        }
        for w in words {
            crate::resp::put_bulk(&mut q.buf, w);
        }
        self.queued_bytes.store(q.buf.len(), Ordering::Release);
        drop(q);
        if was_empty {
            client.wake();
        }
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.queued_bytes.load(Ordering::Acquire) == 0
    }

    /// Moves the waiting messages to the end of `out` (the session's reply buffer).
    pub fn drain_into(&self, out: &mut BytesMut) {
        if self.is_empty() {
            return;
        }
        let mut q = self.queued.lock();
        if out.is_empty() {
            std::mem::swap(out, &mut q.buf);
        } else {
            out.extend_from_slice(&q.buf);
            q.buf = BytesMut::new();
        }
        self.queued_bytes.store(0, Ordering::Release);
    }

    /// Records how many bytes the session is writing now (0 once written).
    pub fn set_writing(&self, bytes: usize) {
        self.writing_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Bytes queued and being written (`CLIENT LIST`'s `omem`).
    pub fn pending_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::Relaxed) + self.writing_bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_len_is_the_encoded_length() {
        let long = vec![b'x'; 12_345];
        let cases: [&[&[u8]]; 4] = [
            &[b"message", b"ch", b""],
            &[b"pmessage", b"c*", b"chan", &long],
            &[b"", b"", b"", b"", b"", b"", b"", b"", b"", b"", b""],
            &[],
        ];
        for words in cases {
            let mut out = BytesMut::new();
            crate::resp::put_push_header(&mut out, words.len());
            for w in words {
                crate::resp::put_bulk(&mut out, w);
            }
            assert_eq!(frame_len(words), out.len(), "{words:?}");
        }
    }
}
