//! `pull`, `push` and `sign`: plugins to and from registries, reported one line per plugin.

use std::path::Path;

use toolhost::distribution;
use toolhost_call::text::one_line;
use toolhost_config::config::Config;
use toolhost_trust::source::OciRef;
use toolhost_trust::trust::SigningKey;

use super::progress::Bar;
use super::{Failure, print, usage};

/// `pull`: every source (or the named ones) into the store and the lockfile.
pub(super) async fn pull(config: &Config, only: &[String], update: bool) -> Result<u8, Failure> {
    for name in only {
        if config.plugins.get(name).is_none_or(|p| p.source.is_none()) {
            return Err(usage(format!(
                "plugin {} has no `source` in the config",
                one_line(name)
            )));
        }
    }
    let bar = Bar::new("pulling");
    let report = distribution::pull(config, only, update, |name, done, total| {
        bar.set(done, total, &format!("fetching {name}"));
    })
    .await;
    bar.clear();
    let report = report?;
    for p in &report.pulled {
        let v = &p.provenance;
        let signature = v
            .signature
            .as_ref()
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        let state = if p.fetched { "pulled" } else { "up to date" };
        print(format_args!(
            "{} {state}: {} {}{signature}",
            one_line(&p.name),
            one_line(&v.source),
            v.manifest.as_ref().unwrap_or(&v.digest),
        ))?;
        if let Some(now) = &p.moved {
            print(format_args!(
                "  note: the tag now points to {now}; the lock keeps the digest above \
                 (`toolhost pull --update` follows the tag)"
            ))?;
        }
    }
    for (name, why) in &report.failed {
        eprintln!(
            "{} not pulled: {}",
            one_line(name),
            one_line(&why.to_string())
        );
    }
    if report.pulled.is_empty() && report.failed.is_empty() {
        print("no plugin has a `source` in the config")?;
    } else if report.lock_changed {
        print(format_args!("wrote {}", config.sources.lock_path.display()))?;
    }
    Ok(u8::from(!report.failed.is_empty()))
}

/// `push FILE oci://…`: prints the manifest digest.
pub(super) async fn push(config: &Config, file: &Path, target: &str) -> Result<u8, Failure> {
    let target = parse_target(target)?;
    let digest = distribution::push(&config.sources, file, &target).await?;
    print(format_args!("pushed {target} {digest}"))?;
    Ok(0)
}

/// `sign oci://… --key FILE`.
pub(super) async fn sign(config: &Config, target: &str, key: &Path) -> Result<u8, Failure> {
    let target = parse_target(target)?;
    let pem = std::fs::read(key).map_err(|source| Failure::Read {
        what: key.display().to_string(),
        source,
    })?;
    let key = SigningKey::from_pem(&key.display().to_string(), &pem)?;
    let digest = distribution::sign(&config.sources, &target, &key).await?;
    print(format_args!("signed {}@{digest}", target.repository_name()))?;
    Ok(0)
}

/// `oci://…` as a reference.
fn parse_target(target: &str) -> Result<OciRef, Failure> {
    Ok(target.parse()?)
}
