//! Progress bars for the commands a person waits on: `list` while plugins compile (a first
//! compile takes seconds to a minute) and `pull` while components download. Drawn on stderr
//! only when it is a terminal; a pipe or a log file gets nothing.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolhost::host::HostError;
use toolhost::registry::Registry;
use toolhost_call::text::one_line;

use super::Failure;

/// A bar on stderr, or nothing when stderr is not a terminal.
pub(super) struct Bar(Option<ProgressBar>);

impl Bar {
    /// A bar titled `what`.
    pub(super) fn new(what: &'static str) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} {prefix} [{bar:24}] {pos}/{len} {elapsed} {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(what);
        bar.enable_steady_tick(Duration::from_millis(120));
        Self(Some(bar))
    }

    /// Whether anything is drawn.
    pub(super) fn is_drawn(&self) -> bool {
        self.0.is_some()
    }

    /// `done` of `total`, with what is under way now.
    pub(super) fn set(&self, done: usize, total: usize, now: &str) {
        if let Some(bar) = &self.0 {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(one_line(now).into_owned());
        }
    }

    /// Remove the bar: the command's own output follows.
    pub(super) fn clear(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Load `registry`'s plugins, showing which are compiling on a terminal.
pub(super) async fn load(registry: &Registry) -> Result<(), Failure> {
    let bar = Bar::new("loading plugins");
    let loading = registry.reload();
    tokio::pin!(loading);
    let mut tick = tokio::time::interval(Duration::from_millis(150));
    let loaded = loop {
        tokio::select! {
            loaded = &mut loading => break loaded,
            _ = tick.tick(), if bar.is_drawn() => {
                let catalog = registry.catalog();
                let compiling: Vec<&str> = catalog
                    .loading
                    .iter()
                    .filter(|(_, l)| l.compiling.is_some())
                    .map(|(name, _)| name.as_str())
                    .take(1)
                    .collect();
                let now = match compiling.first() {
                    Some(name) => format!("compiling {name}"),
                    None => String::new(),
                };
                let done = catalog.plugins.len();
                bar.set(done, done + catalog.loading.len(), &now);
            }
        }
    };
    bar.clear();
    loaded
        .map(|_| ())
        .map_err(|e| Failure::from(HostError::from(e)))
}
