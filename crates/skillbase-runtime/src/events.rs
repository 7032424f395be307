//! Write-behind event recording for the call path.
//!
//! A call must not wait for a database commit to record what it did: events go into a bounded
//! queue and a background task appends them in batches (one transaction per batch). `flush`
//! waits until everything queued so far is stored; a harness calls it before it exits, and tests
//! before they read the events table. If the queue is full, the caller waits (back-pressure), so
//! no event is dropped.

use skillbase_store::{NewEvent, Store};
use std::sync::Arc;
use tokio::sync::{Notify, mpsc, oneshot};

/// Most events written in one transaction.
const BATCH: usize = 512;
/// Queue length before callers wait.
const QUEUE: usize = 8192;
/// How long the writer waits for more events before it writes a batch.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

enum Msg {
    Event(Box<NewEvent>),
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
            let mut batch: Vec<NewEvent> = Vec::with_capacity(BATCH);
            let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
            while let Some(first) = rx.recv().await {
                let push = |msg: Msg, batch: &mut Vec<NewEvent>, waiters: &mut Vec<_>| match msg {
                    Msg::Event(e) => batch.push(*e),
                    Msg::Flush(w) => waiters.push(w),
                };
                push(first, &mut batch, &mut waiters);
                // Gather a burst into one transaction: wait a little for more, unless someone is
                // waiting for a flush. The queue is not watched while lingering, so a caller
                // queueing an event never has to wake this task (one wake-up per batch, not per
                // event); a flush request cuts the linger short, and a full batch is written at
                // once.
                if waiters.is_empty() && batch.len() + rx.len() < BATCH {
                    tokio::select! {
                        _ = tokio::time::sleep(LINGER) => {}
                        _ = flushed.notified() => {}
                    }
                }
                while batch.len() < BATCH {
                    match rx.try_recv() {
                        Ok(msg) => push(msg, &mut batch, &mut waiters),
                        Err(_) => break,
                    }
                }
                if !batch.is_empty() {
                    if let Err(e) = store.append_events(&batch).await {
                        tracing::error!(error = %e, lost = batch.len(), "could not record events");
                    }
                    batch.clear();
                }
                for w in waiters.drain(..) {
                    let _ = w.send(());
                }
            }
        });
        EventSink { tx, flush_now }
    }

    /// Queue an event.
    pub async fn record(&self, event: NewEvent) {
        let _ = self.tx.send(Msg::Event(Box::new(event))).await;
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
