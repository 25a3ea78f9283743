//! gdb agent expressions: the bytecode of target-side breakpoint
//! conditions (`Z0,addr,kind;X len,bytes`, gdb 13 "Agent Expressions"
//! appendix; opcodes as gdb's `gdbsupport/ax.def` numbers them).
//!
//! The evaluator is I/O-free and panic-free: registers and memory come
//! through [`AgentContext`], the stack holds at most [`STACK_LIMIT`]
//! values and at most [`STEP_LIMIT`] instructions run (a `goto` loop ends
//! with an error), every jump and operand is bounds-checked. Tracing
//! opcodes (`trace`, `tracev`, …) collect nothing here (a condition has no
//! trace frame); `printf` runs only in breakpoint commands
//! ([`run_command`], gdb's agent-style `dprintf`); floating point and the
//! trace-state variables (`getv`/`setv`) are refused with
//! [`AgentError::Unsupported`].

use std::fmt;

mod printf;

/// Most values on the stack (gdbserver's own evaluator allows 100).
pub const STACK_LIMIT: usize = 100;
/// Most instructions one evaluation runs.
pub const STEP_LIMIT: usize = 100_000;
/// Longest bytecode accepted (gdb's `MAX_AGENT_EXPR_LEN` for tracepoints
/// is 184 bytes; conditions are usually far shorter).
pub const CODE_LIMIT: usize = 4096;

/// Where the expression reads the stopped thread's state.
pub trait AgentContext {
    /// Raw register `regnum` (gdb's numbering, little-endian bytes).
    fn register(&mut self, regnum: u32) -> Option<Vec<u8>>;
    /// `len` bytes of memory at `addr`.
    fn memory(&mut self, addr: u64, len: usize) -> Option<Vec<u8>>;
}

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// An opcode this evaluator does not run.
    Unsupported(u8),
    /// An opcode no gdb emits.
    BadOpcode(u8),
    /// The code ends inside an instruction or jumps outside it.
    OutOfCode,
    /// Pop from an empty stack.
    StackUnderflow,
    /// Push past [`STACK_LIMIT`].
    StackOverflow,
    /// More than [`STEP_LIMIT`] instructions.
    TooLong,
    /// Division or remainder by zero.
    DivideByZero,
    /// A register that cannot be read.
    Register(u32),
    /// Memory that cannot be read.
    Memory(u64),
    /// The code ended without `end`.
    NoEnd,
    /// A `printf` format the agent does not print (as gdbserver's
    /// `ax_printf`: only `%s` and the integer conversions).
    Format(String),
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Unsupported(op) => write!(f, "agent opcode {op:#04x} is not supported"),
            AgentError::BadOpcode(op) => write!(f, "invalid agent opcode {op:#04x}"),
            AgentError::OutOfCode => write!(f, "agent expression runs outside its code"),
            AgentError::StackUnderflow => write!(f, "agent expression stack underflow"),
            AgentError::StackOverflow => write!(f, "agent expression stack overflow"),
            AgentError::TooLong => write!(f, "agent expression ran too long"),
            AgentError::DivideByZero => write!(f, "agent expression divides by zero"),
            AgentError::Register(r) => write!(f, "agent expression: register {r} unreadable"),
            AgentError::Memory(a) => write!(f, "agent expression: memory at {a:#x} unreadable"),
            AgentError::NoEnd => write!(f, "agent expression has no end"),
            AgentError::Format(why) => write!(f, "agent printf: {why}"),
        }
    }
}

struct Machine<'a> {
    code: &'a [u8],
    pc: usize,
    stack: Vec<u64>,
}

impl Machine<'_> {
    fn pop(&mut self) -> Result<u64, AgentError> {
        self.stack.pop().ok_or(AgentError::StackUnderflow)
    }
    fn push(&mut self, v: u64) -> Result<(), AgentError> {
        if self.stack.len() >= STACK_LIMIT {
            return Err(AgentError::StackOverflow);
        }
        self.stack.push(v);
        Ok(())
    }
    /// `n` big-endian operand bytes.
    fn operand(&mut self, n: usize) -> Result<u64, AgentError> {
        let b = self
            .code
            .get(self.pc..self.pc + n)
            .ok_or(AgentError::OutOfCode)?;
        self.pc += n;
        Ok(b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
    }
    fn binary(
        &mut self,
        f: impl Fn(u64, u64) -> Result<u64, AgentError>,
    ) -> Result<(), AgentError> {
        let b = self.pop()?;
        let a = self.pop()?;
        let v = f(a, b)?;
        self.push(v)
    }
    fn top(&mut self) -> Result<&mut u64, AgentError> {
        self.stack.last_mut().ok_or(AgentError::StackUnderflow)
    }
}

