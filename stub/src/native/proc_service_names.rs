// The proc_service functions libthread_db.so.1 (glibc 2.36) imports from
// its client. One list for two readers: `stub/build.rs` exports these names
// into the executable's dynamic symbol table, and `native::thread_db` checks
// them there (`include!`d by both).
[
    "ps_pdread",
    "ps_pdwrite",
    "ps_lgetregs",
    "ps_lsetregs",
    "ps_lgetfpregs",
    "ps_lsetfpregs",
    "ps_pglobal_lookup",
    "ps_getpid",
    "ps_get_thread_area",
    "ps_ptread",
]
