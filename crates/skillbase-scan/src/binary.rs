//! What a file is before it is read as text: an archive (never expanded; an encrypted zip is
//! found from its headers), an executable, a known media type, some other binary, or text.

/// How much of a file decides whether it is text.
const SNIFF: usize = 8192;
/// Most zip headers read for the encryption flag.
const MAX_ZIP_HEADERS: usize = 4096;

/// A file's content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    /// Text (possibly with invalid bytes).
    Text,
    /// An image, font, audio, video or PDF file.
    Media(&'static str),
    /// An archive; `encrypted` when a zip entry is password-protected.
    Archive {
        /// The format.
        kind: &'static str,
        /// A zip entry has the encryption flag.
        encrypted: bool,
    },
    /// A compiled executable.
    Executable(&'static str),
    /// Binary of no known type.
    Binary,
}

/// Classify `bytes`.
pub(crate) fn classify(bytes: &[u8]) -> Content {
    const MAGIC: &[(&[u8], Content)] = &[
        (b"\x7fELF", Content::Executable("ELF")),
        (b"\xcf\xfa\xed\xfe", Content::Executable("Mach-O")),
        (b"\xce\xfa\xed\xfe", Content::Executable("Mach-O")),
        (b"\xca\xfe\xba\xbe", Content::Executable("Mach-O universal")),
        (b"MZ", Content::Executable("Windows PE")),
        (
            b"\x1f\x8b",
            Content::Archive {
                kind: "gzip",
                encrypted: false,
            },
        ),
        (
            b"7z\xbc\xaf\x27\x1c",
            Content::Archive {
                kind: "7z",
                encrypted: false,
            },
        ),
        (
            b"Rar!",
            Content::Archive {
                kind: "rar",
                encrypted: false,
            },
        ),
        (
            b"BZh",
            Content::Archive {
                kind: "bzip2",
                encrypted: false,
            },
        ),
        (
            b"\xfd7zXZ\x00",
            Content::Archive {
                kind: "xz",
                encrypted: false,
            },
        ),
        (
            b"\x28\xb5\x2f\xfd",
            Content::Archive {
                kind: "zstd",
                encrypted: false,
            },
        ),
        (b"\x89PNG", Content::Media("PNG image")),
        (b"\xff\xd8\xff", Content::Media("JPEG image")),
        (b"GIF8", Content::Media("GIF image")),
        (b"%PDF", Content::Media("PDF document")),
        (b"wOFF", Content::Media("WOFF font")),
        (b"wOF2", Content::Media("WOFF2 font")),
        (b"\x00\x00\x01\x00", Content::Media("icon")),
        (b"OggS", Content::Media("Ogg audio")),
        (b"ID3", Content::Media("MP3 audio")),
    ];
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Content::Archive {
            kind: "zip",
            encrypted: zip_encrypted(bytes),
        };
    }
    if let Some((_, c)) = MAGIC.iter().find(|(m, _)| bytes.starts_with(m)) {
        return *c;
    }
    if bytes.len() > 12 && &bytes[0..4] == b"RIFF" {
        return Content::Media("RIFF media");
    }
    if bytes.len() > 262 && &bytes[257..262] == b"ustar" {
        return Content::Archive {
            kind: "tar",
            encrypted: false,
        };
    }
    if matches!(bytes, [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..]) {
        return Content::Text;
    }
    let head = &bytes[..bytes.len().min(SNIFF)];
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    if head.contains(&0) || control * 10 > head.len() {
        Content::Binary
    } else {
        Content::Text
    }
}

/// Whether any local or central zip header has the encryption flag (bit 0).
fn zip_encrypted(bytes: &[u8]) -> bool {
    let mut seen = 0;
    let mut i = 0;
    while i + 12 <= bytes.len() && seen < MAX_ZIP_HEADERS {
        let w = &bytes[i..i + 4];
        let flag_at = match w {
            b"PK\x03\x04" => Some(i + 6),
            b"PK\x01\x02" => Some(i + 8),
            _ => None,
        };
        if let Some(at) = flag_at {
            seen += 1;
            if bytes[at] & 1 == 1 {
                return true;
            }
            i += 4;
        } else {
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_told_by_their_first_bytes() {
        assert_eq!(classify(b"# hello\n"), Content::Text);
        assert_eq!(classify(b"\x7fELF\x02\x01"), Content::Executable("ELF"));
        assert_eq!(classify(b"\x89PNG\r\n"), Content::Media("PNG image"));
        assert_eq!(classify(b"abc\x00def"), Content::Binary);
        assert_eq!(classify(&[0xFF, 0xFE, b'a', 0]), Content::Text);
    }

    #[test]
    fn an_encrypted_zip_entry_is_seen_in_its_header() {
        let mut plain = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
        plain.extend_from_slice(&[0; 20]);
        assert_eq!(
            classify(&plain),
            Content::Archive {
                kind: "zip",
                encrypted: false
            }
        );
        let mut enc = plain.clone();
        enc[6] = 1;
        assert_eq!(
            classify(&enc),
            Content::Archive {
                kind: "zip",
                encrypted: true
            }
        );
    }
}
