//! [`MemFs`]: an in-memory [`FileSystem`] for tests, and the state machine that
//! [`FaultFs`](super::FaultFs) builds on.
//!
//! The state models durability exactly, so the fault-injecting file system only adds
//! triggers on top of it:
//! - a file is an append-only byte vector plus a `durable_len`: its durable content is always
//!   the prefix written before its last [`WritableFile::sync`];
//! - a directory maps names to file identities twice, as it is now (`current`) and as of its
//!   last [`FileSystem::sync_dir`] (`durable`); a rename or removal only edits `current`;
//! - directories themselves are durable at once: made by [`FileSystem::create_dir_all`],
//!   renamed (with their whole subtree) by [`FileSystem::rename_dir`] and removed, once
//!   empty, by [`FileSystem::remove_dir`], each surviving a crash without a `sync_dir`;
//! - a hard link ([`FileSystem::hard_link`]) binds a second name to the same file, durable
//!   like a creation (after `sync_dir`); the bytes and their durable prefix are shared;
//! - a crash reverts every directory to its durable map, every file to its durable prefix,
//!   releases all locks, bumps the *epoch* (every handle remembers the epoch it was opened in
//!   and fails once it differs) and leaves the file system *down* until restarted.
//!
//! [`create`](FileSystem::create) on an existing name binds the name to a new, empty file;
//! like any creation that binding is durable only after `sync_dir` (the old file comes back
//! on a crash before that). Readers hold the file itself, so a reader of a removed or
//! replaced file keeps reading its old bytes, as on POSIX.
//!
//! Paths are keys: the only normalization is `Path::components` (so `a//b/` equals `a/b`).
//! The roots `""` and `"/"` always exist. Lock order: the state mutex, then a file's mutex.

use super::fault_plan::{FaultPlan, OpKind, Verdict};
use super::{FileLock, FileSystem, RandomAccessFile, ReadMode, WritableFile};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The bytes of one file. Files are append-only, so the durable content is a prefix.
#[derive(Default)]
struct FileData {
    bytes: Vec<u8>,
    /// Length of the prefix that survives a crash. Invariant: `durable_len <= bytes.len()`.
    durable_len: usize,
}

/// A file's identity: directory entries, writers and readers share it.
type Node = Arc<Mutex<FileData>>;

/// One directory's entries (files only; subdirectories are keys of [`State::dirs`]).
#[derive(Default)]
struct Dir {
    current: BTreeMap<OsString, Node>,
    durable: BTreeMap<OsString, Node>,
}

/// Everything behind the [`MemFs`] mutex.
pub(super) struct State {
    /// Directory key (see [`dir_key`]) → entries.
    dirs: BTreeMap<PathBuf, Dir>,
    /// Bumped by every crash; handles opened in an older epoch are dead.
    epoch: u64,
    /// True between a crash and the restart: every operation fails.
    down: bool,
    /// Locked path → token of the guard holding it.
    locks: HashMap<PathBuf, u64>,
    next_lock_token: u64,
    /// Armed faults and operation counters (never armed for a plain `MemFs`).
    pub(super) faults: FaultPlan,
}

impl Default for State {
    fn default() -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::new(), Dir::default());
        dirs.insert(PathBuf::from("/"), Dir::default());
        State {
            dirs,
            epoch: 0,
            down: false,
            locks: HashMap::new(),
            next_lock_token: 0,
            faults: FaultPlan::default(),
        }
    }
}

/// Whether an injected `Tear` can take effect on an operation (otherwise it is an `Error`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tearable {
    Yes,
    No,
}

/// What a fault-checked operation should do after [`State::admit`].
enum Admit {
    Proceed,
    /// Do part of the work, then fail; the number is the operation's sequence number.
    Tear(u64),
}

