//! Pub/Sub's commands with Redis 7.0's replies and error texts: SUBSCRIBE, UNSUBSCRIBE,
//! PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB CHANNELS / NUMSUB / NUMPAT /
//! SHARDCHANNELS / SHARDNUMSUB / HELP (sharded Pub/Sub has no channels here: a single
//! server is not a cluster). The registry and delivery are `pubsub.rs`.
//!
//! A client's subscriptions are its [`Subscriptions`]: the channels and patterns in the
//! order it subscribed (UNSUBSCRIBE without arguments confirms them in that order; Redis
//! walks a hash table for channels, so its order differs), registered in the server's
//! registry while they live and unregistered when the connection ends. Each
//! (un)subscription is confirmed with its own frame, `[kind, name, count]` (a RESP3 push, a
//! RESP2 array) where `count` is the client's channels and patterns together; an
//! UNSUBSCRIBE of everything by a client subscribed to nothing answers one frame with a
//! null name and 0.
//!
//! A RESP2 client subscribed to anything may only run (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING,
//! QUIT and RESET ([`refusal_in_subscribed_mode`]); its PING answers `[pong, message]`. A
//! RESP3 client runs anything, messages arriving as pushes between its replies.

use super::{accounting, is, printable, subcommands, CmdError, Command, Ctx, Reply, Spec};
use crate::settings::ClientClass;
use crate::state::{ClientInfo, Server};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The subcommands of PUBSUB (counted as `pubsub|name` by `INFO commandstats`).
pub(super) const SUBCOMMANDS: &[&str] = &[
    "channels",
    "numsub",
    "numpat",
    "shardchannels",
    "shardnumsub",
    "help",
];

/// The commands a RESP2 client in subscribed mode may run.
const ALLOWED_IN_SUBSCRIBED_MODE: [&str; 7] = [
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// Why a RESP2 client in subscribed mode may not run `spec` (with `args`), in Redis's
/// words; `None` when it may (or the client is not subscribed).
pub(super) fn refusal_in_subscribed_mode(
    ctx: &Ctx<'_>,
    spec: &'static Spec,
    args: &[Vec<u8>],
) -> Option<CmdError> {
    let client = &*ctx.client;
    if client.protocol != super::Protocol::Resp2
        || !client.is_subscribed()
        || ALLOWED_IN_SUBSCRIBED_MODE.contains(&spec.name)
    {
        return None;
    }
    // A container's known subcommand is named `container|sub`, as Redis names it; an
    // unknown one is left to the command, which refuses it as unknown.
    let subs = subcommands(spec.name);
    let name = if subs.is_empty() {
        spec.name.to_string()
    } else {
        let sub = args.first()?;
        let sub = subs
            .iter()
            .find(|s| sub.eq_ignore_ascii_case(s.as_bytes()))?;
        format!("{}|{sub}", spec.name)
    };
    accounting::rejected(ctx.server, spec, args);
    Some(CmdError::new(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context"
    )))
}

/// A connection's channels and patterns, each with the order it was subscribed in;
/// registered in the server's registry while they live (dropping this unregisters them
/// all: the connection's end, or RESET).
pub struct Subscriptions {
    server: Arc<Server>,
    info: Arc<ClientInfo>,
    channels: HashMap<Vec<u8>, u64>,
    patterns: HashMap<Vec<u8>, u64>,
    /// The order number of the next subscription.
    next: u64,
}

impl Subscriptions {
    fn new(server: Arc<Server>, info: Arc<ClientInfo>) -> Subscriptions {
        Subscriptions {
            server,
            info,
            channels: HashMap::new(),
            patterns: HashMap::new(),
            next: 0,
        }
    }

    /// Channels and patterns together (the count in each confirmation).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Subscribes to `name` (a pattern with `pattern`); `false` when it already was.
    fn add(&mut self, name: &[u8], pattern: bool) -> bool {
        let set = if pattern {
            &mut self.patterns
        } else {
            &mut self.channels
        };
        if set.contains_key(name) {
            return false;
        }
        set.insert(name.to_vec(), self.next);
        self.next += 1;
        let registry = &self.server.pubsub;
        if pattern {
            registry.psubscribe(name, &self.info);
        } else {
            registry.subscribe(name, &self.info);
        }
        self.publish_counts();
        true
    }

