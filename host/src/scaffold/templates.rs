//! The embedded template files of every language: where each goes in the new project, and its text.
//!
//! Placeholders are `{{name}}` and the few derived names [`super::render`] fills in. Files shared with
//! the repository's own examples and contract are included from there, so they cannot drift apart.

use super::Lang;

/// One file of a new project.
pub(super) struct Template {
    /// Path inside the project.
    pub(super) path: &'static str,
    /// Text, with placeholders.
    pub(super) text: &'static str,
    /// Whether to mark it executable (build and test scripts).
    pub(super) executable: bool,
}

const fn file(path: &'static str, text: &'static str) -> Template {
    Template {
        path,
        text,
        executable: false,
    }
}

const fn script(path: &'static str, text: &'static str) -> Template {
    Template {
        path,
        text,
        executable: true,
    }
}

/// The contract, copied into every project.
const CONTRACT: Template = file("wit/plugin.wit", include_str!("../../../wit/plugin.wit"));
const TEST_SH: Template = script("test.sh", include_str!("common/test.sh.tmpl"));
const README: Template = file("README.md", include_str!("common/README.md.tmpl"));

const RUST: &[Template] = &[
    file("Cargo.toml", include_str!("rust/Cargo.toml.tmpl")),
    file("src/lib.rs", include_str!("rust/lib.rs.tmpl")),
    script("build.sh", include_str!("rust/build.sh.tmpl")),
    file(".gitignore", include_str!("rust/gitignore.tmpl")),
    CONTRACT,
    TEST_SH,
    README,
];

const PYTHON: &[Template] = &[
    file("app.py", include_str!("python/app.py.tmpl")),
    file("logic.py", include_str!("python/logic.py.tmpl")),
    file("test_logic.py", include_str!("python/test_logic.py.tmpl")),
    script("build.sh", include_str!("python/build.sh.tmpl")),
    file(".gitignore", include_str!("python/gitignore.tmpl")),
    // CPython's runtime imports wasi:sockets; the build plugs those imports with trapping stubs.
    file(
        "sockets-stub/stub.wit",
        include_str!("../../../plugins/examples/python/sockets-stub/stub.wit"),
    ),
    file(
        "sockets-stub/deps/wasi-io.wit",
        include_str!("../../../plugins/examples/python/sockets-stub/deps/wasi-io.wit"),
    ),
    file(
        "sockets-stub/deps/wasi-clocks.wit",
        include_str!("../../../plugins/examples/python/sockets-stub/deps/wasi-clocks.wit"),
    ),
    file(
        "sockets-stub/deps/wasi-sockets.wit",
        include_str!("../../../plugins/examples/python/sockets-stub/deps/wasi-sockets.wit"),
    ),
    CONTRACT,
    TEST_SH,
    README,
];

const JS: &[Template] = &[
    file("app.js", include_str!("js/app.js.tmpl")),
    file("logic.js", include_str!("js/logic.js.tmpl")),
    file("logic.test.js", include_str!("js/logic.test.js.tmpl")),
    file("package.json", include_str!("js/package.json.tmpl")),
    // The example's lock file pins every package jco and its engines pull in; render() renames it.
    file(
        "package-lock.json",
        include_str!("../../../plugins/examples/js/json_query/package-lock.json"),
    ),
    file("bundle.config.js", include_str!("js/bundle.config.js.tmpl")),
    script("build.sh", include_str!("js/build.sh.tmpl")),
    file(".gitignore", include_str!("js/gitignore.tmpl")),
    CONTRACT,
    TEST_SH,
    README,
];

const C: &[Template] = &[
    file("plugin.c", include_str!("c/plugin.c.tmpl")),
    // The example's JSON helpers: enough to read string members of the input and to write output.
    file(
        "json.h",
        include_str!("../../../plugins/examples/c/checksum/json.h"),
    ),
    file(
        "json.c",
        include_str!("../../../plugins/examples/c/checksum/json.c"),
    ),
    script("build.sh", include_str!("c/build.sh.tmpl")),
    file(".gitignore", include_str!("c/gitignore.tmpl")),
    CONTRACT,
    TEST_SH,
    README,
];

/// The WASI 0.3 contract (`toolhost:plugin@0.2.0`), as `wit/plugin.wit` of a WASI 0.3 project.
const CONTRACT_V2: Template = file(
    "wit/plugin.wit",
    include_str!("../../../wit/v0.2/plugin.wit"),
);

/// A WASI 0.3 contract plugin in Rust: `call` is an async fn that streams its updates.
const RUST_WASI3: &[Template] = &[
    file("Cargo.toml", include_str!("rust-wasi3/Cargo.toml.tmpl")),
    file("src/lib.rs", include_str!("rust-wasi3/lib.rs.tmpl")),
    script("build.sh", include_str!("rust/build.sh.tmpl")),
    file(".gitignore", include_str!("rust/gitignore.tmpl")),
    CONTRACT_V2,
    TEST_SH,
    README,
];

/// A generic component in Rust: its own world instead of the contract.
const GENERIC_RUST: &[Template] = &[
    file("Cargo.toml", include_str!("generic/Cargo.toml.tmpl")),
    file("src/lib.rs", include_str!("generic/lib.rs.tmpl")),
    file("wit/world.wit", include_str!("generic/world.wit.tmpl")),
    script("build.sh", include_str!("generic/build.sh.tmpl")),
    file(".gitignore", include_str!("rust/gitignore.tmpl")),
    script("test.sh", include_str!("generic/test.sh.tmpl")),
    file("README.md", include_str!("generic/README.md.tmpl")),
];

/// The files of a generic project in `lang`, if `toolhost new --generic` offers that language.
pub(super) fn generic(lang: Lang) -> Option<&'static [Template]> {
    match lang {
        Lang::Rust => Some(GENERIC_RUST),
        Lang::Python | Lang::Js | Lang::C => None,
    }
}

/// The files of a WASI 0.3 project in `lang`, if `toolhost new --wasi 0.3` offers that language.
pub(super) fn wasi3(lang: Lang) -> Option<&'static [Template]> {
    match lang {
        Lang::Rust => Some(RUST_WASI3),
        Lang::Python | Lang::Js | Lang::C => None,
    }
}

/// The files of a project in `lang`.
pub(super) fn for_lang(lang: Lang) -> &'static [Template] {
    match lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::Js => JS,
        Lang::C => C,
    }
}
