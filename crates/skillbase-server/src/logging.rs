//! Structured logs (JSON lines on stderr, or human-readable text), every line passed through the
//! vault's redactor before it is written, so a secret never reaches a log.

use skillbase_runtime::Vault;
use std::io::Write;
use std::sync::{Arc, OnceLock};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

static VAULT: OnceLock<Arc<Vault>> = OnceLock::new();

/// Redact log lines with this vault's values from now on.
pub fn attach_vault(vault: Arc<Vault>) {
    let _ = VAULT.set(vault);
}

/// A writer that collects one log event and writes it, redacted, when dropped.
pub struct RedactingWriter<W: Write> {
    buf: Vec<u8>,
    out: W,
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let line = match VAULT.get() {
            Some(v) => v.redactor().redact(&text).into_owned(),
            None => text.into_owned(),
        };
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
    }
}

/// Makes a [`RedactingWriter`] over any `MakeWriter` (stderr in the server, a buffer in tests).
pub struct Redacting<M>(pub M);

impl<'a, M> MakeWriter<'a> for Redacting<M>
where
    M: MakeWriter<'a>,
{
    type Writer = RedactingWriter<M::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter {
            buf: Vec::with_capacity(256),
            out: self.0.make_writer(),
        }
    }
}

/// Install the global subscriber: filter from `SKILLBASE_LOG` or `RUST_LOG` (default
/// `info,rmcp=warn`), JSON or text.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_env("SKILLBASE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Redacting(std::io::stderr));
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}