fn sign_extend(v: u64, bits: u64) -> u64 {
    if bits == 0 || bits >= 64 {
        return v;
    }
    let shift = 64 - bits;
    (((v << shift) as i64) >> shift) as u64
}

fn zero_extend(v: u64, bits: u64) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .rev()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

/// Run `code`; the value on top of the stack at `end`.
pub fn eval(code: &[u8], ctx: &mut dyn AgentContext) -> Result<u64, AgentError> {
    run(code, ctx, None)
}

/// Run a breakpoint command (`Z0…;cmds:P,X len,bytes`, gdb's agent-style
/// `dprintf`): as [`eval`], and `printf` appends its text to `out` (at
/// most [`printf::OUTPUT_LIMIT`] bytes a call). The stack may be empty at
/// `end`: a command has no value.
pub fn run_command(
    code: &[u8],
    ctx: &mut dyn AgentContext,
    out: &mut String,
) -> Result<(), AgentError> {
    run(code, ctx, Some(out)).map(|_| ())
}

fn run(
    code: &[u8],
    ctx: &mut dyn AgentContext,
    mut out: Option<&mut String>,
) -> Result<u64, AgentError> {
    if code.len() > CODE_LIMIT {
        return Err(AgentError::OutOfCode);
    }
    let mut m = Machine {
        code,
        pc: 0,
        stack: Vec::with_capacity(16),
    };
    for _ in 0..STEP_LIMIT {
        let op = *code.get(m.pc).ok_or(AgentError::NoEnd)?;
        m.pc += 1;
        match op {
            0x02 => m.binary(|a, b| Ok(a.wrapping_add(b)))?,
            0x03 => m.binary(|a, b| Ok(a.wrapping_sub(b)))?,
            0x04 => m.binary(|a, b| Ok(a.wrapping_mul(b)))?,
            0x05 => m.binary(|a, b| {
                if b == 0 {
                    return Err(AgentError::DivideByZero);
                }
                Ok((a as i64).wrapping_div(b as i64) as u64)
            })?,
            0x06 => m.binary(|a, b| a.checked_div(b).ok_or(AgentError::DivideByZero))?,
            0x07 => m.binary(|a, b| {
                if b == 0 {
                    return Err(AgentError::DivideByZero);
                }
                Ok((a as i64).wrapping_rem(b as i64) as u64)
            })?,
            0x08 => m.binary(|a, b| a.checked_rem(b).ok_or(AgentError::DivideByZero))?,
            0x09 => m.binary(|a, b| Ok(if b >= 64 { 0 } else { a << b }))?,
            0x0a => m.binary(|a, b| Ok(((a as i64) >> b.min(63)) as u64))?,
            0x0b => m.binary(|a, b| Ok(if b >= 64 { 0 } else { a >> b }))?,
            // trace: pops address and size; nothing is collected.
            0x0c => {
                m.pop()?;
                m.pop()?;
            }
            // trace_quick n: the address stays.
            0x0d => {
                m.operand(1)?;
                m.top()?;
            }
            0x0e => {
                let t = m.top()?;
                *t = u64::from(*t == 0);
            }
            0x0f => m.binary(|a, b| Ok(a & b))?,
            0x10 => m.binary(|a, b| Ok(a | b))?,
            0x11 => m.binary(|a, b| Ok(a ^ b))?,
            0x12 => {
                let t = m.top()?;
                *t = !*t;
            }
            0x13 => m.binary(|a, b| Ok(u64::from(a == b)))?,
            0x14 => m.binary(|a, b| Ok(u64::from((a as i64) < (b as i64))))?,
            0x15 => m.binary(|a, b| Ok(u64::from(a < b)))?,
            // ext n: sign-extend from n bits.
            0x16 => {
                let n = m.operand(1)?;
                let t = m.top()?;
                *t = sign_extend(*t, n);
            }
            // ref8/16/32/64.
            0x17..=0x1a => {
                let len = 1usize << (op - 0x17);
                let addr = m.pop()?;
                let b = ctx.memory(addr, len).ok_or(AgentError::Memory(addr))?;
                if b.len() < len {
                    return Err(AgentError::Memory(addr));
                }
                m.push(le(&b))?;
            }
            // if_goto / goto: 16-bit absolute offsets.
            0x20 => {
                let to = m.operand(2)? as usize;
                if m.pop()? != 0 {
                    m.pc = to;
                }
            }
            0x21 => m.pc = m.operand(2)? as usize,
            0x22 => {
                let v = m.operand(1)?;
                m.push(v)?;
            }
            0x23 => {
                let v = m.operand(2)?;
                m.push(v)?;
            }
            0x24 => {
                let v = m.operand(4)?;
                m.push(v)?;
            }
            0x25 => {
                let v = m.operand(8)?;
                m.push(v)?;
            }
            0x26 => {
                let r = m.operand(2)? as u32;
                let b = ctx.register(r).ok_or(AgentError::Register(r))?;
                m.push(le(&b))?;
            }
            0x27 if out.is_some() => return Ok(m.stack.pop().unwrap_or(0)),
            0x27 => return m.pop(),
            0x28 => {
                let t = *m.top()?;
                m.push(t)?;
            }
            0x29 => {
                m.pop()?;
            }
            0x2a => {
                let n = m.operand(1)?;
                let t = m.top()?;
                *t = zero_extend(*t, n);
            }
            0x2b => {
                let b = m.pop()?;
                let a = m.pop()?;
                m.push(b)?;
                m.push(a)?;
            }
            // tracev n: nothing collected.
            0x2e => {
                m.operand(2)?;
            }
            // tracenz: pops address and size.
            0x2f => {
                m.pop()?;
                m.pop()?;
            }
            // trace16 n: the address stays.
            0x30 => {
                m.operand(2)?;
                m.top()?;
            }
            // pick n: copy the n-th value below the top.
            0x32 => {
                let n = m.operand(1)? as usize;
                let len = m.stack.len();
                let v = *m
                    .stack
                    .get(len.checked_sub(n + 1).ok_or(AgentError::StackUnderflow)?)
                    .ok_or(AgentError::StackUnderflow)?;
                m.push(v)?;
            }
            // rot: a b c -> c a b (top three rotated).
            0x33 => {
                let c = m.pop()?;
                let b = m.pop()?;
                let a = m.pop()?;
                m.push(c)?;
                m.push(a)?;
                m.push(b)?;
            }
            // printf NARGS LEN:2 FORMAT\0 (commands only): pops the
            // function and the channel (gdb pushes both; unused, as in
            // gdbserver), then NARGS arguments, the first on top.
            0x34 if out.is_some() => {
                let nargs = m.operand(1)? as usize;
                let slen = m.operand(2)? as usize;
                let format = code.get(m.pc..m.pc + slen).ok_or(AgentError::OutOfCode)?;
                m.pc += slen;
                m.pop()?;
                m.pop()?;
                let mut args = Vec::with_capacity(nargs);
                for _ in 0..nargs {
                    args.push(m.pop()?);
                }
                if let Some(out) = out.as_deref_mut() {
                    printf::format(format, &args, ctx, out)?;
                }
            }
            // float, ref_float/double/long_double, l_to_d, d_to_l, getv,
            // setv, printf (in a condition).
            0x01 | 0x1b..=0x1f | 0x2c | 0x2d | 0x34 => return Err(AgentError::Unsupported(op)),
            op => return Err(AgentError::BadOpcode(op)),
        }
        if m.pc > code.len() {
            return Err(AgentError::OutOfCode);
        }
    }
    Err(AgentError::TooLong)
}

