//! Connection commands: PING, ECHO, QUIT, HELLO, AUTH, SELECT and CLIENT.

use super::{is, printable, Ctx};

/// `PING [message]`.
pub(super) fn ping(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    match a {
        [] => ctx.out.simple("PONG"),
        [m] => ctx.out.bulk(m),
        _ => ctx
            .out
            .error("ERR wrong number of arguments for 'ping' command"),
    }
}

/// `ECHO message`.
pub(super) fn echo(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    ctx.out.bulk(&a[0]);
}

/// `QUIT`: `+OK`, then the connection closes.
pub(super) fn quit(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    ctx.out.ok();
    ctx.client.close = true;
}

/// Checks `password` for `user` (only `default` exists), authenticating the client.
/// Writes the error reply and returns false when it fails.
fn authenticate(ctx: &mut Ctx<'_>, user: &[u8], password: &[u8]) -> bool {
    match &ctx.server.config.password {
        None => {
            ctx.out.error(
                "ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?",
            );
            false
        }
        Some(p) if user == b"default" && p.as_bytes() == password => {
            ctx.client.authenticated = true;
            true
        }
        Some(_) => {
            ctx.out
                .error("WRONGPASS invalid username-password pair or user is disabled.");
            false
        }
    }
}

/// `AUTH [username] password`.
pub(super) fn auth(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let ok = match a {
        [password] => authenticate(ctx, b"default", password),
        [user, password] => authenticate(ctx, user, password),
        _ => {
            ctx.out.error("ERR syntax error");
            return;
        }
    };
    if ok {
        ctx.out.ok();
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`: RESP2 only; `HELLO 3` gets
/// Redis's answer when the version is not supported (`NOPROTO`).
pub(super) fn hello(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if let Some(version) = a.first() {
        match std::str::from_utf8(version)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        {
            Some(2) => {}
            Some(_) => {
                ctx.out.error("NOPROTO unsupported protocol version");
                return;
            }
            None => {
                ctx.out
                    .error("ERR Protocol version is not an integer or out of range");
                return;
            }
        }
    }
    let mut i = 1;
    while i < a.len() {
        if is(&a[i], "auth") && i + 2 < a.len() {
            let (user, password) = (a[i + 1].clone(), a[i + 2].clone());
            if !authenticate(ctx, &user, &password) {
                return;
            }
            i += 3;
        } else if is(&a[i], "setname") && i + 1 < a.len() {
            if !valid_name(&a[i + 1]) {
                ctx.out.error(NAME_ERROR);
                return;
            }
            *ctx.client.info.name.lock() = a[i + 1].clone();
            i += 2;
        } else {
            ctx.out.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                printable(&a[i], 64)
            ));
            return;
        }
    }
    if !ctx.client.authenticated {
        ctx.out.error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        );
        return;
    }
    let id = ctx.client.info.id;
    ctx.out.array(14);
    ctx.out.bulk(b"server");
    ctx.out.bulk(b"redis");
    ctx.out.bulk(b"version");
    ctx.out.bulk(crate::REDIS_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.int(2);
    ctx.out.bulk(b"id");
    ctx.out.int(i64::try_from(id).unwrap_or(i64::MAX));
    ctx.out.bulk(b"mode");
    ctx.out.bulk(b"standalone");
    ctx.out.bulk(b"role");
    ctx.out.bulk(b"master");
    ctx.out.bulk(b"modules");
    ctx.out.array(0);
}

/// `SELECT index`: only database 0 exists.
pub(super) fn select(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    match std::str::from_utf8(&a[0])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(0) => ctx.out.ok(),
        Some(_) => ctx.out.error("ERR DB index is out of range"),
        None => ctx.out.error("ERR value is not an integer or out of range"),
    }
}

const NAME_ERROR: &str = "ERR Client names cannot contain spaces, newlines or special characters.";

/// A client name Redis accepts: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// `CLIENT ID | SETNAME name | GETNAME | LIST | INFO | SETINFO attr value | HELP`.
pub(super) fn client(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let sub = &a[0];
    if is(sub, "id") && a.len() == 1 {
        ctx.out
            .int(i64::try_from(ctx.client.info.id).unwrap_or(i64::MAX));
    } else if is(sub, "setname") && a.len() == 2 {
        if valid_name(&a[1]) {
            *ctx.client.info.name.lock() = a[1].clone();
            ctx.out.ok();
        } else {
            ctx.out.error(NAME_ERROR);
        }
    } else if is(sub, "getname") && a.len() == 1 {
        let name = ctx.client.info.name.lock().clone();
        ctx.out
            .bulk_or_null((!name.is_empty()).then_some(name.as_slice()));
    } else if is(sub, "list") {
        let mut clients: Vec<_> = ctx.server.clients.lock().values().cloned().collect();
        clients.sort_by_key(|c| c.id);
        let text: String = clients.iter().map(|c| c.list_line()).collect();
        ctx.out.bulk(text.as_bytes());
    } else if is(sub, "info") && a.len() == 1 {
        ctx.out.bulk(ctx.client.info.list_line().as_bytes());
    } else if is(sub, "setinfo") && a.len() == 3 {
        // Client libraries announce their name and version; nothing to keep.
        ctx.out.ok();
    } else if is(sub, "help") {
        ctx.out.bulk_array(&[
            "CLIENT <subcommand> [<arg> ...]. Subcommands are:",
            "ID",
            "GETNAME",
            "SETNAME <name>",
            "LIST",
            "INFO",
            "SETINFO <attr> <value>",
        ]);
    } else {
        ctx.out.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            printable(sub, 64)
        ));
    }
}