impl State {
    /// Fails if the file system is down, or if `epoch` is given and is not the current one.
    fn check_alive(&self, epoch: Option<u64>, what: &str, path: &Path) -> Result<()> {
        if self.down {
            return Err(io_error(
                ErrorKind::Other,
                what,
                path,
                "file system is down after a simulated crash",
            ));
        }
        if epoch.is_some_and(|e| e != self.epoch) {
            return Err(io_error(
                ErrorKind::Other,
                what,
                path,
                "handle was opened before a simulated crash",
            ));
        }
        Ok(())
    }

    /// Counts an operation and applies the armed faults: crashes (and fails), fails, or
    /// lets it proceed, possibly torn.
    fn admit(&mut self, kind: OpKind, tear: Tearable, what: &str, path: &Path) -> Result<Admit> {
        match self.faults.admit(kind) {
            Verdict::Proceed => Ok(Admit::Proceed),
            Verdict::Tear(seq) if tear == Tearable::Yes => Ok(Admit::Tear(seq)),
            Verdict::Tear(_) | Verdict::Fail => {
                Err(io_error(ErrorKind::Other, what, path, "injected fault"))
            }
            Verdict::Crash => {
                self.crash();
                Err(io_error(ErrorKind::Other, what, path, "simulated crash"))
            }
        }
    }

    /// Simulates a power cut (see the module doc). The file system stays down until
    /// [`State::restart`].
    pub(super) fn crash(&mut self) {
        for dir in self.dirs.values_mut() {
            dir.current = dir.durable.clone();
        }
        for dir in self.dirs.values() {
            for node in dir.durable.values() {
                let mut file = node.lock();
                let keep = file.durable_len;
                file.bytes.truncate(keep);
            }
        }
        self.epoch += 1;
        self.locks.clear();
        self.faults.disarm_all();
        self.down = true;
    }

    /// Brings the file system back up after a crash (no-op if it is up).
    pub(super) fn restart(&mut self) {
        self.down = false;
    }

    /// True between a crash and the restart.
    pub(super) fn is_down(&self) -> bool {
        self.down
    }

    fn dir(&self, key: &Path, what: &str) -> Result<&Dir> {
        self.dirs
            .get(key)
            .ok_or_else(|| io_error(ErrorKind::NotFound, what, key, "no such directory"))
    }

    fn dir_mut(&mut self, key: &Path, what: &str) -> Result<&mut Dir> {
        self.dirs
            .get_mut(key)
            .ok_or_else(|| io_error(ErrorKind::NotFound, what, key, "no such directory"))
    }

    /// The file currently named `path`.
    fn file(&self, path: &Path, what: &str) -> Result<Node> {
        let (dir, name) = split(path, what)?;
        self.dir(&dir, what)?
            .current
            .get(&name)
            .cloned()
            .ok_or_else(|| io_error(ErrorKind::NotFound, what, path, "no such file"))
    }

    /// Fails unless `dir` exists and `dir/name` is not a directory.
    fn check_file_slot(&self, dir: &Path, name: &OsString, what: &str, path: &Path) -> Result<()> {
        self.dir(dir, what)?;
        if self.dirs.contains_key(&dir.join(name)) {
            return Err(io_error(
                ErrorKind::AlreadyExists,
                what,
                path,
                "is a directory",
            ));
        }
        Ok(())
    }
}

/// The directory-map key of `path`: its components, so `a//b/`, `a/./b` and `./a/b` equal
/// `a/b` (and `.` is the root `""`).
fn dir_key(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

/// Splits a file path into its parent's directory key and its name.
fn split(path: &Path, what: &str) -> Result<(PathBuf, OsString)> {
    let key = dir_key(path);
    match (key.parent(), key.file_name()) {
        (Some(dir), Some(name)) => Ok((dir.to_path_buf(), name.to_os_string())),
        _ => Err(io_error(
            ErrorKind::InvalidInput,
            what,
            path,
            "not a file path",
        )),
    }
}

fn io_error(kind: ErrorKind, what: &str, path: &Path, message: &str) -> Error {
    Error::io(
        format!("{what} {}", path.display()),
        std::io::Error::new(kind, message),
    )
}

/// How many of `len` bytes a torn operation with sequence number `seq` keeps: a quarter,
/// a half or three quarters (rounded down), varying with `seq` so tests see different cuts.
pub(super) fn torn_len(len: usize, seq: u64) -> usize {
    let quarters = 1 + (seq % 3) as usize;
    len / 4 * quarters + len % 4 * quarters / 4
}

/// An in-memory file system. Cloning is cheap: clones share the same files.
///
/// Reads always go through [`RandomAccessFile::read_exact_at`] (`as_slice` is `None`), and
/// readers see bytes appended after they were opened. `sync` and `sync_dir` only record what
/// would survive a crash; plain `MemFs` never crashes (see [`FaultFs`](super::FaultFs)).
#[derive(Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for MemFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemFs").finish_non_exhaustive()
    }
}

