//! Host I/O: `vFile:*` (the operations themselves: `crate::hostio`; off
//! the loop: `crate::hostio::offload`).

use crate::hostio::offload::Handle;
use crate::session::Session;
use crate::session::SessionControl;
use crate::session::SessionRole;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_vfile(&mut self, args: &[u8]) {
        let Some(pool) = self.hostio_offload.clone() else {
            // No pool (a session outside a server): run it here.
            let r = self
                .hostio
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .handle(args);
            self.send(&r);
            return;
        };
        // What cannot wait on a file system is answered here, without the
        // two thread wake-ups of a worker (`HostIo::handle_inline`). The
        // lock is free: the session holds its input while a request is out.
        if pool.inline_allowed() {
            let inline = match self.hostio.try_lock() {
                Ok(mut io) => io.handle_inline(args),
                Err(_) => None,
            };
            if let Some(r) = inline {
                self.send(&r);
                return;
            }
        }
        self.vfile_seq += 1;
        let seq = self.vfile_seq;
        match pool.submit(self.id, seq, self.hostio.clone(), args.to_vec()) {
            Ok(()) => self.vfile_pending = Some(seq),
            Err(_) => {
                tracing::warn!(target: "session", session = self.id, "vFile pool full: answered EBUSY");
                self.send(b"F-1,10");
            }
        }
    }

    /// Runs vFile operations on `pool`'s workers from now on.
    pub fn set_hostio_offload(&mut self, pool: Handle) {
        self.hostio_offload = Some(pool);
    }

    /// The reply of vFile request `seq` is ready: send it and go on with
    /// the held input. A reply for a request the session no longer waits
    /// for (the connection was reset meanwhile) is dropped.
    pub fn on_vfile_done(&mut self, seq: u64, reply: &[u8]) -> SessionControl {
        if self.vfile_pending != Some(seq) {
            tracing::debug!(target: "session", session = self.id, seq, "stale vFile reply dropped");
            return self.control;
        }
        self.vfile_pending = None;
        self.send(reply);
        // The client's input waited meanwhile (`Session::input_hold`).
        self.release_held_input()
    }
}
