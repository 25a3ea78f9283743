//! Simulated amd-dbgapi library (filled by the gpu-target issue).
