//! `CLIENT` and its subcommands, with Redis 7.0's replies and error texts: ID, SETNAME,
//! GETNAME, LIST [TYPE t | ID id...], INFO, KILL (the old `ip:port` form and the filters
//! ID, ADDR, LADDR, TYPE, USER, SKIPME, and Redis 7.4's MAXAGE), PAUSE and UNPAUSE, REPLY
//! ON|OFF|SKIP, NO-EVICT, SETINFO and HELP.
//!
//! A client is of type `pubsub` while it subscribes to a channel or a pattern, `normal`
//! otherwise (there are no replicas yet), as Redis types them; every client is
//! authenticated as the only user, `default`, so `USER default` matches them all. A killed client leaves the client list at once and its session closes the
//! connection, even while it waits for a request (`state::ClientInfo::kill`); a client that
//! kills itself gets its reply first, as in Redis. `NO-EVICT` is accepted and changes
//! nothing: the server never evicts clients.

use super::connection::{valid_name, NAME_ERROR};
use super::{is, parse_i64, printable, Call, Client, CmdError, Command, Ctx, Reply};
use crate::pause::PauseMode;
use crate::state::{ClientInfo, Server};
use std::time::{Duration, Instant};

/// The subcommands (counted as `client|name` by `INFO commandstats`).
pub(super) const SUBCOMMANDS: &[&str] = &[
    "id", "setname", "getname", "list", "info", "kill", "pause", "unpause", "reply", "no-evict",
    "setinfo", "help",
];

/// `CLIENT <subcommand> …`.
pub(super) enum ClientCmd<'a> {
    Id,
    SetName(&'a [u8]),
    GetName,
    /// `LIST`, `LIST TYPE t`, `LIST ID id…`.
    List(Listed),
    Info,
    Kill(Kill<'a>),
    Pause(PauseMode, Duration),
    Unpause,
    Reply(ReplyMode),
    NoEvict,
    SetInfo,
    Help,
}

/// What `CLIENT KILL` kills.
#[derive(Default)]
pub(super) struct Kill<'a> {
    /// The old form, `CLIENT KILL ip:port`: `OK`, or an error when no client matched.
    old_style: bool,
    id: Option<u64>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    /// `TYPE t`: the clients of that type only.
    client_type: Option<ClientType>,
    /// Clients connected for more than this many seconds (Redis 7.4's MAXAGE).
    max_age_secs: Option<u64>,
    /// Leave the calling client alone (the filters' default; not the old form's).
    skip_me: bool,
}

/// The clients `CLIENT LIST` lists.
pub(super) enum Listed {
    /// Every client.
    All,
    /// The clients of a type.
    Type(ClientType),
    /// The clients with these ids, in this order.
    Ids(Vec<u64>),
}

/// `CLIENT REPLY`'s argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReplyMode {
    On,
    Off,
    Skip,
}

/// Which of a connection's replies are sent (`CLIENT REPLY`): all (`ON`), none (`OFF`), or
/// all but the next command's (`SKIP`). `CLIENT REPLY OFF` and `SKIP` get no reply
/// themselves.
#[derive(Debug, Default)]
pub struct Replies {
    off: bool,
    skip_this: bool,
    skip_next: bool,
}

impl Replies {
    /// Whether the reply of the command that just ran is sent; moves a `SKIP` on to the
    /// next command.
    pub fn send_this(&mut self) -> bool {
        let send = !self.off && !self.skip_this;
        self.skip_this = std::mem::take(&mut self.skip_next);
        send
    }
}

/// Redis's error for an unknown subcommand.
fn unknown(sub: &[u8]) -> CmdError {
    CmdError::new(format!(
        "ERR unknown subcommand '{}'. Try CLIENT HELP.",
        printable(sub, 128)
    ))
}

/// A client type, as `CLIENT KILL TYPE` and `CLIENT LIST TYPE` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClientType {
    /// Not subscribed to anything.
    Normal,
    /// Subscribed to a channel or a pattern.
    PubSub,
    /// `master`, `replica`, `slave`: no client here is one.
    Replication,
}

