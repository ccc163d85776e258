//! VolumeBinding (upstream `volumebinding`): the plugin and the volume binder it drives.
//! Capacity scoring (`scorer.go`) belongs to the StorageCapacityScoring gate, off in 1.35,
//! so the plugin never scores.

pub mod binder;
mod hints;
pub mod volume_binding;

pub use volume_binding::{NAME, VolumeBinding, binding_updates, factory};