impl MemFs {
    /// An empty file system holding only the roots `""` and `"/"`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the locked state (for [`FaultFs`](super::FaultFs)).
    pub(super) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock())
    }
}

struct MemWritable {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    node: Node,
    epoch: u64,
    len: u64,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        const WHAT: &str = "appending to";
        let mut state = self.state.lock();
        state.check_alive(Some(self.epoch), WHAT, &self.path)?;
        let admit = state.admit(OpKind::Write, Tearable::Yes, WHAT, &self.path)?;
        let mut file = self.node.lock();
        match admit {
            Admit::Proceed => {
                file.bytes.extend_from_slice(data);
                self.len += data.len() as u64;
                Ok(())
            }
            Admit::Tear(seq) => {
                let (kept, _) = data.split_at(torn_len(data.len(), seq).min(data.len()));
                file.bytes.extend_from_slice(kept);
                self.len += kept.len() as u64;
                Err(io_error(ErrorKind::Other, WHAT, &self.path, "torn write"))
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        self.state
            .lock()
            .check_alive(Some(self.epoch), "flushing", &self.path)
    }

    fn sync(&mut self) -> Result<()> {
        let mut state = self.state.lock();
        state.check_alive(Some(self.epoch), SYNCING, &self.path)?;
        sync_node(&mut state, &self.node, &self.path)
    }

    fn len(&self) -> u64 {
        self.len
    }
}

const SYNCING: &str = "syncing";

/// Makes `node`'s content durable (a counted, fault-checked sync of the file at `path`).
fn sync_node(state: &mut State, node: &Node, path: &Path) -> Result<()> {
    let admit = state.admit(OpKind::Sync, Tearable::Yes, SYNCING, path)?;
    let mut file = node.lock();
    match admit {
        Admit::Proceed => {
            file.durable_len = file.bytes.len();
            Ok(())
        }
        Admit::Tear(seq) => {
            let pending = file.bytes.len().saturating_sub(file.durable_len);
            file.durable_len += torn_len(pending, seq).min(pending);
            Err(io_error(ErrorKind::Other, SYNCING, path, "torn sync"))
        }
    }
}

struct MemReader {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    node: Node,
    epoch: u64,
}

impl RandomAccessFile for MemReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        const WHAT: &str = "reading";
        let state = self.state.lock();
        state.check_alive(Some(self.epoch), WHAT, &self.path)?;
        let file = self.node.lock();
        let source = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?))
            .and_then(|range| file.bytes.get(range));
        match source {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io_error(
                ErrorKind::UnexpectedEof,
                WHAT,
                &self.path,
                "read past the end of the file",
            )),
        }
    }

    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    fn len(&self) -> Result<u64> {
        let state = self.state.lock();
        state.check_alive(Some(self.epoch), "stat of", &self.path)?;
        let len = self.node.lock().bytes.len();
        Ok(len as u64)
    }
}

struct MemLock {
    state: Arc<Mutex<State>>,
    key: PathBuf,
    token: u64,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        // After a crash the table was cleared and the path may be held by a new guard.
        if state.locks.get(&self.key) == Some(&self.token) {
            state.locks.remove(&self.key);
        }
    }
}

