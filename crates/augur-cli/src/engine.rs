//! Engine options given on the command line (global flags) and opening the database. The
//! flags themselves are [`augur_frontend::engine_args::EngineArgs`], shared with the Python
//! package so both accept the same option names, values and defaults.

use crate::error::CliError;
use augur::Db;
pub use augur_frontend::engine_args::EngineArgs;
use std::path::Path;

/// Opens the database in `dir` with the options of `args`; `create` says whether the
/// command may create it (overridden by `--no-create`). Each WAL loss that
/// `--accept-wal-loss` let through is printed on stderr.
pub fn open(args: &EngineArgs, dir: &Path, create: bool) -> Result<Db, CliError> {
    let may_create = create && !args.no_create && !args.read_only;
    // A directory whose CURRENT was lost but which holds a database's files is damaged:
    // `exists` fails naming it, so no message here suggests a write that would start over.
    if !may_create && !Db::exists(dir)? {
        let why = if !create {
            "this command only reads or deletes, so it never creates one"
        } else if args.read_only {
            "--read-only never creates one"
        } else {
            "--no-create was given"
        };
        return Err(CliError::Failed(format!(
            "no database at {} ({why}; `put` or `load` without --no-create creates it)",
            dir.display()
        )));
    }
    let db = args.open(dir, create)?;
    for loss in db.wal_losses() {
        eprintln!("warning: --accept-wal-loss: {loss}; its unflushed writes were dropped");
    }
    Ok(db)
}
