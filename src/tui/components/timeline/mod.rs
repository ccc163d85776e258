mod draw;
pub mod verdicts;

pub use draw::*;
