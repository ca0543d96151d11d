//! [`FetchPool`]: a few threads that read value-log entries for range scans, so a batch of
//! separated values is read with several reads in flight (WiscKey §3.3 uses a thread pool to
//! fetch a range query's values in parallel and exploit the device's internal parallelism).
//!
//! The pool is started by the first batch that uses it and lives as long as the value log.
//! A batch is split into contiguous chunks of its offset-sorted requests: the scanning
//! thread reads the first chunk itself while the workers read the others into their own
//! buffers, then hands every value to the caller's sink. Jobs own what they read (segment
//! readers, keys, pointers), so no borrow crosses threads.

use super::segment::{SegmentReader, ValueRequest, ValueSink};
use super::ValuePointer;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send>;

/// The worker threads and the queue feeding them.
pub(crate) struct FetchPool {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    threads: usize,
}

impl FetchPool {
    /// Starts `threads` workers (fewer if the OS refuses some; at least the caller reads).
    pub(crate) fn start(threads: usize) -> FetchPool {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for i in 0..threads {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("augur-fetch-{i}"))
                .spawn(move || loop {
                    let job = rx.lock().recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                });
            if let Ok(h) = spawned {
                workers.push(h);
            }
        }
        FetchPool {
            threads: workers.len(),
            queue: Mutex::new(Some(tx)),
            workers: Mutex::new(workers),
        }
    }

    /// Number of running workers.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    fn submit(&self, job: Job) -> bool {
        self.queue
            .lock()
            .as_ref()
            .is_some_and(|q| q.send(job).is_ok())
    }
}

impl Drop for FetchPool {
    fn drop(&mut self) {
        // Closing the queue ends every worker after its current job.
        self.queue.lock().take();
        for h in self.workers.lock().drain(..) {
            let _ = h.join();
        }
    }
}

/// One request a worker reads: slot, pointer, and the key's range in its chunk's `keys`.
type OwnedRequest = (usize, ValuePointer, usize, usize);

/// A chunk of requests a worker reads: per segment, its reader and requests.
struct Chunk {
    groups: Vec<(Arc<SegmentReader>, Vec<OwnedRequest>)>,
    keys: Vec<u8>,
}

/// What a worker read: the values back to back, and each request's slot and range.
type ChunkResult = Result<(Vec<u8>, Vec<(usize, usize, usize)>)>;

impl Chunk {
    fn read(&self) -> ChunkResult {
        let mut values = Vec::new();
        let mut ranges = Vec::new();
        for (reader, reqs) in &self.groups {
            let requests: Vec<ValueRequest<'_>> = reqs
                .iter()
                .map(|&(slot, ptr, ks, ke)| ValueRequest {
                    slot,
                    ptr,
                    key: self.keys.get(ks..ke).unwrap_or_default(),
                })
                .collect();
            reader.read_values(&requests, &mut |slot, v, _| {
                let start = values.len();
                values.extend_from_slice(v);
                ranges.push((slot, start, values.len()));
            })?;
        }
        Ok((values, ranges))
    }
}

/// Reads `requests` (sorted by segment and offset; `reader` resolves a pointer's segment)
/// with the pool's workers and the calling thread, handing every value to `sink`.
pub(crate) fn read_parallel(
    pool: &FetchPool,
    requests: &[ValueRequest<'_>],
    reader: &dyn Fn(&ValuePointer) -> Result<Arc<SegmentReader>>,
    sink: &mut ValueSink<'_>,
) -> Result<()> {
    let parts = (pool.threads() + 1).min(requests.len()).max(1);
    let per = requests.len().div_ceil(parts);
    let mut chunks = requests.chunks(per);
    let own = chunks.next().unwrap_or_default();
    let (tx, rx) = mpsc::channel::<ChunkResult>();
    let mut pending = 0;
    for part in chunks {
        let mut chunk = Chunk {
            groups: Vec::new(),
            keys: Vec::new(),
        };
        for r in part {
            let same = chunk
                .groups
                .last()
                .is_some_and(|(g, _)| g.id() == r.ptr.segment);
            if !same {
                chunk.groups.push((reader(&r.ptr)?, Vec::new()));
            }
            let start = chunk.keys.len();
            chunk.keys.extend_from_slice(r.key);
            if let Some((_, reqs)) = chunk.groups.last_mut() {
                reqs.push((r.slot, r.ptr, start, chunk.keys.len()));
            }
        }
        let tx = tx.clone();
        let job: Job = Box::new(move || {
            let _ = tx.send(chunk.read());
        });
        if pool.submit(job) {
            pending += 1;
        } else {
            return Err(Error::InvalidArgument(
                "the value-log fetch pool is shut down".into(),
            ));
        }
    }
    drop(tx);
    let mut first_error = None;
    let mut rest = own;
    while let Some(r) = rest.first() {
        let n = rest.partition_point(|x| x.ptr.segment == r.ptr.segment);
        let (group, tail) = rest.split_at(n);
        if let Err(e) = reader(&r.ptr).and_then(|seg| seg.read_values(group, sink)) {
            first_error.get_or_insert(e);
            break;
        }
        rest = tail;
    }
    for _ in 0..pending {
        match rx.recv() {
            Ok(Ok((values, ranges))) => {
                for (slot, s, e) in ranges {
                    sink(slot, values.get(s..e).unwrap_or_default(), None);
                }
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::InvalidArgument(
                    "a value-log fetch worker stopped".into(),
                ));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
