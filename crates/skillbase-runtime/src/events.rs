//! Write-behind event recording for the call path.
//!
//! A call must not wait for a database commit to record what it did: events go into a bounded
//! queue and a background task appends them in batches (one transaction per batch). `flush`
//! waits until everything queued so far is stored; a harness calls it before it exits, and tests
//! before they read the events table. If the queue is full, the caller waits (back-pressure) up
//! to [`FULL_WAIT`], after which its event is dropped and logged (a store refusing writes for
//! long must not hold every turn and call); a batch the database refuses is retried with backoff
//! (see [`write_batch`]), and otherwise only an event the database refuses on its own is lost,
//! logged.
//!
//! A run's call counter goes the same way ([`EventSink::count_call`]): the counts of a batch are
//! summed per run and added in the batch's transaction, so a successful call costs no commit of
//! its own. Whoever reads a run's counters to decide something (the failed-calls limit, ending
//! the run) flushes first.

use skillbase_store::{NewEvent, Store};
use std::sync::Arc;
use tokio::sync::{Notify, mpsc, oneshot};

/// Most events written in one transaction.
const BATCH: usize = 512;
/// Queue length before callers wait.
const QUEUE: usize = 8192;
/// How long a caller waits for room in a full queue before its event is dropped.
const FULL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How long the writer waits for more events before it writes a batch.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

enum Msg {
    Event(Box<NewEvent>),
    /// One call counted in a run.
    Count(i64),
    Flush(oneshot::Sender<()>),
}

/// A handle to the event writer.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::Sender<Msg>,
    /// Cuts the writer's linger short when someone waits for a flush.
    flush_now: Arc<Notify>,
}

impl EventSink {
    /// Start the writer on the current tokio runtime.
    pub fn start(store: Arc<Store>) -> EventSink {
        let (tx, mut rx) = mpsc::channel::<Msg>(QUEUE);
        let flush_now = Arc::new(Notify::new());
        let flushed = flush_now.clone();
        tokio::spawn(async move {
            let mut batch = Batch {
                events: Vec::with_capacity(BATCH),
                counts: Vec::new(),
                waiters: Vec::new(),
            };
            while let Some(first) = rx.recv().await {
                batch.push(first);
                // Gather a burst into one transaction: wait a little for more, unless someone is
                // waiting for a flush. The queue is not watched while lingering, so a caller
                // queueing an event never has to wake this task (one wake-up per batch, not per
                // event); a flush request cuts the linger short, and a full batch is written at
                // once.
                if batch.waiters.is_empty() && batch.len() + rx.len() < BATCH {
                    tokio::select! {
                        _ = tokio::time::sleep(LINGER) => {}
                        _ = flushed.notified() => {}
                    }
                }
                while batch.len() < BATCH {
                    match rx.try_recv() {
                        Ok(msg) => batch.push(msg),
                        Err(_) => break,
                    }
                }
                if !batch.events.is_empty() || !batch.counts.is_empty() {
                    write_batch(&store, &batch.events, &batch.counts).await;
                    batch.events.clear();
                    batch.counts.clear();
                }
                for w in batch.waiters.drain(..) {
                    let _ = w.send(());
                }
            }
        });
        EventSink { tx, flush_now }
    }

    /// Queue an event for the background writer, which stores it in its next batch; waits only
    /// while the queue is full, and at most [`FULL_WAIT`]: a store that refuses writes for long
    /// (its files turned unwritable) must not hold every turn and call back, so past that the
    /// event is dropped with an error in the log. Use [`EventSink::flush`] to know it is stored.
    pub async fn record(&self, event: NewEvent) {
        let kind = event.kind.clone();
        let send = self.tx.send(Msg::Event(Box::new(event)));
        if tokio::time::timeout(FULL_WAIT, send).await.is_err() {
            tracing::error!(kind = %kind, "the event queue stayed full (the store refuses writes): an event was not recorded");
        }
    }

    /// Count one (successful) call in a run's `calls`, written behind with the events.
    pub async fn count_call(&self, run: i64) {
        let _ = self.tx.send(Msg::Count(run)).await;
    }

    /// Wait until every event queued before this call is stored.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).await.is_ok() {
            self.flush_now.notify_one();
            let _ = rx.await;
        }
    }
}

/// Attempts of a whole batch before its events are tried one by one.
const ATTEMPTS: u32 = 8;
/// The first wait between attempts (doubled each time, at most [`MAX_BACKOFF`]).
const BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);
const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(5);

/// Store one batch. A database that refuses it (locked, restarting, briefly unreachable) is
/// retried with backoff while the queue holds the callers back; only after [`ATTEMPTS`] are the
/// counts and then each event written alone, so that one event the database will never take
/// cannot hold the others back. An event refused alone is the only one not stored, and it is
/// logged by kind (its data may be large; it is redacted already, but logs stay small).
async fn write_batch(store: &Store, events: &[NewEvent], counts: &[(i64, u32)]) {
    let mut wait = BACKOFF;
    for attempt in 1..=ATTEMPTS {
        match store.append_events_and_count(events, counts).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, attempt, events = events.len(), "recording events failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_BACKOFF);
            }
        }
    }
    if !counts.is_empty()
        && let Err(e) = store.append_events_and_count(&[], counts).await
    {
        tracing::error!(error = %e, runs = counts.len(), "could not record run counts");
    }
    for ev in events {
        if let Err(e) = store.append_events(std::slice::from_ref(ev)).await {
            tracing::error!(error = %e, kind = %ev.kind, "an event could not be recorded");
        }
    }
}

/// What the writer gathers for one transaction.
struct Batch {
    events: Vec<NewEvent>,
    /// (run, calls), one entry per run.
    counts: Vec<(i64, u32)>,
    waiters: Vec<oneshot::Sender<()>>,
}

impl Batch {
    fn push(&mut self, msg: Msg) {
        match msg {
            Msg::Event(e) => self.events.push(*e),
            Msg::Count(run) => match self.counts.iter_mut().find(|(r, _)| *r == run) {
                Some((_, n)) => *n += 1,
                None => self.counts.push((run, 1)),
            },
            Msg::Flush(w) => self.waiters.push(w),
        }
    }

    /// Messages taken (what `BATCH` bounds).
    fn len(&self) -> usize {
        self.events.len() + self.counts.len()
    }
}
