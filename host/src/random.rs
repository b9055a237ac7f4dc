//! Unguessable values: session cookies, anti-CSRF tokens, sign-in links, PKCE verifiers, question
//! ids. One source, the operating system's, and no fallback: without randomness no such value is
//! made (the process panics rather than hand out a predictable secret).

/// `N` random bytes.
///
/// # Panics
/// When the operating system has no randomness to give.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("no randomness for an unguessable value: {e}");
    }
    bytes
}

/// `N` random bytes in lowercase hex (`2 * N` characters).
pub fn hex<const N: usize>() -> String {
    use std::fmt::Write as _;
    bytes::<N>()
        .iter()
        .fold(String::with_capacity(2 * N), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_twice_as_long_and_differs_each_time() {
        let (a, b) = (super::hex::<16>(), super::hex::<16>());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
