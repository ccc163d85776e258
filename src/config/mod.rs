//! Temporary stand-in for the configuration types (replaced by the full config module).
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default)]
pub struct PluginRef {
    pub name: String,
    pub weight: i32,
}
#[derive(Debug, Clone, Default)]
pub struct PluginSet {
    pub enabled: Vec<PluginRef>,
    pub disabled: Vec<PluginRef>,
}
#[derive(Debug, Clone, Default)]
pub struct Plugins {
    pub pre_enqueue: PluginSet,
    pub queue_sort: PluginSet,
    pub pre_filter: PluginSet,
    pub filter: PluginSet,
    pub post_filter: PluginSet,
    pub pre_score: PluginSet,
    pub score: PluginSet,
    pub reserve: PluginSet,
    pub permit: PluginSet,
    pub pre_bind: PluginSet,
    pub bind: PluginSet,
    pub post_bind: PluginSet,
    pub multi_point: PluginSet,
}
#[derive(Debug, Clone)]
pub enum PluginArgs {
    Other(serde_json::Value),
}
#[derive(Debug, Clone)]
pub struct PluginConfig {
    pub name: String,
    pub args: PluginArgs,
}
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Plugins,
    pub plugin_config: Vec<PluginConfig>,
}
pub type Unused = BTreeMap<String, String>;