impl ClientType {
    /// Whether `c` is of this type.
    fn matches(self, c: &ClientInfo) -> bool {
        match self {
            ClientType::Normal => !c.is_pubsub(),
            ClientType::PubSub => c.is_pubsub(),
            ClientType::Replication => false,
        }
    }
}

/// A client type's name, as `CLIENT KILL TYPE` and `CLIENT LIST TYPE` take it.
fn client_type(name: &[u8]) -> Result<ClientType, CmdError> {
    if is(name, "normal") {
        Ok(ClientType::Normal)
    } else if is(name, "pubsub") {
        Ok(ClientType::PubSub)
    } else if ["master", "replica", "slave"].iter().any(|t| is(name, t)) {
        Ok(ClientType::Replication)
    } else {
        Err(CmdError::new(format!(
            "ERR Unknown client type '{}'",
            printable(name, 128)
        )))
    }
}

impl<'a> ClientCmd<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let Some((sub, rest)) = args.split_first() else {
            return Err(CmdError::arity("client"));
        };
        let lower = String::from_utf8_lossy(sub).to_ascii_lowercase();
        let Some(name) = SUBCOMMANDS.iter().find(|s| **s == lower) else {
            return Err(unknown(sub));
        };
        // Redis 7.0's arities, counted without `CLIENT` and the subcommand.
        let arity_ok = match *name {
            "id" | "getname" | "info" | "unpause" | "help" => rest.is_empty(),
            "setname" | "reply" | "no-evict" => rest.len() == 1,
            "setinfo" => rest.len() == 2,
            "kill" | "pause" => !rest.is_empty(),
            _ => true, // list
        };
        if !arity_ok {
            return Err(CmdError::arity(&format!("client|{name}")));
        }
        let arg = |i: usize| rest.get(i).map_or(&[][..], Vec::as_slice);
        Ok(match *name {
            "id" => ClientCmd::Id,
            "setname" => {
                if !valid_name(arg(0)) {
                    return Err(CmdError::new(NAME_ERROR));
                }
                ClientCmd::SetName(arg(0))
            }
            "getname" => ClientCmd::GetName,
            "list" => parse_list(rest)?,
            "info" => ClientCmd::Info,
            "kill" => ClientCmd::Kill(Kill::parse(rest)?),
            "pause" => parse_pause(rest, sub)?,
            "unpause" => ClientCmd::Unpause,
            "reply" => ClientCmd::Reply(if is(arg(0), "on") {
                ReplyMode::On
            } else if is(arg(0), "off") {
                ReplyMode::Off
            } else if is(arg(0), "skip") {
                ReplyMode::Skip
            } else {
                return Err(CmdError::syntax());
            }),
            "no-evict" => {
                if !is(arg(0), "on") && !is(arg(0), "off") {
                    return Err(CmdError::syntax());
                }
                ClientCmd::NoEvict
            }
            "setinfo" => ClientCmd::SetInfo,
            _ => ClientCmd::Help,
        })
    }
}

/// `CLIENT LIST [TYPE type | ID id...]`.
fn parse_list(rest: &[Vec<u8>]) -> Result<ClientCmd<'_>, CmdError> {
    match rest {
        [] => Ok(ClientCmd::List(Listed::All)),
        [opt, t] if is(opt, "type") => Ok(ClientCmd::List(Listed::Type(client_type(t)?))),
        [opt, ids @ ..] if is(opt, "id") && !ids.is_empty() => {
            let ids = ids
                .iter()
                .map(|id| {
                    parse_i64(id)
                        .map_err(|_| CmdError::new("ERR Invalid client ID"))
                        .map(|id| u64::try_from(id).unwrap_or(0))
                })
                .collect::<Result<Vec<u64>, CmdError>>()?;
            Ok(ClientCmd::List(Listed::Ids(ids)))
        }
        _ => Err(CmdError::syntax()),
    }
}

