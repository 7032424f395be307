//! Zip bytes as a skill bundle: any input is either refused with an error or yields a bundle
//! that survives a round trip through `to_zip` unchanged. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillbase_format::{Bundle, BundleLimits};

fuzz_target!(|data: &[u8]| {
    let limits = BundleLimits::default();
    let Ok(bundle) = Bundle::from_zip(data, &limits) else {
        return;
    };
    assert!(bundle.total_bytes() <= limits.max_total_bytes);
    assert!(bundle.files().len() <= limits.max_files);
    let _ = bundle.skill_md();
    let zip = bundle
        .to_zip(std::io::Cursor::new(Vec::new()), None)
        .expect("a loaded bundle can be written as a zip")
        .into_inner();
    let again = Bundle::from_zip(&zip, &limits).expect("a written bundle can be read back");
    assert_eq!(again, bundle);
});
