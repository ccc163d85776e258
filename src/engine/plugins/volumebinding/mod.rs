//! VolumeBinding (upstream `volumebinding`): the plugin, the volume binder it drives, and
//! storage capacity (capacity.rs: CSIStorageCapacity checks and, with the
//! StorageCapacityScoring gate, the score).

pub mod binder;
pub mod capacity;
mod hints;
pub mod volume_binding;

pub use volume_binding::{NAME, VolumeBinding, binding_updates, factory};
