//! NodeVolumeLimits (upstream `nodevolumelimits`): the CSI volume-count limit per node
//! and driver. Only the CSI plugin remains in 1.35 (the in-tree EBS / GCE PD / Azure Disk /
//! Cinder limits plugins were removed; their volumes are counted through CSI migration).

pub mod csi;
pub mod utils;

pub use csi::{CsiLimits, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NAME};