    /// Unsubscribes from `name` (a pattern with `pattern`); `false` when it was not
    /// subscribed.
    fn remove(&mut self, name: &[u8], pattern: bool) -> bool {
        let set = if pattern {
            &mut self.patterns
        } else {
            &mut self.channels
        };
        if set.remove(name).is_none() {
            return false;
        }
        let registry = &self.server.pubsub;
        if pattern {
            registry.punsubscribe(name, self.info.id);
        } else {
            registry.unsubscribe(name, self.info.id);
        }
        self.publish_counts();
        true
    }

    /// The channels (or patterns) in the order they were subscribed.
    fn in_order(&self, pattern: bool) -> Vec<Vec<u8>> {
        let set = if pattern {
            &self.patterns
        } else {
            &self.channels
        };
        let mut names: Vec<(&Vec<u8>, u64)> = set.iter().map(|(n, &i)| (n, i)).collect();
        names.sort_unstable_by_key(|&(_, i)| i);
        names.into_iter().map(|(n, _)| n.clone()).collect()
    }

    /// Shows the counts in `CLIENT LIST` (`sub`, `psub`, `flags=P`).
    fn publish_counts(&self) {
        let info = &self.info;
        info.sub_channels
            .store(self.channels.len(), Ordering::Relaxed);
        info.sub_patterns
            .store(self.patterns.len(), Ordering::Relaxed);
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        let registry = &self.server.pubsub;
        for channel in self.channels.keys() {
            registry.unsubscribe(channel, self.info.id);
        }
        for pattern in self.patterns.keys() {
            registry.punsubscribe(pattern, self.info.id);
        }
        self.channels.clear();
        self.patterns.clear();
        self.publish_counts();
    }
}

/// One confirmation frame: `[kind, name, count]` (a null name for an UNSUBSCRIBE of
/// nothing).
fn confirmation(kind: &'static str, name: Option<Vec<u8>>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk(kind),
        Reply::bulk_or_null(name),
        Reply::Int(i64::try_from(count).unwrap_or(i64::MAX)),
    ])
}

/// `SUBSCRIBE channel...` and `PSUBSCRIBE pattern...`.
pub(super) struct Subscribe<'a> {
    names: &'a [Vec<u8>],
    pattern: bool,
}

impl<'a> Subscribe<'a> {
    pub(super) fn channels(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Subscribe {
            names: args,
            pattern: false,
        })
    }

    pub(super) fn patterns(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Subscribe {
            names: args,
            pattern: true,
        })
    }
}

impl Command for Subscribe<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let server = Arc::clone(ctx.server);
        let info = Arc::clone(&ctx.client.info);
        let subs = ctx
            .client
            .subscriptions
            .get_or_insert_with(|| Subscriptions::new(server, info));
        let kind = if self.pattern {
            "psubscribe"
        } else {
            "subscribe"
        };
        let frames = self
            .names
            .iter()
            .map(|name| {
                subs.add(name, self.pattern);
                confirmation(kind, Some(name.clone()), subs.count())
            })
            .collect();
        Ok(Reply::Frames(frames))
    }
}

/// `UNSUBSCRIBE [channel...]` and `PUNSUBSCRIBE [pattern...]`: without arguments, every
/// channel (pattern) the client subscribes to.
pub(super) struct Unsubscribe<'a> {
    names: &'a [Vec<u8>],
    pattern: bool,
}

impl<'a> Unsubscribe<'a> {
    pub(super) fn channels(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Unsubscribe {
            names: args,
            pattern: false,
        })
    }

    pub(super) fn patterns(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Unsubscribe {
            names: args,
            pattern: true,
        })
    }
}

impl Command for Unsubscribe<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let kind = if self.pattern {
            "punsubscribe"
        } else {
            "unsubscribe"
        };
        Ok(Reply::Frames(unsubscribe(
            ctx,
            self.names,
            self.pattern,
            kind,
        )))
    }
}

