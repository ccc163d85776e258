//! NodeResourcesFit and NodeResourcesBalancedAllocation (upstream `noderesources`).

pub mod balanced_allocation;
pub mod fit;
pub mod resource_allocation;

pub use balanced_allocation::BalancedAllocation;
pub use fit::Fit;
