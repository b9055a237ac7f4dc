//! `[limits]` and a plugin's own: how deep nested calls may go, inherited, overridden, refused.

use crate::config::load::tests::parse;

#[test]
fn nesting_defaults_inherit_and_override_and_bad_values_name_their_key() {
    let c = parse(
        "[limits]\nnested-calls = 10\n[plugins.a]\ncall-tools = [\"fs_*\", \"echo\"]\n\
         limits = { nesting-depth = 1 }\n",
    )
    .unwrap();
    let a = c.policy("a");
    assert_eq!((a.nesting.calls, a.nesting.depth), (10, 1));
    assert_eq!(c.policy("b").nesting.depth, 2);
    assert!(a.grants.calls[0].matches("fs_read") && a.grants.calls[1].matches("echo"));
    assert!(!a.grants.calls.iter().any(|p| p.matches("echo2")));
    assert!(c.policy("b").grants.calls.is_empty(), "no grant, no calls");
    assert_eq!(c.deepest_nesting(), 1);

    for (text, key) in [
        ("[limits]\nnesting-depth = 9\n", "limits.nesting-depth"),
        ("[limits]\nnested-calls = 10001\n", "limits.nested-calls"),
        (
            "[plugins.a]\ncall-tools = [\"a b\"]\n",
            "plugins.a.call-tools[0]",
        ),
        (
            "[plugins.a]\ncall-tools = [\"\"]\n",
            "plugins.a.call-tools[0]",
        ),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}
