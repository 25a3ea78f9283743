//! Host I/O: `vFile:*` (the operations themselves: `crate::hostio`).

use crate::session::Session;

impl Session {
    pub(in crate::session) fn handle_vfile(&mut self, args: &[u8]) {
        let r = self.hostio.handle(args);
        self.send(&r);
    }
}
