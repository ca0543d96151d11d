//! Connection commands: PING, ECHO, QUIT, RESET, HELLO, AUTH and SELECT (CLIENT is
//! `client.rs`).

use super::{is, printable, CmdError, Command, Ctx, Protocol, Reply};

/// `PING [message]`.
pub(super) struct Ping<'a> {
    message: Option<&'a [u8]>,
}

impl<'a> Ping<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        match args {
            [] => Ok(Ping { message: None }),
            [m] => Ok(Ping { message: Some(m) }),
            _ => Err(CmdError::arity("ping")),
        }
    }
}

impl Command for Ping<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        // A subscribed RESP2 client gets `[pong, message]` (Redis's reply in that mode).
        if ctx.client.protocol == Protocol::Resp2 && ctx.client.is_subscribed() {
            return Ok(Reply::Array(vec![
                Reply::bulk("pong"),
                Reply::bulk(self.message.unwrap_or_default()),
            ]));
        }
        Ok(self.message.map_or(Reply::Status("PONG"), Reply::bulk))
    }
}

/// `ECHO message`.
pub(super) struct Echo<'a> {
    message: &'a [u8],
}

impl<'a> Echo<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Echo {
            message: args.first().map_or(&[], Vec::as_slice),
        })
    }
}

impl Command for Echo<'_> {
    fn execute(self, _ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        Ok(Reply::bulk(self.message))
    }
}

/// `QUIT`: `+OK`, then the connection closes.
#[derive(Default)]
pub(super) struct Quit;

impl Command for Quit {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        ctx.client.close = true;
        Ok(Reply::Ok)
    }
}

/// `RESET`: the connection as a new one, as Redis 7.0's: the transaction and the watched
/// keys dropped, every subscription ended (without confirmations), `CLIENT REPLY ON`,
/// RESP2, no name, and not authenticated when a password is required. Answers `+RESET`.
#[derive(Default)]
pub(super) struct Reset;

impl Command for Reset {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        ctx.client.multi = None;
        ctx.client.watching = None;
        super::pubsub::unsubscribe_all(ctx);
        ctx.client.replies = super::Replies::default();
        ctx.client.set_protocol(Protocol::Resp2);
        ctx.client.info.name.lock().clear();
        ctx.client.authenticated = !ctx.server.settings.password_required();
        Ok(Reply::Status("RESET"))
    }
}

/// Checks `password` for `user`, authenticating the client, as Redis 7.0 checks its only
/// user, `default`: with `--requirepass` its password is that one; without, the user has
/// no password and any password is accepted, but `AUTH <password>` alone is refused (Redis
/// tells the caller it configured no password). `user` is `None` for that one-word form.
fn authenticate(ctx: &mut Ctx<'_>, user: Option<&[u8]>, password: &[u8]) -> Result<(), CmdError> {
    let password_now = ctx.server.settings.password();
    let accepted = match (password_now.as_deref(), user) {
        (None, None) => {
            return Err(CmdError::new(
                "ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?",
            ))
        }
        (None, Some(user)) => user == b"default",
        (Some(p), user) => user.is_none_or(|u| u == b"default") && p.as_bytes() == password,
    };
    if !accepted {
        return Err(CmdError::new(
            "WRONGPASS invalid username-password pair or user is disabled.",
        ));
    }
    ctx.client.authenticated = true;
    Ok(())
}

/// `AUTH [username] password`.
pub(super) struct Auth<'a> {
    user: Option<&'a [u8]>,
    password: &'a [u8],
}

impl<'a> Auth<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        match args {
            [password] => Ok(Auth {
                user: None,
                password,
            }),
            [user, password] => Ok(Auth {
                user: Some(user),
                password,
            }),
            _ => Err(CmdError::syntax()),
        }
    }
}

