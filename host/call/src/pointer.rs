//! JSON Pointer paths (RFC 6901): how error messages, coercions and the gate's cost graph name a place
//! in an input or a schema. Public so that the gate, in its own crate, escapes paths the same way.

/// Appends `/` and `key` to `path` as one reference token: `~` as `~0`, `/` as `~1`.
pub fn push(path: &mut String, key: &str) {
    path.reserve(1 + key.len());
    path.push('/');
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// `base` with `key` appended as one reference token, in one allocation.
pub fn join(base: &str, key: &str) -> String {
    let mut path = String::with_capacity(base.len() + 1 + key.len());
    path.push_str(base);
    push(&mut path, key);
    path
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_tildes_before_slashes() {
        assert_eq!(super::join("", "a/b~c"), "/a~1b~0c");
        assert_eq!(super::join("/o~0~1", "~~//"), "/o~0~1/~0~0~1~1");
        assert_eq!(super::join("/x", ""), "/x/");
        assert_eq!(super::join("", "é"), "/é");
    }
}
