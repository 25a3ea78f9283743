//! Adaptive busy-poll window for the event loop.
//!
//! A debugger talks to its stub in bursts: on every stop lldb sends a
//! dozen or more packets back to back, each waiting for the previous
//! reply. Between two packets of a burst the loop would block in
//! `epoll_wait`, and the client's next packet then has to wake it. When
//! the client and the stub run on different CPUs that wake-up is the
//! largest part of a round trip; on a VM whose idle vCPUs halt at once
//! (cpuidle `haltpoll` with `guest_halt_poll_ns=0`) it measured ~50 µs of
//! an ~80 µs `qC` round trip (docs/decisions.md §7).
//!
//! So after the loop has handled events and every target is stopped (the
//! next event can only come from a client) it keeps polling the SAME
//! mio `Poll` with a zero timeout for a short window before it blocks:
//! it still waits on readiness (every fd, not only the client's), it just
//! does not put the thread to sleep for the first few microseconds. The
//! window adapts like the kernel's cpuidle-haltpoll governor:
//! - a poll that finds an event inside the window keeps it (and grows it
//!   back towards the maximum);
//! - a window that expires with nothing halves it, down to off, so a
//!   client that thinks for a while (a person typing, gdb loading
//!   symbols) costs at most a few halving windows of CPU;
//! - a blocking wait that ended quickly (shorter than the maximum) turns
//!   it back on: the client is in a burst again.
//!
//! It is off when the machine has one CPU online (spinning there would
//! only delay the client) and when the configured maximum is zero
//! (`--busy-poll-us 0`).
//!
//! The type is pure (times are passed in) so the policy is unit-tested
//! without clocks.

use std::time::{Duration, Instant};

/// Windows shorter than this are not worth a spin (a zero-timeout
/// `epoll_wait` costs about a microsecond here).
const MIN_WINDOW: Duration = Duration::from_micros(2);

/// The most a spin lasts after client input that set a stopped target running
/// (a resume, see [`BusyPoll::after_resume`]), whatever the window: a
/// single step or a continue to a breakpoint a few instructions on stops
/// within this, and a program that runs on needs the CPU.
pub const RESUME_SPIN: Duration = Duration::from_micros(50);

/// Default most time spent polling after client input (`--busy-poll-us`).
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(50);

/// The adaptive window (see the module docs).
#[derive(Debug, Clone)]
pub struct BusyPoll {
    max: Duration,
    window: Duration,
    /// End of the current spin, when one is running.
    until: Option<Instant>,
    /// When the loop last went to block (to measure the gap on wake-up).
    blocked_at: Option<Instant>,
}

impl BusyPoll {
    /// A policy with at most `max` per spin; `Duration::ZERO` disables it.
    pub fn new(max: Duration) -> Self {
        BusyPoll {
            max,
            window: max,
            until: None,
            blocked_at: None,
        }
    }

    /// `max`, or zero when this machine has one CPU online (the client
    /// can then only run when we block).
    pub fn for_this_machine(max: Duration) -> Self {
        let cpus = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
            .ok()
            .flatten()
            .unwrap_or(1);
        Self::new(if cpus > 1 { max } else { Duration::ZERO })
    }

    /// Current window (for logs and tests).
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Whether busy polling is on (`--busy-poll-us` above zero). Off, the
    /// loop reads no clock for it: [`BusyPoll::timeout_now`] is `None`
    /// and [`BusyPoll::after_events`] need not be called (it would change
    /// nothing).
    pub fn enabled(&self) -> bool {
        !self.max.is_zero()
    }

    /// [`BusyPoll::timeout`] at the current time; `None` without reading
    /// the clock when busy polling is off.
    pub fn timeout_now(&mut self) -> Option<Duration> {
        if self.enabled() {
            self.timeout(Instant::now())
        } else {
            None
        }
    }

    /// The timeout for the next poll: zero while a spin runs, else block.
    /// Records when a blocking wait starts.
    pub fn timeout(&mut self, now: Instant) -> Option<Duration> {
        match self.until {
            Some(t) if now < t => Some(Duration::ZERO),
            Some(_) => {
                // The spin ran out with nothing to do: shorten the next.
                self.until = None;
                self.window /= 2;
                if self.window < MIN_WINDOW {
                    self.window = Duration::ZERO;
                }
                self.blocked_at = Some(now);
                None
            }
            None => {
                self.blocked_at = Some(now);
                None
            }
        }
    }

