//! CycleState: what plugins store for one pod's scheduling cycle.
//!
//! Unlike upstream's opaque values, every entry here can render itself as a tree, which is
//! what the debugger shows as the CycleState pane.

use std::any::Any;
use std::fmt;

use serde::Serialize;

/// A labelled tree, the display form of a CycleState entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct StateTree {
    pub label: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<StateTree>,
}

impl StateTree {
    pub fn leaf(label: impl Into<String>) -> StateTree {
        StateTree {
            label: label.into(),
            children: Vec::new(),
        }
    }

    pub fn node(label: impl Into<String>, children: Vec<StateTree>) -> StateTree {
        StateTree {
            label: label.into(),
            children,
        }
    }

    /// `key: value` leaf.
    pub fn kv(key: &str, value: impl fmt::Display) -> StateTree {
        StateTree::leaf(format!("{key}: {value}"))
    }

    /// A node listing items, or "key: (none)" when empty.
    pub fn list<I, T>(key: &str, items: I) -> StateTree
    where
        I: IntoIterator<Item = T>,
        T: Into<StateTree>,
    {
        let children: Vec<StateTree> = items.into_iter().map(Into::into).collect();
        if children.is_empty() {
            StateTree::leaf(format!("{key}: (none)"))
        } else {
            StateTree::node(format!("{key} ({})", children.len()), children)
        }
    }
}

impl From<String> for StateTree {
    fn from(s: String) -> Self {
        StateTree::leaf(s)
    }
}

impl From<&str> for StateTree {
    fn from(s: &str) -> Self {
        StateTree::leaf(s)
    }
}

/// How a state value shows itself.
pub trait RenderState {
    fn render(&self) -> StateTree;
}

/// A value stored in CycleState. Implemented for every `Clone + RenderState` type.
pub trait StateData: Any + Send + Sync {
    fn clone_data(&self) -> Box<dyn StateData>;
    fn render(&self) -> StateTree;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Send + Sync + Clone + RenderState> StateData for T {
    fn clone_data(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn render(&self) -> StateTree {
        RenderState::render(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Upstream's `ErrNotFound`; its text is visible in one quirk of the real scheduler's
/// messages (DynamicResources' PostFilter when its PreFilter never ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not found")]
pub struct NotFound;

/// Keys and plugin names are `&'static str` constants, so the same pointer almost always
/// means the same key; compare that first and fall back to the text.
#[inline]
pub fn same_name(a: &str, b: &str) -> bool {
    (a.len() == b.len() && std::ptr::eq(a.as_ptr(), b.as_ptr())) || a == b
}

#[derive(Default)]
pub struct CycleState {
    entries: Vec<(&'static str, Box<dyn StateData>)>,
    skip_filter_plugins: Vec<&'static str>,
    /// The same set as bits over the positions of the profile's Filter plugins, so the
    /// per-node loop tests a bit instead of searching names.
    skip_filter_mask: u64,
    skip_score_plugins: Vec<&'static str>,
    skip_pre_bind_plugins: Vec<&'static str>,
    /// Keys written (or borrowed mutably) since `take_written`: what a step changed,
    /// known without rendering or comparing anything.
    written: Vec<&'static str>,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            entries: self
                .entries
                .iter()
                .map(|(k, v)| (*k, v.clone_data()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_filter_mask: self.skip_filter_mask,
            skip_score_plugins: self.skip_score_plugins.clone(),
            skip_pre_bind_plugins: self.skip_pre_bind_plugins.clone(),
            written: Vec::new(),
        }
    }
}

impl fmt::Debug for CycleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(k, _)| k))
            .finish()
    }
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    fn mark_written(&mut self, key: &'static str) {
        if !self.written.iter().any(|k| same_name(k, key)) {
            self.written.push(key);
        }
    }

    /// The keys written since the last call (the entries the last step changed).
    pub fn take_written(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.written)
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        self.mark_written(key);
        let boxed: Box<dyn StateData> = Box::new(value);
        match self.entries.iter_mut().find(|(k, _)| same_name(k, key)) {
            Some(e) => e.1 = boxed,
            None => self.entries.push((key, boxed)),
        }
    }

    pub fn read<T: 'static>(&self, key: &str) -> Result<&T, NotFound> {
        self.entries
            .iter()
            .find(|(k, _)| same_name(k, key))
            .and_then(|(_, v)| v.as_any().downcast_ref::<T>())
            .ok_or(NotFound)
    }

