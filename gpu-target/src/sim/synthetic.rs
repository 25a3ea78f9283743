//! Hand-assembled code objects for tests and benchmarks that need waves
//! that keep running until told otherwise.

use super::elf::KERNEL_DESCRIPTOR_SIZE;

/// Offset of the code in [`spin_image`].
pub const SPIN_CODE_OFFSET: u64 = 256;

/// `s_endpgm`, to overwrite the loop with.
pub const S_ENDPGM: [u8; 4] = 0xBF81_0000u32.to_le_bytes();

/// A memory image: a kernel descriptor at offset 0 and, at
/// [`SPIN_CODE_OFFSET`], `loop: s_add_u32 s0, s0, 1; s_branch loop`.
/// Writing [`S_ENDPGM`] over the loop ends the waves.
pub fn spin_image() -> Vec<u8> {
    let mut img = vec![0u8; 512];
    let kd = &mut img[..KERNEL_DESCRIPTOR_SIZE];
    kd[16..24].copy_from_slice(&(SPIN_CODE_OFFSET as i64).to_le_bytes());
    let code = [0x8000_8100u32, 0xBF82_FFFE];
    for (i, w) in code.iter().enumerate() {
        let o = SPIN_CODE_OFFSET as usize + 4 * i;
        img[o..o + 4].copy_from_slice(&w.to_le_bytes());
    }
    img
}