/// `CLIENT PAUSE timeout [WRITE|ALL]`: the mode is checked before the timeout, as Redis
/// checks them.
fn parse_pause<'a>(rest: &'a [Vec<u8>], sub: &[u8]) -> Result<ClientCmd<'a>, CmdError> {
    let (timeout, mode) = match rest {
        [timeout] => (timeout, PauseMode::All),
        [timeout, mode] if is(mode, "write") => (timeout, PauseMode::Write),
        [timeout, mode] if is(mode, "all") => (timeout, PauseMode::All),
        [_, _] => return Err(CmdError::new("ERR CLIENT PAUSE mode must be WRITE or ALL")),
        _ => {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                printable(sub, 128)
            )))
        }
    };
    let ms = parse_i64(timeout)
        .map_err(|_| CmdError::new("ERR timeout is not an integer or out of range"))?;
    let ms = u64::try_from(ms).map_err(|_| CmdError::new("ERR timeout is negative"))?;
    Ok(ClientCmd::Pause(mode, Duration::from_millis(ms)))
}

impl<'a> Kill<'a> {
    /// The words after `KILL`: one (the old form) or option-value pairs.
    fn parse(rest: &'a [Vec<u8>]) -> Result<Kill<'a>, CmdError> {
        if let [addr] = rest {
            return Ok(Kill {
                old_style: true,
                addr: Some(addr),
                ..Kill::default()
            });
        }
        let mut kill = Kill {
            skip_me: true,
            ..Kill::default()
        };
        let mut pairs = rest.iter();
        while let Some(opt) = pairs.next() {
            let Some(value) = pairs.next() else {
                return Err(CmdError::syntax());
            };
            if is(opt, "id") {
                let id = parse_i64(value)
                    .ok()
                    .filter(|&id| id >= 1)
                    .ok_or_else(|| CmdError::new("ERR client-id should be greater than 0"))?;
                kill.id = Some(u64::try_from(id).unwrap_or(0));
            } else if is(opt, "type") {
                kill.client_type = Some(client_type(value)?);
            } else if is(opt, "addr") {
                kill.addr = Some(value);
            } else if is(opt, "laddr") {
                kill.laddr = Some(value);
            } else if is(opt, "user") {
                if value.as_slice() != b"default" {
                    return Err(CmdError::new(format!(
                        "ERR No such user '{}'",
                        printable(value, 128)
                    )));
                }
            } else if is(opt, "skipme") {
                kill.skip_me = if is(value, "yes") {
                    true
                } else if is(value, "no") {
                    false
                } else {
                    return Err(CmdError::syntax());
                };
            } else if is(opt, "maxage") {
                let secs = parse_i64(value)
                    .map_err(|_| CmdError::new("ERR maxage is not an integer or out of range"))?;
                kill.max_age_secs = Some(u64::try_from(secs).unwrap_or(0));
            } else {
                return Err(CmdError::syntax());
            }
        }
        Ok(kill)
    }

    /// Whether the filters pick `c` (the calling client's id is `me`).
    fn matches(&self, c: &ClientInfo, me: u64) -> bool {
        self.client_type.is_none_or(|t| t.matches(c))
            && self.id.is_none_or(|id| id == c.id)
            && self.addr.is_none_or(|a| a == c.addr.to_string().as_bytes())
            && self
                .laddr
                .is_none_or(|a| a == c.local_addr.to_string().as_bytes())
            && self
                .max_age_secs
                .is_none_or(|max| c.connected.elapsed().as_secs() > max)
            && !(self.skip_me && c.id == me)
    }
}

impl Command for ClientCmd<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let info = &ctx.client.info;
        Ok(match self {
            ClientCmd::Id => Reply::Int(i64::try_from(info.id).unwrap_or(i64::MAX)),
            ClientCmd::SetName(name) => {
                *info.name.lock() = name.to_vec();
                Reply::Ok
            }
            ClientCmd::GetName => {
                let name = info.name.lock().clone();
                Reply::bulk_or_null((!name.is_empty()).then_some(name))
            }
            ClientCmd::List(ids) => {
                let clients = ctx.server.clients.lock();
                let listed: Vec<_> = match ids {
                    Listed::All | Listed::Type(_) => {
                        let mut all: Vec<_> = clients
                            .values()
                            .filter(|c| match &ids {
                                Listed::Type(t) => t.matches(c),
                                _ => true,
                            })
                            .cloned()
                            .collect();
                        all.sort_by_key(|c| c.id);
                        all
                    }
                    Listed::Ids(ids) => ids
                        .iter()
                        .filter_map(|id| clients.get(id))
                        .cloned()
                        .collect(),
                };
                drop(clients);
                let text: String = listed.iter().map(|c| c.list_line()).collect();
                Reply::Verbatim(text.into_bytes())
            }
            ClientCmd::Info => Reply::Verbatim(info.list_line().into_bytes()),
            ClientCmd::Kill(kill) => return kill_clients(ctx, &kill),
            ClientCmd::Pause(mode, timeout) => {
                let until = Instant::now()
                    .checked_add(timeout)
                    .ok_or_else(|| CmdError::new("ERR timeout is out of range"))?;
                ctx.server.pause.pause(mode, until);
                Reply::Ok
            }
            ClientCmd::Unpause => {
                ctx.server.pause.unpause();
                Reply::Ok
            }
            ClientCmd::Reply(mode) => {
                let r = &mut ctx.client.replies;
                match mode {
                    ReplyMode::On => {
                        *r = Replies::default();
                        Reply::Ok
                    }
                    ReplyMode::Off => {
                        r.off = true;
                        Reply::Nothing
                    }
                    ReplyMode::Skip => {
                        r.skip_next = !r.off;
                        Reply::Nothing
                    }
                }
            }
            ClientCmd::NoEvict => Reply::Ok,
            // Client libraries announce their name and version; nothing to keep.
            ClientCmd::SetInfo => Reply::Ok,
            ClientCmd::Help => help(),
        })
    }
}

