//! The config loader: arbitrary `toolhost.toml` text (plus `--dir`, `--env` and `--mode` lines taken
//! out of it as command-line overrides) through `toml::from_str::<RawConfig>` and
//! `Config::from_raw`. Nothing may panic; a config that loads compiles its permission rules or says
//! why not, and every policy it yields has sane limits.
//!
//! Secrets read from files are redirected to one file in the fuzzing folder, so that the fuzzer
//! cannot make the loader read `/dev/zero` (which would never end; the loader trusts its operator).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolhost_config::config::{Config, Overrides, RawConfig};
use toolhost_gate::gate::{Mode, Permissions};

/// A folder with `work/` and `plugins/` (for grants to name) and `secret.txt`.
fn base() -> &'static PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("toolhost-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("work")).unwrap();
        std::fs::create_dir_all(dir.join("plugins")).unwrap();
        std::fs::write(dir.join("secret.txt"), "0123456789abcdef\n").unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut overrides = Overrides::default();
    let mut toml_text = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("--dir ") {
            overrides.dirs.push(v.to_string());
        } else if let Some(v) = line.strip_prefix("--env ") {
            overrides.env.push(v.to_string());
        } else if let Some(v) = line.strip_prefix("--mode ") {
            overrides.mode = v.parse::<Mode>().ok();
        } else {
            toml_text.push_str(line);
            toml_text.push('\n');
        }
    }
    let Ok(mut raw) = toml::from_str::<RawConfig>(&toml_text) else {
        return;
    };
    for plugin in raw.plugins.values_mut() {
        for secret in plugin.secrets.values_mut() {
            if secret.from_file.is_some() {
                secret.from_file = Some(PathBuf::from("secret.txt"));
            }
        }
    }
    let Ok(config) = Config::from_raw(raw, base(), &overrides) else {
        return;
    };
    // A config that loads has compiled every plugin's rules: the global ones must compile alone.
    assert!(Permissions::new(&config.permissions, None).is_ok());
    for policy in config
        .plugins
        .values()
        .chain(std::iter::once(&config.default_policy))
    {
        assert!(policy.limits.memory_bytes >= 1 << 20 && policy.limits.memory_bytes <= 4096 << 20);
        assert!(!policy.limits.timeout.is_zero() && policy.limits.fuel > 0);
        assert!(
            policy.output_bytes > 0 && policy.input.max_bytes > 0 && policy.input.max_depth > 0
        );
        for d in &policy.grants.dirs {
            assert!(d.host.is_dir() && !d.guest.is_empty());
        }
    }
    assert!(config.server.max_concurrent_calls > 0);
    assert!(config.server.token.is_some() || config.server.http.ip().is_loopback());
});
