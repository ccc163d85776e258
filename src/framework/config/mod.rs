//! `KubeSchedulerConfiguration`: decoding, defaulting and validation as kube-scheduler does
//! them at a version and feature gates (`Features`); the result carries them.
//!
//! * [`parse_str_for`] / [`load_file_for`] read `kubescheduler.config.k8s.io/v1` (or `v1beta3`,
//!   removed upstream in 1.29 and accepted here as the same schema) from YAML or JSON,
//!   decode strictly (unknown and duplicate fields are errors), apply upstream's defaults
//!   (the default plugin set merged with the user's, default plugin args) and validate.
//! * [`default_configuration_for`] is what kube-scheduler runs with when given no `--config`.
//! * The forms without `_for` use `Features::default()` (v1.35 at its default gates).
//! * Errors name the file, the line and column when known, and the field path.

pub mod args;
pub mod decode;
pub mod defaults;
pub mod duration;
pub mod error;
pub mod field;
pub mod node;
pub mod types;
pub mod validation;

use std::path::Path;

use crate::features::Features;

pub use args::*;
pub use defaults::{default_plugins, merge_plugin_set, merge_plugins};
pub use duration::Duration;
pub use error::{ConfigError, LocatedFieldError, LocatedMessage};
pub use field::{BadValue, FieldError, FieldErrorType, FieldPath};
pub use node::Pos;
pub use types::*;
pub use validation::{validate, validate_node_resources_fit_args};

/// `default_configuration_for` v1.35 at its default gates.
pub fn default_configuration() -> KubeSchedulerConfiguration {
    default_configuration_for(&Features::default())
}

/// The configuration kube-scheduler uses when started without `--config`: an empty v1
/// configuration, defaulted for `features`.
pub fn default_configuration_for(features: &Features) -> KubeSchedulerConfiguration {
    parse_str_for(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
        "<default>",
        features,
    )
    .expect("the empty configuration is valid")
}

/// `load_file_for` v1.35 at its default gates.
pub fn load_file(path: &Path) -> Result<KubeSchedulerConfiguration, ConfigError> {
    load_file_for(path, &Features::default())
}

/// Reads, decodes, defaults and validates a configuration file (YAML or JSON) for
/// `features`.
pub fn load_file_for(
    path: &Path,
    features: &Features,
) -> Result<KubeSchedulerConfiguration, ConfigError> {
    let name = path.display().to_string();
    // Read at most the parser's budget and one byte: a pipe or a device has no size to
    // check first.
    let limit = node::MAX_INPUT_BYTES;
    let bytes = std::fs::File::open(path)
        .and_then(|f| crate::limits::read_to_end(f, limit, "a scheduler configuration"))
        .map_err(|error| ConfigError::Io {
            file: name.clone(),
            error,
        })?;
    let text = String::from_utf8(bytes).map_err(|e| ConfigError::Syntax {
        file: name.clone(),
        pos: Pos::default(),
        message: format!("not UTF-8 text: {e}"),
    })?;
    parse_str_for(&text, &name, features)
}

/// `parse_str_for` v1.35 at its default gates.
pub fn parse_str(text: &str, source: &str) -> Result<KubeSchedulerConfiguration, ConfigError> {
    parse_str_for(text, source, &Features::default())
}

/// Decodes, defaults and validates a configuration given as text (YAML or JSON) as the
/// scheduler of `features` does. `source` names it in errors (usually the file name).
pub fn parse_str_for(
    text: &str,
    source: &str,
    features: &Features,
) -> Result<KubeSchedulerConfiguration, ConfigError> {
    let root = node::parse(text).map_err(|e| ConfigError::Syntax {
        file: source.to_string(),
        pos: e.pos,
        message: e.message,
    })?;
    let decoded = decode::decode(&root, features).map_err(|errors| ConfigError::Decode {
        file: source.to_string(),
        errors,
    })?;
    let mut cfg = defaults::set_defaults(decoded);
    cfg.source.name = source.to_string();
    let errors = validate(&cfg);
    if !errors.is_empty() {
        return Err(cfg.locate_errors(errors));
    }
    Ok(cfg)
}

impl KubeSchedulerConfiguration {
    /// Turns field errors about this configuration into a [`ConfigError`] that names the
    /// file and, where the field was written in it, the line. The framework uses this for
    /// errors found later, such as `validate_node_resources_fit_args` at plugin construction.
    pub fn locate_errors(&self, errors: Vec<FieldError>) -> ConfigError {
        ConfigError::Invalid {
            file: self.source.name.clone(),
            errors: errors
                .into_iter()
                .map(|error| LocatedFieldError {
                    pos: self.source.position_of(&error.field).unwrap_or_default(),
                    error,
                })
                .collect(),
        }
    }

    /// Where an error found while building profile `profile` points: `FILE:LINE:COL: FIELD`
    /// for the entry that names `plugin` (in the list of extension point `point`, an
    /// interface name such as `FilterPlugin`, when given), or for the profile's score
    /// plugins when `score` (their weights overflow); `FILE: profiles[N]` when the file
    /// does not say.
    pub fn profile_error_location(
        &self,
        profile: usize,
        plugin: Option<&str>,
        point: Option<&str>,
        score: bool,
    ) -> String {
        let src = &self.source;
        // "FilterPlugin", "PreScorePlugin": the field is the interface name without
        // "Plugin", starting lower case.
        let point = point.and_then(|w| w.strip_suffix("Plugin")).map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
                .unwrap_or_default()
        });
        let field = match plugin {
            Some(plugin) => src.plugin_entry(profile, plugin, point.as_deref()).cloned(),
            None if score => Some(
                FieldPath::new("profiles")
                    .index(profile)
                    .child("plugins")
                    .child("score"),
            ),
            None => None,
        };
        match field.and_then(|f| src.position_of(&f).map(|pos| (f, pos))) {
            Some((f, pos)) => format!("{}:{}:{}: {f}", src.name, pos.line, pos.column),
            None => format!("{}: profiles[{profile}]", src.name),
        }
    }

    /// The path of a profile's `pluginConfig` entry for a plugin (`profiles[0].pluginConfig[2]`),
    /// for reporting errors about its args.
    pub fn plugin_config_path(&self, profile: usize, plugin: &str) -> Option<FieldPath> {
        let i = self
            .profiles
            .get(profile)?
            .plugin_config
            .iter()
            .position(|c| c.name == plugin)?;
        Some(
            FieldPath::new("profiles")
                .index(profile)
                .child("pluginConfig")
                .index(i),
        )
    }
}

#[cfg(test)]
mod tests;
