//! The DPP controls of gfx90a, one row each: the range of `dpp_ctrl`
//! values, how LLVM prints one, and which lane each lane reads from. The
//! decoder accepts exactly the controls of [`DPP_CTRLS`], the printer and
//! the executor (`wave.rs::dpp`) take their text and source lane from the
//! row, so adding a control is one row here (see docs/simulator.md).

const LANES: usize = 64;

/// One DPP control (or a range of them, numbered by `ctrl - first`).
pub struct DppCtrl {
    /// First and last `dpp_ctrl` value of the row.
    pub first: u16,
    /// Last value.
    pub last: u16,
    /// The text LLVM prints for control `ctrl`.
    pub text: fn(ctrl: u16) -> String,
    /// The lane `lane` reads src0 from (`None`: out of its row or wave;
    /// `bound_ctrl` decides the value).
    pub source: fn(ctrl: u16, lane: usize) -> Option<usize>,
}

/// Lane `lane`'s position in its row of 16 and the row's first lane.
fn row(lane: usize) -> (usize, usize) {
    (lane & !15, lane & 15)
}

/// The controls, in `dpp_ctrl` order.
pub const DPP_CTRLS: &[DppCtrl] = &[
    DppCtrl {
        first: 0,
        last: 0xff,
        text: |c| {
            format!(
                "quad_perm:[{},{},{},{}]",
                c & 3,
                (c >> 2) & 3,
                (c >> 4) & 3,
                (c >> 6) & 3
            )
        },
        source: |c, lane| Some((lane & !3) | ((c >> (2 * (lane & 3))) & 3) as usize),
    },
    DppCtrl {
        first: 0x101,
        last: 0x10f,
        text: |c| format!("row_shl:{}", c - 0x100),
        source: |c, lane| {
            let n = (c - 0x100) as usize;
            (row(lane).1 + n < 16).then_some(lane + n)
        },
    },
    DppCtrl {
        first: 0x111,
        last: 0x11f,
        text: |c| format!("row_shr:{}", c - 0x110),
        source: |c, lane| {
            let n = (c - 0x110) as usize;
            (row(lane).1 >= n).then(|| lane - n)
        },
    },
    DppCtrl {
        first: 0x121,
        last: 0x12f,
        text: |c| format!("row_ror:{}", c - 0x120),
        source: |c, lane| {
            let (first, r) = row(lane);
            Some(first | ((r + 16 - (c - 0x120) as usize) & 15))
        },
    },
    DppCtrl {
        first: 0x130,
        last: 0x130,
        text: |_| "wave_shl:1".into(),
        source: |_, lane| (lane < 63).then_some(lane + 1),
    },
    DppCtrl {
        first: 0x134,
        last: 0x134,
        text: |_| "wave_rol:1".into(),
        source: |_, lane| Some((lane + 1) % LANES),
    },
    DppCtrl {
        first: 0x138,
        last: 0x138,
        text: |_| "wave_shr:1".into(),
        source: |_, lane| lane.checked_sub(1),
    },
    DppCtrl {
        first: 0x13c,
        last: 0x13c,
        text: |_| "wave_ror:1".into(),
        source: |_, lane| Some((lane + LANES - 1) % LANES),
    },
    DppCtrl {
        first: 0x140,
        last: 0x140,
        text: |_| "row_mirror".into(),
        source: |_, lane| {
            let (first, r) = row(lane);
            Some(first | (15 - r))
        },
    },
    DppCtrl {
        first: 0x141,
        last: 0x141,
        text: |_| "row_half_mirror".into(),
        source: |_, lane| Some((lane & !7) | (7 - (lane & 7))),
    },
    DppCtrl {
        first: 0x142,
        last: 0x142,
        text: |_| "row_bcast:15".into(),
        source: |_, lane| {
            let first = row(lane).0;
            (first >= 16).then(|| first - 1)
        },
    },
    DppCtrl {
        first: 0x143,
        last: 0x143,
        text: |_| "row_bcast:31".into(),
        source: |_, lane| (row(lane).0 >= 32).then_some(31),
    },
];

/// The row of control `ctrl`.
pub fn dpp_ctrl(ctrl: u16) -> Option<&'static DppCtrl> {
    DPP_CTRLS
        .iter()
        .find(|r| (r.first..=r.last).contains(&ctrl))
}
