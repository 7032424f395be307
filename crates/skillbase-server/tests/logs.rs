//! Log lines pass through the vault's redactor: a secret never reaches a log, in any encoding.
//! (Its own test binary: the redactor is attached process-wide.)

use skillbase_runtime::{Vault, VaultKey};
use skillbase_server::logging::{Redacting, attach_vault};
use skillbase_store::{Author, DbUrl, Store};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn log_lines_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        Store::open(&DbUrl::Sqlite(dir.path().join("db")))
            .await
            .unwrap(),
    );
    let vault = Vault::open(store, VaultKey::parse(&"cd".repeat(32)).unwrap())
        .await
        .unwrap();
    let secret = "hunter2-s3cr3t-value-XYZ";
    vault
        .set(
            "PAYMENTS_API_KEY",
            "test",
            secret.as_bytes(),
            &Author::Human("t".into()),
        )
        .await
        .unwrap();
    attach_vault(vault);

    let buf = Buf::default();
    let sink = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(Redacting(move || sink.clone()))
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        tracing::info!(header = %format!("Bearer {secret}"), "calling the payments API");
        tracing::warn!("upstream echoed {b64} back");
        tracing::error!(
            url = "https://x.example/?k=hunter2-s3cr3t-value-XYZ",
            "failed"
        );
    });
    let out = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(!out.contains(secret), "{out}");
    assert!(!out.contains("aHVudGVyMi1zM2NyM3QtdmFsdWUtWFla"), "{out}");
    assert!(out.contains("calling the payments API"), "{out}");
}
