mod draw;
pub mod past;
pub mod pods;

pub use draw::*;