/// Decode the `;X len,hex` conditions of a `Z0` packet's tail (after the
/// first `;`): each is one bytecode. `None` when malformed.
pub fn parse_conditions(tail: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for part in tail.split(|b| *b == b';').filter(|p| !p.is_empty()) {
        let body = part.strip_prefix(b"X")?;
        let comma = body.iter().position(|b| *b == b',')?;
        let len = usize::from_str_radix(std::str::from_utf8(body.get(..comma)?).ok()?, 16).ok()?;
        let hex = body.get(comma + 1..)?;
        if len > CODE_LIMIT || hex.len() != len * 2 {
            return None;
        }
        let bytes: Option<Vec<u8>> = hex
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
            .collect();
        out.push(bytes?);
    }
    Some(out)
}

/// Decode the commands of a `Z0` packet (after `cmds:`): `P,` (the
/// persist flag, ignored) then `X len,hex` bytecodes one after another.
/// `None` when malformed.
pub fn parse_commands(part: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut rest = match part {
        [b'0' | b'1', b',', rest @ ..] => rest,
        _ => return None,
    };
    let mut out = Vec::new();
    while !rest.is_empty() {
        let body = rest.strip_prefix(b"X")?;
        let comma = body.iter().position(|b| *b == b',')?;
        let len = usize::from_str_radix(std::str::from_utf8(body.get(..comma)?).ok()?, 16).ok()?;
        if len > CODE_LIMIT {
            return None;
        }
        let hex = body.get(comma + 1..comma + 1 + len * 2)?;
        let bytes: Option<Vec<u8>> = hex
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
            .collect();
        out.push(bytes?);
        rest = body.get(comma + 1 + len * 2..)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx;
    impl AgentContext for Ctx {
        fn register(&mut self, regnum: u32) -> Option<Vec<u8>> {
            (regnum < 8).then(|| (u64::from(regnum) * 0x100).to_le_bytes().to_vec())
        }
        fn memory(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
            (addr == 0x1000).then(|| vec![0xe8, 0x03, 0, 0, 0, 0, 0, 0][..len].to_vec())
        }
    }

    #[test]
    fn a_gdb_condition_x_eq_1000() {
        // reg 6 (rbp), const8 0x14 ... : *(int *)(rbp - 0x14) == 1000,
        // here with a constant address: const16 0x1000 ref32 ext 32
        // const16 1000 equal end.
        let code = [
            0x23, 0x10, 0x00, 0x19, 0x16, 0x20, 0x23, 0x03, 0xe8, 0x13, 0x27,
        ];
        assert_eq!(eval(&code, &mut Ctx), Ok(1));
        let code = [0x23, 0x10, 0x00, 0x19, 0x16, 0x20, 0x22, 0x07, 0x13, 0x27];
        assert_eq!(eval(&code, &mut Ctx), Ok(0));
        assert_eq!(eval(&[0x26, 0x00, 0x06, 0x27], &mut Ctx), Ok(0x600));
    }

    #[test]
    fn errors_not_panics() {
        assert_eq!(eval(&[], &mut Ctx), Err(AgentError::NoEnd));
        assert_eq!(
            eval(&[0x02, 0x27], &mut Ctx),
            Err(AgentError::StackUnderflow)
        );
        assert_eq!(
            eval(&[0x21, 0x00, 0x00], &mut Ctx),
            Err(AgentError::TooLong)
        );
        assert_eq!(eval(&[0x25, 0x01], &mut Ctx), Err(AgentError::OutOfCode));
        assert_eq!(
            eval(&[0x22, 1, 0x22, 0, 0x05, 0x27], &mut Ctx),
            Err(AgentError::DivideByZero)
        );
        let mut push_forever = vec![0x22, 1, 0x21, 0x00, 0x00];
        push_forever.push(0x27);
        assert_eq!(
            eval(&push_forever, &mut Ctx),
            Err(AgentError::StackOverflow)
        );
        assert_eq!(eval(&[0x34], &mut Ctx), Err(AgentError::Unsupported(0x34)));
        // The same printf runs as a command: gdb's `dprintf foo,"x=%d\n", 7`.
        let mut code = vec![0x22, 7, 0x22, 0, 0x22, 0, 0x34, 1, 0, 6];
        code.extend_from_slice(b"x=%d\\n\0");
        code[9] = 7;
        code.push(0x27);
        let mut out = String::new();
        assert_eq!(run_command(&code, &mut Ctx, &mut out), Ok(()));
        assert_eq!(out, "x=7\n");
        assert_eq!(parse_commands(b"0,X1,27"), Some(vec![vec![0x27]]));
        assert_eq!(parse_commands(b"X1,27"), None);
        assert_eq!(eval(&[0xff], &mut Ctx), Err(AgentError::BadOpcode(0xff)));
    }

    #[test]
    fn conditions_parse() {
        assert_eq!(
            parse_conditions(b"X3,220127;X2,2227"),
            Some(vec![vec![0x22, 0x01, 0x27], vec![0x22, 0x27]])
        );
        assert_eq!(parse_conditions(b"X3,2201"), None);
        assert_eq!(parse_conditions(b"cmds:0,X1,27"), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Any bytes: a value or an error, never a panic or a hang.
        #[test]
        fn any_code_terminates(code in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = eval(&code, &mut Ctx);
        }

        /// Programs of valid opcodes with in-range jumps.
        #[test]
        fn opcode_soup_terminates(ops in proptest::collection::vec(0x02u8..=0x33, 0..48), arg in 0u8..48) {
            let mut code = Vec::new();
            for op in ops {
                code.push(op);
                code.extend_from_slice(&[0, arg, arg, arg, arg, arg, arg, arg]);
            }
            code.push(0x27);
            let _ = eval(&code, &mut Ctx);
        }

        #[test]
        fn any_tail_parses_or_not(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = parse_conditions(&tail);
        }
    }
}