    pub fn read_mut<T: 'static>(&mut self, key: &str) -> Result<&mut T, NotFound> {
        if let Some(k) = self
            .entries
            .iter()
            .map(|(k, _)| *k)
            .find(|k| same_name(k, key))
        {
            self.mark_written(k);
        }
        self.entries
            .iter_mut()
            .find(|(k, _)| same_name(k, key))
            .and_then(|(_, v)| v.as_any_mut().downcast_mut::<T>())
            .ok_or(NotFound)
    }

    pub fn delete(&mut self, key: &str) {
        if let Some(k) = self
            .entries
            .iter()
            .map(|(k, _)| *k)
            .find(|k| same_name(k, key))
        {
            self.mark_written(k);
        }
        self.entries.retain(|(k, _)| *k != key);
    }

    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(k, _)| *k)
    }

    /// Records the Filter plugins PreFilter skipped; `filter_order` is the profile's
    /// Filter plugin list, used to derive the position mask.
    pub fn set_skip_filter_plugins(&mut self, plugins: Vec<&'static str>, filter_order: &[&str]) {
        self.skip_filter_mask = filter_order
            .iter()
            .enumerate()
            .filter(|(i, n)| *i < 64 && plugins.iter().any(|p| same_name(p, n)))
            .fold(0, |m, (i, _)| m | (1u64 << i));
        self.skip_filter_plugins = plugins;
    }

    /// Whether the Filter plugin at this position of the profile's list is skipped.
    #[inline]
    pub fn is_filter_skipped_at(&self, position: usize) -> bool {
        position < 64 && self.skip_filter_mask & (1u64 << position) != 0
    }

    pub fn skip_filter_plugins(&self) -> &[&'static str] {
        &self.skip_filter_plugins
    }

    pub fn is_filter_skipped(&self, plugin: &str) -> bool {
        self.skip_filter_plugins
            .iter()
            .any(|p| same_name(p, plugin))
    }

    pub fn is_score_skipped(&self, plugin: &str) -> bool {
        self.skip_score_plugins.iter().any(|p| same_name(p, plugin))
    }

    pub fn set_skip_score_plugins(&mut self, plugins: Vec<&'static str>) {
        self.skip_score_plugins = plugins;
    }

    pub fn skip_score_plugins(&self) -> &[&'static str] {
        &self.skip_score_plugins
    }

    pub fn set_skip_pre_bind_plugins(&mut self, plugins: Vec<&'static str>) {
        self.skip_pre_bind_plugins = plugins;
    }

    pub fn skip_pre_bind_plugins(&self) -> &[&'static str] {
        &self.skip_pre_bind_plugins
    }

    /// Every entry rendered, plus the skip sets, in insertion order.
    pub fn render(&self) -> Vec<StateTree> {
        let mut out: Vec<StateTree> = self
            .entries
            .iter()
            .map(|(k, v)| {
                let inner = v.render();
                if inner.children.is_empty() {
                    StateTree::leaf(format!("{k}: {}", inner.label))
                } else if inner.label == *k {
                    // A value that names itself after its key: one level, not two.
                    StateTree::node(*k, inner.children)
                } else {
                    StateTree::node(*k, vec![inner])
                }
            })
            .collect();
        if !self.skip_filter_plugins.is_empty() {
            out.push(StateTree::list(
                "SkipFilterPlugins",
                self.skip_filter_plugins.iter().copied(),
            ));
        }
        if !self.skip_score_plugins.is_empty() {
            out.push(StateTree::list(
                "SkipScorePlugins",
                self.skip_score_plugins.iter().copied(),
            ));
        }
        if !self.skip_pre_bind_plugins.is_empty() {
            out.push(StateTree::list(
                "SkipPreBindPlugins",
                self.skip_pre_bind_plugins.iter().copied(),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Counter(i64);
    impl RenderState for Counter {
        fn render(&self) -> StateTree {
            StateTree::leaf(self.0.to_string())
        }
    }

    #[test]
    fn write_read_clone_render() {
        let mut s = CycleState::new();
        assert_eq!(s.read::<Counter>("c"), Err(NotFound));
        s.write("c", Counter(1));
        s.read_mut::<Counter>("c").unwrap().0 += 1;
        let c = s.clone();
        s.write("c", Counter(10));
        assert_eq!(c.read::<Counter>("c").unwrap(), &Counter(2));
        assert_eq!(s.render()[0].label, "c: 10");
        assert_eq!(NotFound.to_string(), "not found");
    }

    #[derive(Clone, Debug)]
    struct Named(&'static str);
    impl RenderState for Named {
        fn render(&self) -> StateTree {
            StateTree::node(self.0, vec![StateTree::leaf("x")])
        }
    }

    #[test]
    fn a_value_named_as_its_key_is_one_level() {
        let mut s = CycleState::new();
        s.write("Same", Named("Same"));
        s.write("Key", Named("other"));
        let r = s.render();
        assert_eq!(
            (r[0].label.as_str(), r[0].children[0].label.as_str()),
            ("Same", "x")
        );
        assert_eq!(
            (r[1].label.as_str(), r[1].children[0].label.as_str()),
            ("Key", "other")
        );
    }
}
