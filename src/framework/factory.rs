//! How plugins are built: the registry maps a plugin name to its factory, and each plugin's
//! factory (in the plugin's own module) reads and validates its own args, as upstream's
//! `New` functions do. The framework only calls factories; it names no plugin.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::{FieldError, PluginArgs, TypedArgs};
use crate::features::Features;
use crate::plugin::Plugin;

/// What a plugin factory is given.
pub struct FactoryContext<'a> {
    pub args: Option<&'a PluginArgs>,
    pub profile_name: &'a str,
    /// The version and gates the plugin behaves as (upstream's `feature.Features`).
    pub features: &'a Features,
}

impl FactoryContext<'_> {
    /// The plugin's args as its own type: the defaults when the profile gives none, an
    /// error when they are another plugin's.
    pub fn args<T: TypedArgs>(&self) -> Result<T, BuildError> {
        match self.args {
            None => Ok(T::defaulted(self.features)),
            Some(a) if a.is_absent() => Ok(T::defaulted(self.features)),
            Some(a) => T::of(a).cloned().ok_or(BuildError::WrongArgs {
                want: T::KIND,
                got: a.kind().unwrap_or("unknown args"),
            }),
        }
    }
}

/// Why a plugin could not be built; `Framework::new` names the plugin around it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// The profile gave args of another type (upstream's message).
    #[error("want args to be of type {want}, got {got}")]
    WrongArgs {
        want: &'static str,
        got: &'static str,
    },
    /// The args failed validation, field by field.
    #[error("{}", joined(.0))]
    Invalid(Vec<FieldError>),
    /// The plugin refused its args in its own words.
    #[error("{0}")]
    Plugin(String),
}

fn joined(errs: &[FieldError]) -> String {
    let all: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    all.join(", ")
}

impl BuildError {
    /// `Ok` when validation found nothing.
    pub fn check(errs: Vec<FieldError>) -> Result<(), BuildError> {
        if errs.is_empty() {
            Ok(())
        } else {
            Err(BuildError::Invalid(errs))
        }
    }
}

impl From<String> for BuildError {
    fn from(s: String) -> BuildError {
        BuildError::Plugin(s)
    }
}

pub type Built = Result<Arc<dyn Plugin>, BuildError>;

pub type PluginFactory = fn(&FactoryContext) -> Built;

/// The factory of a plugin without args: its `Default`.
pub fn plain<P: Plugin + Default + 'static>(_: &FactoryContext) -> Built {
    Ok(Arc::new(P::default()))
}

/// Plugin names to factories.
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<&'static str, PluginFactory>,
}

impl Registry {
    pub fn register(&mut self, name: &'static str, f: PluginFactory) {
        self.factories.insert(name, f);
    }

    pub fn get(&self, name: &str) -> Option<PluginFactory> {
        self.factories.get(name).copied()
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.factories.keys().copied()
    }

    /// Each plugin name with its factory, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, PluginFactory)> + '_ {
        self.factories.iter().map(|(n, f)| (*n, *f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FieldPath, VolumeBindingArgs};

    static FEATURES: std::sync::LazyLock<crate::features::Features> =
        std::sync::LazyLock::new(Default::default);

    fn ctx(args: Option<&PluginArgs>) -> FactoryContext<'_> {
        FactoryContext {
            args,
            profile_name: "p",
            features: &FEATURES,
        }
    }

    #[test]
    fn args_are_the_plugins_own_or_the_defaults() {
        let none: VolumeBindingArgs = ctx(None).args().unwrap();
        assert_eq!(none, VolumeBindingArgs::default());
        let absent = PluginArgs::Other(serde_json::Value::Null);
        let got: VolumeBindingArgs = ctx(Some(&absent)).args().unwrap();
        assert_eq!(got, VolumeBindingArgs::default());
        let own = PluginArgs::VolumeBinding(VolumeBindingArgs {
            bind_timeout_seconds: 7,
            ..Default::default()
        });
        let got: VolumeBindingArgs = ctx(Some(&own)).args().unwrap();
        assert_eq!(got.bind_timeout_seconds, 7);
    }

    #[test]
    fn another_plugins_args_are_refused_in_upstreams_words() {
        let other = PluginArgs::DefaultPreemption(Default::default());
        let err = ctx(Some(&other)).args::<VolumeBindingArgs>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "want args to be of type VolumeBindingArgs, got DefaultPreemptionArgs"
        );
        let raw = PluginArgs::Other(serde_json::json!({"x": 1}));
        let err = ctx(Some(&raw)).args::<VolumeBindingArgs>().unwrap_err();
        assert!(err.to_string().ends_with("got unknown args"), "{err}");
    }

    #[test]
    fn validation_errors_are_joined() {
        assert_eq!(BuildError::check(vec![]), Ok(()));
        let e = |f: &str| FieldError::required(FieldPath::root().child(f), "");
        let err = BuildError::check(vec![e("a"), e("b")]).unwrap_err();
        assert_eq!(err.to_string(), format!("{}, {}", e("a"), e("b")));
    }
}
