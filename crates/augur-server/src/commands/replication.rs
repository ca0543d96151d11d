//! Replication commands (`replication/` holds the machinery): REPLICAOF and SLAVEOF, ROLE,
//! WAIT, and what a replica sends a primary before its stream — REPLCONF and PSYNC (which
//! hands the connection over to `replication::primary`). SYNC, Redis's pre-PSYNC protocol,
//! is refused: only augur-server replicas speak this stream.

use super::{is, parse_i64, CmdError, Command, Ctx, Reply};
use crate::replication::{self, primary, Replication, CAPA};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `REPLICAOF host port | NO ONE` (and `SLAVEOF`).
pub(super) enum ReplicaOf {
    NoOne,
    Of(String, u16),
}

impl ReplicaOf {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let [host, port] = args else {
            return Err(CmdError::syntax());
        };
        if is(host, "no") && is(port, "one") {
            return Ok(ReplicaOf::NoOne);
        }
        let port = std::str::from_utf8(port)
            .ok()
            .and_then(|p| p.parse::<u16>().ok())
            .filter(|&p| p > 0)
            .ok_or_else(|| CmdError::new("ERR Invalid master port"))?;
        Ok(ReplicaOf::Of(
            String::from_utf8_lossy(host).into_owned(),
            port,
        ))
    }
}

impl Command for ReplicaOf {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        match self {
            ReplicaOf::NoOne => {
                Replication::promote(ctx.server)?;
                Ok(Reply::Ok)
            }
            ReplicaOf::Of(host, port) => {
                let same = replication::Role::Replica {
                    host: host.clone(),
                    port,
                };
                if ctx.server.repl.role() == same {
                    return Ok(Reply::Status("OK Already connected to specified master"));
                }
                Replication::replicate(ctx.server, host, port);
                Ok(Reply::Ok)
            }
        }
    }
}

/// `ROLE`: `master, offset, [[ip, port, offset] ...]` or `slave, host, port, state,
/// offset`, as Redis 7.0.
#[derive(Default)]
pub(super) struct Role;

impl Command for Role {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let repl = &ctx.server.repl;
        let offset = i64::try_from(repl.offset()).unwrap_or(i64::MAX);
        Ok(match repl.role() {
            replication::Role::Primary => Reply::Array(vec![
                Reply::bulk("master"),
                Reply::Int(offset),
                Reply::Array(
                    repl.replicas()
                        .iter()
                        .map(|r| {
                            Reply::bulk_array([
                                r.ip.to_string(),
                                r.port.to_string(),
                                r.ack_offset.load(Ordering::Acquire).to_string(),
                            ])
                        })
                        .collect(),
                ),
            ]),
            replication::Role::Replica { host, port } => {
                let state = repl.link.state();
                let shown = if state == replication::LinkState::Connected {
                    offset
                } else {
                    -1
                };
                Reply::Array(vec![
                    Reply::bulk("slave"),
                    Reply::bulk(host),
                    Reply::Int(i64::from(port)),
                    Reply::bulk(state.word()),
                    Reply::Int(shown),
                ])
            }
        })
    }
}

/// `WAIT numreplicas timeout`: the number of replicas that acknowledged this client's last
/// write, once `numreplicas` did or the timeout (ms; 0 waits forever) passed.
pub(super) struct Wait {
    replicas: usize,
    timeout_ms: u64,
}

impl Wait {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let [n, timeout] = args else {
            return Err(CmdError::arity("wait"));
        };
        let n = parse_i64(n)?;
        let timeout = parse_i64(timeout)?;
        if timeout < 0 {
            return Err(CmdError::new("ERR timeout is negative"));
        }
        Ok(Wait {
            replicas: usize::try_from(n).unwrap_or(0),
            timeout_ms: timeout.unsigned_abs(),
        })
    }
}

impl Command for Wait {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let repl = &ctx.server.repl;
        if repl.is_replica() {
            return Err(CmdError::new(
                "ERR WAIT cannot be used with replica instances. Please also note that since \
                 Redis 4.0 if a replica is configured to be writable (which is not the \
                 default) writes to replicas are just local and are not propagated.",
            ));
        }
        let deadline =
            (self.timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(self.timeout_ms));
        let offset = ctx.client.write_offset;
        let wanted = self.replicas;
        let n = tokio::task::block_in_place(|| repl.wait_for_acks(offset, wanted, deadline));
        Ok(Reply::Int(i64::try_from(n).unwrap_or(i64::MAX)))
    }
}

/// `REPLCONF option value ...`: `listening-port`, `capa`, `ip-address` are noted (`+OK`);
/// `ACK` and `GETACK` belong to a replication link and get no reply elsewhere.
pub(super) struct ReplConfCmd {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl ReplConfCmd {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        if !args.len().is_multiple_of(2) {
            return Err(CmdError::syntax());
        }
        Ok(ReplConfCmd {
            pairs: args
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
        })
    }
}

impl Command for ReplConfCmd {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        for (option, value) in &self.pairs {
            if is(option, "listening-port") {
                let port = parse_i64(value)?;
                ctx.client.replconf.listening_port =
                    u16::try_from(port).map_err(|_| CmdError::new("ERR Invalid listening port"))?;
            } else if is(option, "capa") {
                ctx.client.replconf.augur |= value.as_slice() == CAPA.as_bytes();
            } else if is(option, "ack") || is(option, "getack") {
                return Ok(Reply::Nothing);
            } else if is(option, "ip-address") {
                // An address Sentinel can reach it at (`replica-announce-ip`); a host name
                // is accepted and not used (the connection's address is shown instead).
                ctx.client.replconf.ip =
                    std::str::from_utf8(value).ok().and_then(|t| t.parse().ok());
            } else if !is(option, "rdb-only") {
                return Err(CmdError::new(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    super::printable(option, 64)
                )));
            }
        }
        Ok(Reply::Ok)
    }
}

/// `PSYNC replid offset`: a replica asks for the stream; the session hands the connection
/// to `replication::primary` after this command (which itself replies nothing).
pub(super) struct PSync {
    replid: String,
    offset: i64,
}

impl PSync {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        let [replid, offset] = args else {
            return Err(CmdError::arity("psync"));
        };
        Ok(PSync {
            replid: String::from_utf8_lossy(replid).into_owned(),
            offset: parse_i64(offset)?,
        })
    }
}

impl Command for PSync {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        if ctx.server.repl.is_replica() {
            return Err(CmdError::new(
                "ERR augur-server replicas do not serve replicas (no chained replication)",
            ));
        }
        if !ctx.client.replconf.augur {
            return Err(CmdError::new(format!(
                "ERR augur-server streams its own replication format: only augur-server \
                 replicas (REPLCONF capa {CAPA}) may PSYNC"
            )));
        }
        ctx.client.handoff = Some(primary::Request {
            replid: self.replid,
            offset: self.offset,
            listening_port: ctx.client.replconf.listening_port,
            announced_ip: ctx.client.replconf.ip,
        });
        Ok(Reply::Nothing)
    }
}

/// `SYNC`: refused (see the module doc).
#[derive(Default)]
pub(super) struct OldSync;

impl Command for OldSync {
    fn execute(self, _ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        Err(CmdError::new(
            "ERR augur-server replicas use PSYNC (SYNC is not supported)",
        ))
    }
}