/// Unsubscribes from `names` (every channel or pattern when empty) and returns the
/// confirmations.
fn unsubscribe(
    ctx: &mut Ctx<'_>,
    names: &[Vec<u8>],
    pattern: bool,
    kind: &'static str,
) -> Vec<Reply> {
    let Some(subs) = ctx.client.subscriptions.as_mut() else {
        return if names.is_empty() {
            vec![confirmation(kind, None, 0)]
        } else {
            names
                .iter()
                .map(|n| confirmation(kind, Some(n.clone()), 0))
                .collect()
        };
    };
    let all;
    let names = if names.is_empty() {
        all = subs.in_order(pattern);
        if all.is_empty() {
            return vec![confirmation(kind, None, subs.count())];
        }
        &all[..]
    } else {
        names
    };
    names
        .iter()
        .map(|name| {
            subs.remove(name, pattern);
            confirmation(kind, Some(name.clone()), subs.count())
        })
        .collect()
}

/// Drops every subscription of the connection, without confirmations (RESET).
pub(super) fn unsubscribe_all(ctx: &mut Ctx<'_>) {
    ctx.client.subscriptions = None;
}

/// `PUBLISH channel message`: the number of deliveries.
pub(super) struct Publish<'a> {
    channel: &'a [u8],
    message: &'a [u8],
}

impl<'a> Publish<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        match args {
            [channel, message] => Ok(Publish { channel, message }),
            _ => Err(CmdError::arity("publish")),
        }
    }
}

impl Command for Publish<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let server: &Server = ctx.server;
        let limit = server.settings.output_limit(ClientClass::PubSub);
        let receivers = server.pubsub.publish(self.channel, self.message, limit);
        Ok(Reply::Int(i64::try_from(receivers).unwrap_or(i64::MAX)))
    }
}

/// `PUBSUB <subcommand> …`.
pub(super) enum PubsubCmd<'a> {
    Channels(Option<&'a [u8]>),
    NumSub(&'a [Vec<u8>]),
    NumPat,
    ShardChannels,
    ShardNumSub(&'a [Vec<u8>]),
    Help,
}

impl<'a> PubsubCmd<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, rest)) = args.split_first() else {
            return Err(CmdError::arity("pubsub"));
        };
        let lower = String::from_utf8_lossy(sub).to_ascii_lowercase();
        // Redis 7.0: NUMPAT and HELP take nothing (an arity error); CHANNELS and
        // SHARDCHANNELS at most a pattern (the command's own error beyond).
        let syntax = || {
            CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                printable(sub, 128)
            ))
        };
        Ok(match lower.as_str() {
            "channels" | "shardchannels" if rest.len() > 1 => return Err(syntax()),
            "channels" => PubsubCmd::Channels(rest.first().map(Vec::as_slice)),
            "shardchannels" => PubsubCmd::ShardChannels,
            "numsub" => PubsubCmd::NumSub(rest),
            "shardnumsub" => PubsubCmd::ShardNumSub(rest),
            "numpat" | "help" if !rest.is_empty() => {
                return Err(CmdError::arity(&format!("pubsub|{lower}")))
            }
            "numpat" => PubsubCmd::NumPat,
            "help" => PubsubCmd::Help,
            _ => {
                return Err(CmdError::new(format!(
                    "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
                    printable(sub, 128)
                )))
            }
        })
    }
}

impl Command for PubsubCmd<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let registry = &ctx.server.pubsub;
        let int = |n: usize| Reply::Int(i64::try_from(n).unwrap_or(i64::MAX));
        Ok(match self {
            PubsubCmd::Channels(pattern) => Reply::bulk_array(registry.channels(pattern)),
            PubsubCmd::NumSub(channels) => Reply::Array(
                channels
                    .iter()
                    .flat_map(|c| [Reply::bulk(c.clone()), int(registry.numsub(c))])
                    .collect(),
            ),
            PubsubCmd::NumPat => int(registry.pattern_count()),
            PubsubCmd::ShardChannels => Reply::Array(Vec::new()),
            PubsubCmd::ShardNumSub(channels) => Reply::Array(
                channels
                    .iter()
                    .flat_map(|c| [Reply::bulk(c.clone()), Reply::Int(0)])
                    .collect(),
            ),
            PubsubCmd::Help => help(),
        })
    }
}

/// Whether `name` (a command's first word) is PUBLISH: its own messages to the client
/// that runs it go out before its reply, as Redis sends them.
pub(super) fn is_publish(name: &[u8]) -> bool {
    is(name, "publish")
}

/// `PUBSUB HELP`: Redis 7.0's text.
fn help() -> Reply {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status(l)).collect())
}