    /// The loop handled the events of a poll; `may_spin` says whether the
    /// next event is expected from a client (every target stopped), the
    /// only case worth a spin. (An empty zero-timeout poll is not an
    /// event: the loop just polls again.)
    pub fn after_events(&mut self, now: Instant, may_spin: bool) {
        if let Some(t0) = self.blocked_at.take() {
            // Woke from a blocking wait: a short gap means a burst.
            if now.duration_since(t0) < self.max {
                self.window = self.max;
            }
        } else if self.until.is_some() {
            // Found work while spinning: the window pays; grow it back.
            self.window = (self.window * 2).min(self.max);
        }
        self.until = if may_spin && self.window >= MIN_WINDOW {
            Some(now + self.window)
        } else {
            None
        };
    }

    /// The loop handled client input that set a stopped target running (a
    /// resume): spin as [`Self::after_events`] would, but for at most
    /// [`RESUME_SPIN`]. The stop of a single step then arrives during the
    /// spin, and its SIGCHLD is taken without the wake-up from a blocking
    /// wait.
    pub fn after_resume(&mut self, now: Instant) {
        self.after_events(now, true);
        if let Some(until) = self.until {
            self.until = Some(until.min(now + RESUME_SPIN));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn disabled_never_spins() {
        let t = Instant::now();
        let mut b = BusyPoll::new(Duration::ZERO);
        assert_eq!(b.timeout(t), None);
        b.after_events(t + us(1), true);
        assert_eq!(b.timeout(t + us(2)), None);
        assert!(!b.enabled());
        assert_eq!(b.timeout_now(), None);
        assert!(BusyPoll::new(us(50)).enabled());
    }

    #[test]
    fn spins_after_client_input_until_the_window_ends() {
        let t = Instant::now();
        let mut b = BusyPoll::new(us(50));
        assert_eq!(b.timeout(t), None);
        b.after_events(t + us(10), true);
        assert_eq!(b.timeout(t + us(11)), Some(Duration::ZERO));
        assert_eq!(b.timeout(t + us(59)), Some(Duration::ZERO));
        // Window over: block, and the next window is halved.
        assert_eq!(b.timeout(t + us(61)), None);
        assert_eq!(b.window(), us(25));
    }

    #[test]
    fn a_resume_spins_briefly_whatever_the_window() {
        let t = Instant::now();
        let mut b = BusyPoll::new(Duration::from_secs(10));
        b.timeout(t);
        b.after_resume(t + us(1));
        assert_eq!(b.timeout(t + us(2)), Some(Duration::ZERO));
        assert_eq!(
            b.timeout(t + us(1) + RESUME_SPIN - us(1)),
            Some(Duration::ZERO)
        );
        assert_eq!(b.timeout(t + us(1) + RESUME_SPIN + us(1)), None);
        // Turned off, a resume does not spin either.
        let mut off = BusyPoll::new(Duration::ZERO);
        off.after_resume(t);
        assert_eq!(off.timeout(t + us(1)), None);
    }

    #[test]
    fn no_spin_while_a_target_runs() {
        let t = Instant::now();
        let mut b = BusyPoll::new(us(50));
        b.timeout(t);
        b.after_events(t + us(1), false);
        assert_eq!(b.timeout(t + us(2)), None);
    }

    #[test]
    fn idle_clients_turn_it_off_and_a_burst_turns_it_on() {
        let mut t = Instant::now();
        let mut b = BusyPoll::new(us(64));
        b.timeout(t);
        // A slow client: every spin expires, the window halves to off.
        for _ in 0..8 {
            t += us(1000);
            b.after_events(t, true);
            while b.timeout(t).is_some() {
                t += us(1);
            }
        }
        assert_eq!(b.window(), Duration::ZERO);
        // Off: client input no longer spins, even after a long wait.
        t += us(1000);
        b.after_events(t, true);
        assert_eq!(b.timeout(t), None);
        // A quick request after blocking: a burst, back on at full width.
        t += us(5);
        b.after_events(t, true);
        assert_eq!(b.window(), us(64));
        assert_eq!(b.timeout(t + us(1)), Some(Duration::ZERO));
    }

    #[test]
    fn work_found_while_spinning_grows_the_window_back() {
        let t = Instant::now();
        let mut b = BusyPoll::new(us(40));
        b.timeout(t);
        b.after_events(t, true);
        // Expire once: 20 µs.
        assert_eq!(b.timeout(t + us(41)), None);
        assert_eq!(b.window(), us(20));
        // Long blocking gap: stays at 20.
        b.after_events(t + us(500), true);
        assert_eq!(b.window(), us(20));
        // Next request found while spinning: doubles (capped).
        assert_eq!(b.timeout(t + us(505)), Some(Duration::ZERO));
        b.after_events(t + us(506), true);
        assert_eq!(b.window(), us(40));
        assert_eq!(b.timeout(t + us(507)), Some(Duration::ZERO));
        b.after_events(t + us(508), true);
        assert_eq!(b.window(), us(40));
    }
}