/// `CLIENT KILL`: kills the clients the filters pick (the caller last, after its reply).
fn kill_clients(ctx: &mut Ctx<'_>, kill: &Kill<'_>) -> Result<Reply, CmdError> {
    let me = ctx.client.info.id;
    let server: &Server = ctx.server;
    let others = server.kill_clients(|c| c.id != me && kill.matches(c, me));
    let mut killed = others.len();
    if kill.matches(&ctx.client.info, me) {
        server.clients.lock().remove(&me);
        ctx.client.close = true;
        killed += 1;
    }
    if kill.old_style {
        return if killed == 0 {
            Err(CmdError::new("ERR No such client"))
        } else {
            Ok(Reply::Ok)
        };
    }
    Ok(Reply::Int(i64::try_from(killed).unwrap_or(i64::MAX)))
}

/// `CLIENT HELP`: Redis's layout, the subcommands augur-server has.
fn help() -> Reply {
    const LINES: &[&str] = &[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "    * MAXAGE <maxage>",
        "      Kill connections older than the specified age.",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status(l)).collect())
}

/// When `CLIENT PAUSE` holds the command `words` of `client`: the pause's end, or `None`
/// when it may run now. A pause holds every command (`ALL`) or those that may write
/// (`WRITE`: write commands, queued ones included, and an `EXEC` whose transaction holds
/// one), as Redis 7.0 does; a command Redis refuses before it runs (unknown, wrong number
/// of arguments, not authenticated) is not held and gets its error at once.
///
/// Unlike Redis, a pause does not stop keys from expiring: expiry is judged by the clock
/// when a key is read (`augur::expiry`), not by a deletion a pause could hold back.
pub fn held_by_pause(server: &Server, client: &Client, words: &[Vec<u8>]) -> Option<Instant> {
    let (mode, until) = server.pause.current()?;
    let call = Call::check(words).ok()?;
    let spec = call.spec;
    if !client.authenticated && !spec.flags.noauth && server.settings.password_required() {
        return None;
    }
    let writes = spec.flags.write
        || (spec.name == "exec" && client.multi.as_ref().is_some_and(|t| t.writes()));
    (mode == PauseMode::All || writes).then_some(until)
}
