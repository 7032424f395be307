//! Printing to stdout as an `io::Result`. A reader that went away (`skillbase list | head -1`)
//! makes the next write fail with `BrokenPipe`; the command returns that error like any other,
//! and `main` finds it in the error chain ([`is_broken_pipe`]) and ends quietly with status 0,
//! as ripgrep does. Rust leaves SIGPIPE ignored, so a closed pipe is never a signal or a panic.
//! (The servers' banner and logs drop a failed write instead: their reader going away must not
//! end the server.)

/// `print!` to stdout, answering `io::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        write!(::std::io::stdout().lock(), $($arg)*)
    }};
}

/// `println!` to stdout, answering `io::Result<()>`.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*)
    }};
}

/// Whether an error is, or was caused by, a write into a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
