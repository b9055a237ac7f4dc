//! A daemon's services over one real tool, for the stages' unit tests: `double`, a component
//! written here in WAT whose one export doubles a `u32` (a generic component: its WIT becomes the
//! tool), in a temporary folder with its own config and audit log.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use toolhost_config::config::{Config, Overrides, RawConfig};

use super::services::Services;
use crate::audit::AuditLog;
use crate::registry::{Registry, Tool};
use crate::sandbox::Sandbox;

/// A component exporting `double(x: u32) -> u32`, which needs no memory: arguments and result
/// are flat.
const DOUBLE: &str = r#"(component
  (core module $m
    (func (export "double") (param i32) (result i32)
      local.get 0
      local.get 0
      i32.add))
  (core instance $i (instantiate $m))
  (func (export "double") (param "x" u32) (result u32)
    (canon lift (core func $i "double"))))"#;

/// The services of a daemon serving `double`.
pub(super) struct Fixture {
    /// The folder of the plugin, config and audit log, removed when the fixture drops.
    _dir: tempfile::TempDir,
    pub(super) services: Arc<Services>,
}

impl Fixture {
    /// The services under `config` (toolhost.toml's text), with `double` loaded.
    pub(super) async fn open(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::write(plugins.join("double.wasm"), wat::parse_str(DOUBLE).unwrap()).unwrap();
        let config = Arc::new(read(dir.path(), config));
        let sandbox = Arc::new(Sandbox::new(&config.engine_options()).unwrap());
        let registry = Registry::open(sandbox, config.clone()).await.unwrap();
        let path = config.audit_path.clone().expect("the audit log is on");
        let audit = AuditLog::open(path, config.audit.clone()).unwrap();
        let services = Services::new(config, Arc::new(registry), audit, 2);
        Self {
            _dir: dir,
            services,
        }
    }

    /// The one tool served.
    pub(super) fn tool(&self) -> Arc<Tool> {
        let catalog = self.services.registry.catalog();
        let mut tools = catalog.tools.values();
        let tool = tools.next().cloned().expect("double is served");
        assert!(tools.next().is_none());
        tool
    }

    /// The audit log's lines so far.
    pub(super) fn audit_lines(&self) -> Vec<Value> {
        let path = self.services.audit.path().unwrap();
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// `text` as the daemon reads it from `dir`'s toolhost.toml.
fn read(dir: &Path, text: &str) -> Config {
    let raw: RawConfig = toml::from_str(text).unwrap();
    Config::from_raw(raw, dir, &Overrides::default()).unwrap()
}

#[tokio::test]
async fn the_fixture_serves_its_tool() {
    let fixture = Fixture::open("").await;
    let tool = fixture.tool();
    assert!(tool.spec.name.contains("double"), "{}", tool.spec.name);
    assert!(fixture.audit_lines().is_empty());
}