impl Command for Auth<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        authenticate(ctx, self.user, self.password)?;
        Ok(Reply::Ok)
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`, as Redis 7.0.15 answers it:
/// `protover` 2 or 3 switches the connection to RESP2 or RESP3 (another integer is
/// `NOPROTO`), and the reply is a map of the server's properties (a flat array in RESP2)
/// in the protocol chosen. The options take effect in order: an AUTH authenticates (as
/// `AUTH username password`) and a SETNAME names the connection when reached, and the
/// first one that fails (or is not an option) ends the command with its error, the
/// protocol unchanged; a client still not authenticated then gets `NOAUTH`.
pub(super) struct Hello<'a> {
    /// The protocol asked for (`None`: keep the current one).
    protocol: Option<Protocol>,
    /// The options in order; parsing stops at the first word that is not one.
    options: Vec<HelloOption<'a>>,
}

/// One option of `HELLO`.
enum HelloOption<'a> {
    Auth(&'a [u8], &'a [u8]),
    SetName(&'a [u8]),
    /// Not an option (or one without its arguments): a syntax error when reached.
    Unknown(&'a [u8]),
}

impl<'a> Hello<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let mut options = Vec::new();
        let Some((version, mut rest)) = args.split_first() else {
            return Ok(Hello {
                protocol: None,
                options,
            });
        };
        let protocol = match super::parse_i64(version) {
            Ok(2) => Protocol::Resp2,
            Ok(3) => Protocol::Resp3,
            Ok(_) => return Err(CmdError::new("NOPROTO unsupported protocol version")),
            Err(_) => {
                return Err(CmdError::new(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
        };
        loop {
            rest = match rest {
                [] => break,
                [opt, user, password, tail @ ..] if is(opt, "auth") => {
                    options.push(HelloOption::Auth(user, password));
                    tail
                }
                [opt, name, tail @ ..] if is(opt, "setname") => {
                    options.push(HelloOption::SetName(name));
                    tail
                }
                [opt, ..] => {
                    options.push(HelloOption::Unknown(opt));
                    break;
                }
            };
        }
        Ok(Hello {
            protocol: Some(protocol),
            options,
        })
    }
}

impl Command for Hello<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        for option in self.options {
            match option {
                HelloOption::Auth(user, password) => authenticate(ctx, Some(user), password)?,
                HelloOption::SetName(name) if valid_name(name) => {
                    *ctx.client.info.name.lock() = name.to_vec();
                }
                HelloOption::SetName(_) => return Err(CmdError::new(NAME_ERROR)),
                HelloOption::Unknown(opt) => {
                    return Err(CmdError::new(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        printable(opt, 64)
                    )))
                }
            }
        }
        if !ctx.client.authenticated && ctx.server.settings.password_required() {
            return Err(CmdError::new(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise \
                 the HELLO AUTH <user> <pass> option can be used to authenticate the client \
                 and select the RESP protocol version at the same time",
            ));
        }
        if let Some(protocol) = self.protocol {
            ctx.client.set_protocol(protocol);
        }
        let id = i64::try_from(ctx.client.info.id).unwrap_or(i64::MAX);
        let field = |name: &str, value: Reply| (Reply::bulk(name), value);
        Ok(Reply::Map(vec![
            field("server", Reply::bulk("redis")),
            field("version", Reply::bulk(crate::REDIS_VERSION)),
            field("proto", Reply::Int(ctx.client.protocol.version())),
            field("id", Reply::Int(id)),
            field("mode", Reply::bulk("standalone")),
            field("role", Reply::bulk("master")),
            field("modules", Reply::Array(vec![])),
        ]))
    }
}

/// `SELECT index`: only database 0 exists.
pub(super) struct Select;

impl Select {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        match args
            .first()
            .and_then(|a| std::str::from_utf8(a).ok())
            .and_then(|s| s.parse::<i64>().ok())
        {
            Some(0) => Ok(Select),
            Some(_) => Err(CmdError::new("ERR DB index is out of range")),
            None => Err(CmdError::not_an_integer()),
        }
    }
}

impl Command for Select {
    fn execute(self, _ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        Ok(Reply::Ok)
    }
}

pub(super) const NAME_ERROR: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// A client name Redis accepts: printable ASCII without spaces.
pub(super) fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}
