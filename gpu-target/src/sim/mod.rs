//! The simulated AMD GPU: code-object loader, gfx90a decoder and
//! interpreter, and the device that schedules waves.

pub mod atomics;
pub mod decode;
pub mod device;
pub mod dpp;
pub mod elf;
pub mod handoff;
pub mod icache;
pub mod launch;
pub mod memops;
pub mod memory;
pub mod regs;
pub mod rendezvous;
#[cfg(test)]
mod row_tests;
pub mod salu;
pub mod simd;
pub mod storm;
pub mod synthetic;
pub mod valu;
pub mod vop3p;
pub mod wave;