impl FileSystem for MemFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        const WHAT: &str = "creating directory";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, dir)?;
        let key = dir_key(dir);
        let mut missing: Vec<&Path> = key
            .ancestors()
            .take_while(|a| !state.dirs.contains_key(*a))
            .collect();
        missing.reverse();
        for ancestor in missing {
            if let (Some(parent), Some(name)) = (ancestor.parent(), ancestor.file_name()) {
                if state.dir(parent, WHAT)?.current.contains_key(name) {
                    return Err(io_error(
                        ErrorKind::AlreadyExists,
                        WHAT,
                        ancestor,
                        "a file has that name",
                    ));
                }
            }
            state.dirs.insert(ancestor.to_path_buf(), Dir::default());
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        const WHAT: &str = "creating";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let (dir, name) = split(path, WHAT)?;
        state.check_file_slot(&dir, &name, WHAT, path)?;
        state.admit(OpKind::Create, Tearable::No, WHAT, path)?;
        let node = Node::default();
        state
            .dir_mut(&dir, WHAT)?
            .current
            .insert(name, Arc::clone(&node));
        Ok(Box::new(MemWritable {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            node,
            epoch: state.epoch,
            len: 0,
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        const WHAT: &str = "opening for appending";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let node = state.file(path, WHAT)?;
        state.admit(OpKind::Create, Tearable::No, WHAT, path)?;
        let len = node.lock().bytes.len() as u64;
        Ok(Box::new(MemWritable {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            node,
            epoch: state.epoch,
            len,
        }))
    }

    fn open(&self, path: &Path, _mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>> {
        const WHAT: &str = "opening";
        let state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let node = state.file(path, WHAT)?;
        Ok(Arc::new(MemReader {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            node,
            epoch: state.epoch,
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        const WHAT: &str = "reading";
        let state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let node = state.file(path, WHAT)?;
        let bytes = node.lock().bytes.clone();
        Ok(bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        const WHAT: &str = "renaming";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, from)?;
        let (from_dir, from_name) = split(from, WHAT)?;
        let (to_dir, to_name) = split(to, WHAT)?;
        state.file(from, WHAT)?;
        state.check_file_slot(&to_dir, &to_name, WHAT, to)?;
        state.admit(OpKind::Rename, Tearable::No, WHAT, from)?;
        let node = state
            .dir_mut(&from_dir, WHAT)?
            .current
            .remove(&from_name)
            .ok_or_else(|| io_error(ErrorKind::NotFound, WHAT, from, "no such file"))?;
        state.dir_mut(&to_dir, WHAT)?.current.insert(to_name, node);
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        const WHAT: &str = "removing";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let (dir, name) = split(path, WHAT)?;
        state.file(path, WHAT)?;
        state.admit(OpKind::Remove, Tearable::No, WHAT, path)?;
        state.dir_mut(&dir, WHAT)?.current.remove(&name);
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        const WHAT: &str = "listing";
        let state = self.state.lock();
        state.check_alive(None, WHAT, dir)?;
        let key = dir_key(dir);
        let files = state.dir(&key, WHAT)?.current.keys();
        let subdirs = state
            .dirs
            .keys()
            .filter(|d| d.parent() == Some(key.as_path()))
            .filter_map(|d| d.file_name());
        let mut names: Vec<String> = files
            .map(|n| n.as_os_str())
            .chain(subdirs)
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        let state = self.state.lock();
        !state.down
            && (state.dirs.contains_key(&dir_key(path)) || state.file(path, "stat of").is_ok())
    }

    fn size(&self, path: &Path) -> Result<u64> {
        const WHAT: &str = "stat of";
        let state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let node = state.file(path, WHAT)?;
        let len = node.lock().bytes.len();
        Ok(len as u64)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        const WHAT: &str = "syncing directory";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, dir)?;
        let key = dir_key(dir);
        state.dir(&key, WHAT)?;
        state.admit(OpKind::Sync, Tearable::No, WHAT, dir)?;
        let entries = state.dir_mut(&key, WHAT)?;
        entries.durable = entries.current.clone();
        Ok(())
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let mut state = self.state.lock();
        state.check_alive(None, SYNCING, path)?;
        let node = state.file(path, SYNCING)?;
        sync_node(&mut state, &node, path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        const WHAT: &str = "locking";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, path)?;
        let (dir, name) = split(path, WHAT)?;
        state.check_file_slot(&dir, &name, WHAT, path)?;
        let key = dir_key(path);
        if state.locks.contains_key(&key) {
            return Err(Error::Busy(format!(
                "{} is held by another handle",
                path.display()
            )));
        }
        // Like StdFs, locking creates the (empty) lock file if it is missing.
        state.dir_mut(&dir, WHAT)?.current.entry(name).or_default();
        let token = state.next_lock_token;
        state.next_lock_token += 1;
        state.locks.insert(key.clone(), token);
        Ok(Box::new(MemLock {
            state: Arc::clone(&self.state),
            key,
            token,
        }))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        const WHAT: &str = "hard linking";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, from)?;
        let node = state.file(from, WHAT)?;
        let (dir, name) = split(to, WHAT)?;
        state.check_file_slot(&dir, &name, WHAT, to)?;
        if state.dir(&dir, WHAT)?.current.contains_key(&name) {
            return Err(io_error(ErrorKind::AlreadyExists, WHAT, to, "file exists"));
        }
        state.admit(OpKind::Create, Tearable::No, WHAT, to)?;
        state.dir_mut(&dir, WHAT)?.current.insert(name, node);
        Ok(())
    }

    fn rename_dir(&self, from: &Path, to: &Path) -> Result<()> {
        const WHAT: &str = "renaming directory";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, from)?;
        let from_key = dir_key(from);
        let to_key = dir_key(to);
        if from_key.parent().is_none() || !state.dirs.contains_key(&from_key) {
            return Err(io_error(
                ErrorKind::NotFound,
                WHAT,
                from,
                "no such directory",
            ));
        }
        let (to_parent, to_name) = split(to, WHAT)?;
        state.dir(&to_parent, WHAT)?;
        if state.dirs.contains_key(&to_key)
            || state.dir(&to_parent, WHAT)?.current.contains_key(&to_name)
        {
            return Err(io_error(
                ErrorKind::AlreadyExists,
                WHAT,
                to,
                "target exists",
            ));
        }
        if to_key.starts_with(&from_key) {
            return Err(io_error(
                ErrorKind::InvalidInput,
                WHAT,
                to,
                "a directory cannot move inside itself",
            ));
        }
        state.admit(OpKind::Rename, Tearable::No, WHAT, from)?;
        let moved: Vec<PathBuf> = state
            .dirs
            .keys()
            .filter(|k| k.starts_with(&from_key))
            .cloned()
            .collect();
        for key in moved {
            if let (Some(entries), Ok(rest)) =
                (state.dirs.remove(&key), key.strip_prefix(&from_key))
            {
                state.dirs.insert(dir_key(&to_key.join(rest)), entries);
            }
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        const WHAT: &str = "removing directory";
        let mut state = self.state.lock();
        state.check_alive(None, WHAT, dir)?;
        let key = dir_key(dir);
        if key.parent().is_none() {
            return Err(io_error(ErrorKind::InvalidInput, WHAT, dir, "a root"));
        }
        let has_files = !state.dir(&key, WHAT)?.current.is_empty();
        let has_subdirs = state.dirs.keys().any(|d| d.parent() == Some(key.as_path()));
        if has_files || has_subdirs {
            return Err(io_error(
                ErrorKind::DirectoryNotEmpty,
                WHAT,
                dir,
                "directory not empty",
            ));
        }
        state.admit(OpKind::Remove, Tearable::No, WHAT, dir)?;
        state.dirs.remove(&key);
        Ok(())
    }
}

#[cfg(test)]
#[path = "mem_tests.rs"]
mod tests;
